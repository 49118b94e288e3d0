// Made by attnviz/jsgen.py from attnviz/schemas/trace_meta.py (`make bundle` writes it); do not edit:
// tests/test_web.py fails while it differs from what the Python declares.
// Types only: nothing here runs.

/**
 * What every trace's meta holds, toy or text.
 * @typedef {object} MetaCommon
 * @property {string[]} tokens
 * @property {string[]} axes
 * @property {number} n
 * @property {number} d
 * @property {number} layers
 * @property {number} heads
 * @property {number} head_dim
 * @property {string} device
 */

/**
 * A toy trace's: the table's configuration.
 * @typedef {object} ToyMeta
 * @property {"toy"} [mode]
 * @property {import("../types.js").ToyConfig} config
 */

/**
 * A pretrained model's trace of a text.
 * @typedef {object} TextMeta
 * @property {"text"} [mode]
 * @property {string} model
 * @property {string} family
 * @property {boolean} causal
 * @property {string} text
 * @property {number[]} token_ids
 * @property {([number, number])[]} offsets [n] (start, end) character offsets into text; (0, 0) for special tokens
 * @property {boolean[]} special [n] true for tokens the tokenizer added ([CLS])
 * @property {(number | null)[]} words [n] word index of each token (the pieces of a word share it); null for special tokens and tokens the model wrote
 * @property {number} kv_heads Key/value heads (fewer than heads: grouped-query)
 * @property {Rope | null} rope The rotation q and k are shown after, if any
 * @property {AttentionRule | null} [attention] How scores and weights are made from q and k, layer by layer
 * @property {Generated | null} generated With generate: where the tokens the model wrote start, and how it wrote
 * @property {"native" | "transformers" | "ndif"} [backend] What ran the model: attnviz's engine, transformers or NDIF (ModelInfo)
 * @property {Ablated[]} [ablated] The heads knocked out (the request's ablate): every array is of this run
 * @property {Record<string, string>} [unavailable] Arrays this model's traces lack, each with why (null in the whole trace; asked for by name, a 422 that says so): a model served through transformers whose attention does not go through its AttentionInterface records no scores, queries, keys or values
 * @property {ImageBlock[] | null} [images] With images: each image's tokens and grids
 * @property {VisionMeta | null} [vision] With images: the vision tower's layers, heads and patch grids
 * @property {Mrope | null} [mrope] A model with multimodal rotary: each position's three indices
 */

/**
 * What a part (any answer but the whole JSON trace) says of itself.
 * @typedef {object} PartMeta
 * @property {string[]} fields The arrays sent
 * @property {number | null} layer The layer the per-head arrays hold (null: all)
 * @property {number | null} head
 * @property {number | null} query
 * @property {TokenViewMeta | null} [token_view]
 * @property {Record<string, string> | null} [rules] Each derived array's rule
 * @property {"weights" | "value_weighted"} measure
 * @property {number | null} [json_numbers] The compact form: how many numbers the full JSON trace holds
 */

/**
 * What the token options did: the rows and columns shown.
 * @typedef {object} TokenViewMeta
 * @property {boolean} hide_special
 * @property {boolean} merge_words
 * @property {string[]} labels The rows and columns shown
 * @property {number[][]} groups The original tokens of each row
 * @property {string} note What the options did, in words
 */

/**
 * @typedef {object} Ablated
 * @property {number} layer 0-based
 * @property {number} head 0-based
 * @property {"zero" | "mean" | "patch"} mode
 * @property {string | null} source patch: the text whose head output was copied in
 * @property {number} patched Positions whose output was replaced, from the first: the text's tokens, or for a patch the fewer of the text's and the source's (the rest keep their own)
 */

/**
 * @typedef {object} Rope
 * @property {number} base
 * @property {"pairs" | "halves"} style
 * @property {string | null} [scaling] How the frequencies stretch past the trained context (rope_type)
 * @property {number | null} [rotary_dim] Only the first rotary_dim coordinates of each head turn (all: null)
 * @property {number | null} [local_base] The base of the sliding-window layers, which rotate unscaled
 * @property {number[] | null} [sections] Multimodal rotary (M-RoPE): how many rotary pairs each position index turns (temporal, height, width; meta.mrope gives each token's three)
 */

/**
 * How each layer turns q and k into scores and scores into weights: what the query-key view needs to explain a weight from q and k.
 * @typedef {object} AttentionRule
 * @property {number} scale score = (q · k) x scale, before any soft-cap
 * @property {number | null} divide_by When the model divides instead (by sqrt(head_dim)): score = (q · k) / this
 * @property {string} scale_label The scaling in words, e.g. "÷ √64"
 * @property {number | null} softcap weight = softmax(c · tanh(score / c)) with c this (Gemma 2); else softmax
 * @property {(number | null)[]} windows [layers] a query sees only the keys fewer than this many positions away (itself included): in a causal model the last this many, in a bidirectional one (ModernBERT's local layers) this many less one on each side; null: every key before it (or every key, in an encoder)
 * @property {(string | null)[]} [window_notes] [layers] what the layer's window lets a query see, in words (the page's note); null where the layer has no window
 * @property {string | null} [windows_unread] Why the layers' windows were not read (a model served through NDIF whose masks could not be computed here without its weights), in words: windows is then all null, not known rather than no window; null when windows says them
 * @property {"none" | "head" | "proj"} qk_norm q and k are shown after an RMSNorm of each head's vector (head) or of the whole projection (proj), before RoPE
 */

/**
 * @typedef {object} Generated
 * @property {number} start Index of the first token the model wrote
 * @property {number} steps Tokens it wrote
 * @property {number} asked Tokens asked for
 * @property {boolean} stopped It wrote its end-of-text token (the last) and stopped
 * @property {number} temperature
 * @property {number} seed
 * @property {string} text What it wrote, decoded as its tokens are labelled: a byte that is part of no whole character as "<0x90>", never "�"
 */

/**
 * One image of a trace: its tokens' span, its grid (the global view's, or the only tile's), the picture as decoded, its tiles, and what the processor did to it.
 * @typedef {object} ImageBlock
 * @property {number} image
 * @property {number} start
 * @property {number} stop
 * @property {number} rows
 * @property {number} cols
 * @property {number} height The picture's height as decoded (pixels)
 * @property {number} width The picture's width as decoded (pixels)
 * @property {ImageTile[]} tiles
 * @property {string} type png, jpeg or webp, read from its bytes
 * @property {number} original_width
 * @property {number} original_height
 * @property {string} description The picture in words (its type and size)
 * @property {ImageResize | null} [resize]
 * @property {string | null} [resized] resize in one line
 */

/**
 * A tile's token grid: cell (row, col) is position start + row x cols + col.
 * @typedef {object} ImageTile
 * @property {number} start
 * @property {number} rows
 * @property {number} cols
 * @property {number[]} box [top, left, bottom, right] in the picture's pixels
 * @property {number} merge Patches per token along a side
 * @property {string} label
 */

/**
 * How the processor resized a picture: from the original's size to ``to`` (before a crop or a split), the crop kept (in ``to``'s pixels), each view's pixels, the split tiles (0: none), a global view besides them, one view's patches and its tokens after merging.
 * @typedef {object} ImageResize
 * @property {Size} from
 * @property {Size} to
 * @property {Crop | null} crop
 * @property {Size} view
 * @property {number} tiles
 * @property {boolean} global
 * @property {number} patches
 * @property {number} tokens
 */

/**
 * @typedef {object} Size
 * @property {number} width
 * @property {number} height
 */

/**
 * @typedef {object} Crop
 * @property {number} top
 * @property {number} left
 * @property {number} bottom
 * @property {number} right
 */

/**
 * The vision tower's attention (the field ``vision``): its layers, heads, and each tile's patch grid (rows x cols patches; the class token, if any, dropped).
 * @typedef {object} VisionMeta
 * @property {number} layers
 * @property {number} heads
 * @property {VisionTile[]} tiles
 * @property {string} note
 */

/**
 * @typedef {object} VisionTile
 * @property {number} image
 * @property {number} tile
 * @property {number} rows
 * @property {number} cols
 * @property {boolean} class_token
 */

/**
 * Multimodal rotary: the pairs of each section (temporal, height, width) and each position's three indices.
 * @typedef {object} Mrope
 * @property {number[]} sections
 * @property {number[][]} positions
 * @property {boolean} [interleaved]
 */

/**
 * projection: the trajectories' PCA.
 * @typedef {object} ProjectionMeta
 * @property {number} components Principal components kept
 */

/**
 * thumbs: how the heads' patterns were pooled.
 * @typedef {object} ThumbsMeta
 * @property {number} pool Rows and columns max-pooled into one cell (1: none)
 * @property {number} size The thumbnails' side in cells
 * @property {number[]} layers The layers held, in order
 */

/**
 * top_k: the window of positions and each token id's label.
 * @typedef {object} TopKMeta
 * @property {number} k
 * @property {"next" | "masked"} predicts next: the token after; masked: the token there
 * @property {number} start The first position of the window
 * @property {Record<string, string>} vocab Each token id sent, its label
 */

/**
 * lens: the window of positions, the rows (hidden states) and each token id's label.
 * @typedef {object} LensMeta
 * @property {number} rows Hidden states read: layers + 1
 * @property {"next" | "masked"} predicts
 * @property {number} start The first position of the window
 * @property {Record<string, string>} vocab Each token id sent, its label
 */

/**
 * One part of the residual stream an attribution splits by.
 * @typedef {object} Component
 * @property {string} name embed, pos, type, L{l}.H{h}, L{l}.attn_bias, L{l}.mlp, bias, or rest (the smaller ones summed)
 * @property {string} kind
 * @property {number | null} layer
 * @property {number | null} head
 */

/**
 * qk_attribution: the score split, and its components.
 * @typedef {object} QkAttributionMeta
 * @property {number} layer
 * @property {number} head
 * @property {number} query
 * @property {number} key
 * @property {Component[]} components
 * @property {number} score The score the matrix sums to
 */

/**
 * logit_attribution: the logit split, and its components.
 * @typedef {object} LogitAttributionMeta
 * @property {number} position
 * @property {number} token
 * @property {number | null} versus
 * @property {Component[]} components
 * @property {number} logit The logit (or the difference) the values sum to
 */

export {};
