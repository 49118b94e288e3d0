// Types shared by the modules, for `tsc --checkJs` (JSDoc only; nothing here runs).

/**
 * @typedef {"F64" | "F32" | "I32" | "U8"} DType
 * @typedef {{dtype: DType, shape: number[], data: Float64Array | Float32Array | Int32Array | Uint8Array}} NDArray
 */

/**
 * A trace's meta as the server declares it (generated/meta.js, made from
 * attnviz/schemas/trace_meta.py, the model every answer's meta is checked against in the tests).
 * @typedef {import("./generated/meta.js").MetaCommon} MetaCommon
 * @typedef {import("./generated/meta.js").ToyMeta} ToyMeta
 * @typedef {import("./generated/meta.js").TextMeta} TextMeta
 * @typedef {import("./generated/meta.js").PartMeta} PartMeta
 * @typedef {import("./generated/meta.js").TokenViewMeta} TokenViewMeta
 * @typedef {import("./generated/meta.js").Ablated} Ablated
 * @typedef {import("./generated/meta.js").ImageTile} ImageTile
 * @typedef {import("./generated/meta.js").ImageResize} ImageResize
 * @typedef {import("./generated/meta.js").Size} Size
 * @typedef {import("./generated/meta.js").VisionMeta} VisionMeta
 */

/**
 * The fields of a trace other than its arrays (the compact form's header, or the JSON trace
 * without the arrays): what every trace holds, a toy's, a text's and a part's own keys where
 * the answer is one, and what the fields with numbers beside their arrays say (FieldMeta).
 * @typedef {MetaCommon & Omit<Partial<ToyMeta>, "mode"> & Omit<Partial<TextMeta>, "mode" | "images">
 *   & Partial<PartMeta> & FieldMeta & {mode: "toy" | "text", images?: ImageBlock[] | null}} TraceMeta
 */

/**
 * The keys a part's fields add beside their arrays (generated/meta.js, from trace_meta.py's
 * FIELD_META): the thumbnails' pooling, the projection's components, the predictions' window
 * and each token id's label.
 * @typedef {object} FieldMeta
 * @property {import("./generated/meta.js").ThumbsMeta} [thumbs]
 * @property {import("./generated/meta.js").ProjectionMeta | null} [projection]
 * @property {import("./generated/meta.js").TopKMeta} [top_k]
 * @property {import("./generated/meta.js").LensMeta} [lens]
 */

/**
 * One image of a trace (meta.images[i], generated/meta.js), and a saved file's preview of it
 * (data_url, which html.py adds).
 * @typedef {import("./generated/meta.js").ImageBlock & {data_url?: string}} ImageBlock
 */

/** The image blocks as sentence mode's image input and views name them. @typedef {ImageBlock} ImageMeta */

/** @typedef {{meta: TraceMeta, arrays: Record<string, NDArray>}} Compact */

/**
 * The meta of a Predictions part (fields top_k and lens, parts.js lensPart): the trace's, with
 * the window of positions the arrays hold and each token id's label.
 * @typedef {TraceMeta & {top_k: NonNullable<TraceMeta["top_k"]>,
 *   lens: NonNullable<TraceMeta["lens"]>}} LensPartMeta
 */

/**
 * The toy transformer's wiring (ToyConfig on the server).
 * @typedef {object} ToyConfig
 * @property {number} layers
 * @property {number} heads
 * @property {"identity" | "random" | "custom"} projections
 * @property {Record<string, (number | string)[][]> | null} weights
 * @property {boolean} scale
 * @property {"none" | "causal"} mask
 * @property {"none" | "sinusoidal" | "learned" | "rope"} positional
 * @property {boolean} residual
 * @property {"none" | "pre" | "post"} norm
 * @property {boolean} ffn
 * @property {number | string} seed a string while the field holds text that is not a number
 */

/**
 * The toy lab's state (state.js).
 * @typedef {object} ToyState
 * @property {string | null} preset id of the preset it started from
 * @property {string[]} tokens
 * @property {string[]} axes
 * @property {(number | string)[][]} embeddings a string while a cell holds text that is not a number
 * @property {ToyConfig} config
 * @property {ToyView} view
 */

/**
 * What the toy lab's views show (state.view).
 * @typedef {object} ToyView
 * @property {number} layer attention layer (0-based)
 * @property {number} head attention head
 * @property {number} vlayer the layer of the vectors, 0 (the input) to L
 * @property {number} a first token of the distance pair
 * @property {number} b second token
 * @property {boolean} trails token paths over all layers
 * @property {Measure} measure the attention card's right heatmap: the weights, or
 *   value-weighted attention ||a_ij v_j W_O^h||
 */

/**
 * Sentence mode's state (state.js).
 * @typedef {object} SentenceState
 * @property {string | null} model null: the server's default
 * @property {string} text
 * @property {number} layer the chosen head's layer (model view, head view, query-key view)
 * @property {number} head
 * @property {number[]} heads heads drawn in the head view
 * @property {number | null} query original token index (null: the first ordinary token)
 * @property {number | null} key original token index of the key Why this score explains at
 *   the query (null: the query's winning key, its largest weight)
 * @property {boolean} hideSpecial
 * @property {boolean} mergeWords
 * @property {number[] | "all" | null} picked tokens in the trajectories (original indices; null:
 *   the default, every token of a short text and a few from the query on of a long one)
 * @property {2 | 3} dims
 * @property {boolean} allKeys the query-key view shows every key (else the strongest)
 * @property {boolean} peak colour each head of the model view from 0 to its own largest weight
 * @property {Aggregate} aggregate what the model view's large heatmap shows of the chosen layer
 * @property {Measure} measure what the model and head views show: the attention weights, or
 *   value-weighted attention ||a_ij v_j W_O^h|| (the trace's ``measure``)
 * @property {Generate | null} generate a causal model writes this after the text (a new trace)
 * @property {number | null} step the generation step shown (1-based; null: the last)
 * @property {{layer: number, head: number}[]} ablate heads knocked out (0-based; a new trace)
 * @property {AblateMode} ablateMode how they are knocked out
 * @property {string} ablateSource patch: the text whose head outputs are copied in
 * @property {number | null} diffLayer the head the Knock-out card compares (null: the default)
 * @property {number | null} diffHead
 * @property {Pushed} pushed the token the Predictions card's "What pushed this" attributes
 * @property {SentenceImage[]} images the images with the text (a new trace; never in the link)
 * @property {boolean | null} foldImages each image one row and column (null: the default,
 *   collapsed when an image has many tokens)
 * @property {string[] | null} more the cards open under "More views" (null: as this browser
 *   remembers them)
 */

/**
 * An image added to the text: its file's name, type and size, and its data: URL (what the
 * trace request carries).
 * @typedef {{name: string, type: string, size: number, url: string}} SentenceImage
 */

/**
 * What "What pushed this" attributes at the query: the top prediction's logit, the true next
 * token's (the text's token, for an encoder), or the difference, next minus top.
 * @typedef {"top" | "next" | "diff"} Pushed
 */

/**
 * How a head is knocked out (the trace request's ``ablate[i].mode``).
 * @typedef {"zero" | "mean" | "patch"} AblateMode
 */

/**
 * How a causal model writes after the text (the trace request's ``generate``).
 * @typedef {{steps: number, temperature: number, seed: number}} Generate
 */

/**
 * The chosen head, or an aggregate of the chosen layer's heads (a trace field of that name).
 * @typedef {"head" | import("./generated/fields.js").OverHeads} Aggregate
 */

/**
 * What the sentence views show: the attention weights, or value-weighted attention.
 * @typedef {"weights" | "value_weighted"} Measure
 */

/**
 * The caps a request must keep (the limits fetchPresets gives).
 * @typedef {object} Limits
 * @property {number} max_tokens
 * @property {number} max_dim
 * @property {number} max_layers
 * @property {number} max_heads
 * @property {number} max_token_chars
 * @property {number} max_abs_value
 * @property {number} max_text_chars
 * @property {number} max_nickname_chars the longest nickname a learner may give (Learn)
 * @property {number} max_learn_lab_chars the longest toy lab a Learn step keeps in the browser's
 *   progress (its link's `toy=` part), reopened when the learner comes back to the step
 */

/**
 * A head worth a look for an example text (example_heads of fetchModels), measured on the model.
 * @typedef {{model: string, text: string, query: string, key: string, layer: number, head: number,
 *   weight: number, note: string}} ExampleHead
 */

/**
 * A model the server serves (ModelInfo on the server, an entry of fetchModels' list).
 * @typedef {object} ModelInfo
 * @property {string} name
 * @property {string} family
 * @property {number} layers
 * @property {number} heads
 * @property {number} d_model
 * @property {number} head_dim
 * @property {number} kv_heads
 * @property {boolean} causal
 * @property {number} max_tokens the most tokens a trace may have
 * @property {number} model_max_tokens
 * @property {string} device
 * @property {string} source where the weights came from
 * @property {string[] | null} [examples] texts this model reads (a trained run's), else null
 * @property {string | null} [run] the training run it comes from
 * @property {string | null} [title] a trained run's model: what it is, in words, or the name its
 *   run's owner gave it (named) (core/runname.js); the shipped model's name on the page
 * @property {string | null} [characters] a character model's characters (its whole vocabulary)
 * @property {number | null} [created] when its run started (epoch seconds)
 * @property {boolean} [named] its run's owner named it: title is shown as it is
 * @property {"native" | "transformers" | "ndif"} [backend]
 * @property {string | null} [ablate_refused] why its heads cannot be knocked out, or null
 * @property {boolean} [reads_images] a vision-language model: the text may carry images
 * @property {Placement} [placement] where its embedding, layers and head live
 */

/**
 * Where a model lives (Placement on the server): a device per layer ("cuda:0", "cpu", "disk",
 * or "cpu+disk" for one accelerate split), and the embedding's and the head's.
 * @typedef {object} Placement
 * @property {string} embed
 * @property {string[]} layers
 * @property {string} head
 */

/**
 * The server's models (fetchModels; ModelList on the server).
 * @typedef {object} ModelList
 * @property {ModelInfo[]} models
 * @property {string | null} default the model the page starts with
 * @property {string | null} [predicting] the model offered where the chosen one predicts nothing
 *   (the shipped character model; modes/sentence/showwith.js)
 * @property {string[]} examples
 * @property {number} max_text_chars
 * @property {number} max_generate
 * @property {number} max_ablate
 * @property {number} attribution_top the components Why this score keeps on each side
 * @property {number} max_json_values
 * @property {string} install what the page says on a server without a model for sentences (words, no command)
 * @property {ExampleHead[]} example_heads
 * @property {CorpusLimits} corpus
 * @property {{max_images: number, max_bytes: number, max_pixels: number, types: string[]}} [images]
 *   the caps on the images a trace may carry
 */

/**
 * The head atlas of a model (core/api.js fetchAtlas): each score a layers x heads grid.
 * @typedef {{name: string, title: string, definition: string, grid: number[][],
 *   offsets: number[][] | null}} AtlasScore offsets: positional only, the offset each head
 *   attends to (k tokens back; negative: ahead)
 * @typedef {{text: string, tokens: string[], start: number, half: number, strings: number,
 *   seed: number}} AtlasProbe the probe's first string, as the page opens it
 * @typedef {{model: string, layers: number, heads: number, scores: AtlasScore[],
 *   probe: AtlasProbe, seconds: number}} Atlas
 */

/**
 * How heads compose (core/api.js fetchComposition): per kind, [lb][hb][la * heads + ha] the
 * score of head (la, ha) into the later head (lb, hb), 0 to 1; null where a head's matrix is zero.
 * @typedef {"q" | "k" | "v"} CompositionKind
 * @typedef {{model: string, layers: number, heads: number, names: string[],
 *   kinds: Record<CompositionKind, (number | null)[][][]>, processing: string, seconds: number}} Composition
 */

/**
 * Many texts at once (core/api.js fetchCorpus, the model's corpus endpoint): one head's
 * queries and keys of every token of a set of texts, projected together into 2-D, and every
 * head clustered by the similarity of its patterns on the set.
 * @typedef {"examples" | "docs" | "upload"} CorpusSource
 * @typedef {{source: CorpusSource, upload?: string | null, text?: string | null, layer: number,
 *   head: number, projection: string, seed: number, max_tokens: number, clusters: number}} CorpusRequest
 * @typedef {{text: string, tokens: string[], user: boolean}} CorpusText
 * @typedef {{text: number[], pos: number[], qx: number[], qy: number[], kx: number[],
 *   ky: number[]}} CorpusPoints columnar, one entry per token of every text (text order, then
 *   position): its text (an index into texts), its position there, its query's and its key's
 *   coordinates
 * @typedef {{key_shift: number, scale: number, note: string}} CorpusTransform how the keys were
 *   moved before projecting (every softmax unchanged)
 * @typedef {{layers: number, heads: number, measure: string, order: number[],
 *   similarity: number[][], labels: number[], merges: number[][]}} HeadClusters order: every
 *   head as layer * heads + head, in the dendrogram's leaf order; similarity: n x n in that
 *   order; labels: each head's cluster (indexed layer * heads + head)
 * @typedef {{model: string, layer: number, head: number, source: CorpusSource, projection: string,
 *   seed: number, texts: CorpusText[], points: CorpusPoints | null, unavailable: string | null,
 *   explained: number[] | null, transform: CorpusTransform | null, tokens: number,
 *   dropped: number, cut: boolean, clusters: HeadClusters,
 *   seconds: {run: number, project: number, cluster: number}, cached: boolean}} Corpus
 * @typedef {{max_tokens: number, default_tokens: number, max_chars: number,
 *   projections: string[], max_clusters?: number}} CorpusLimits ModelList.corpus
 */

/**
 * What the Train mode's views show.
 * @typedef {object} TrainView
 * @property {number} variant the chosen variant (index into run.variants)
 * @property {number} layer the chosen head's layer
 * @property {number} head
 * @property {number} checkpoint index into the checkpoint steps shown (trainrun.js shownSteps)
 * @property {AttentionKind} attention which attention of an encoder-decoder ("self" otherwise)
 * @property {number | null} query the row (a probe token, 0-based) of the large heatmap's cell
 *   whose Why this score is open, with key; null: none open
 * @property {number | null} key that cell's column
 * @property {boolean} [picked] the learner has chosen a head of the run open (a Learn step's
 *   finding is theirs only then, not the view's first head)
 */

/**
 * A trained model's architecture (TrainArchitecture on the server) and its optimiser.
 * @typedef {{layers: number, heads: number, d_model: number, ffn: boolean, positional: string,
 *   norm: string, residual: boolean, scale: boolean}} TrainArch
 * @typedef {{steps: number, lr: number, batch: number, seed: number}} TrainOpt
 */

/**
 * What a run can be asked for (fetchTrainOptions; TrainOptions on the server): the tasks with
 * their defaults, the presets, each switch's values, the caps, and how many runs train at once.
 * @typedef {{name: string, title: string, about: string, arch: TrainArch, opt: TrainOpt}} TrainTaskInfo
 * @typedef {{id: string, title: string, question: string, shows: string, claims: string[],
 *   task: string, switch: string, variants: {label: string, arch: TrainArch}[], opt: TrainOpt}} TrainPresetInfo
 * @typedef {{max_layers: number, max_heads: number, max_d_model: number, max_batch: number,
 *   max_variants: number, max_steps: number, max_seconds: number, max_params: number,
 *   max_text_chars: number, max_title_chars: number}} TrainLimits max_title_chars: the longest
 *   name a run may be given
 * @typedef {{tasks: TrainTaskInfo[], presets: TrainPresetInfo[],
 *   switches: Record<string, (string | boolean)[]> & {positional: string[], norm: string[]},
 *   limits: TrainLimits, slots: number}} TrainOptions
 */

/**
 * An encoder-decoder's three attentions: the decoder's own ("self"), its cross-attention to
 * the source ("cross"), and the encoder's ("encoder").
 * @typedef {"self" | "cross" | "encoder"} AttentionKind
 */

/**
 * @typedef {{shape: number[], values: string, scale: number[][]}} Snapshot base64 uint8
 *   [L][H][T][S] and one scale per head
 */

/**
 * What an encoder-decoder wrote for a string, and its attention (decodeRun).
 * @typedef {object} TrainDecoded
 * @property {string[]} source the encoder's tokens
 * @property {string[]} tokens the decoder's tokens
 * @property {string[]} writes what the decoder wrote at each of its tokens
 * @property {string} output
 * @property {string} expected
 * @property {number[][][][]} self [L][H][T][T]
 * @property {number[][][][]} cross [L][H][T][S]
 * @property {number[][][][]} encoder [L][H][S][S]
 */

/**
 * @typedef {object} TrainCheckpoint
 * @property {number} step
 * @property {number} heldout
 * @property {number} seconds
 * @property {Snapshot} thumbs the (decoder's) self-attention [L][H][T][T]
 * @property {Snapshot | null} [cross] an encoder-decoder's cross-attention [L][H][T][S]
 * @property {Snapshot | null} [encoder] an encoder-decoder's encoder [L][H][S][S]
 * @property {string | null} sample
 */

/**
 * A training run as fetchRun gives it (TrainRun on the server), kept up to date
 * by its events.
 * @typedef {object} TrainRun
 * @property {string} id
 * @property {string} [title] what it trains, in words, or the name its owner gave it (named)
 *   (absent in a file saved before issue 41)
 * @property {number} [created] when it started (epoch seconds)
 * @property {boolean} [named] its owner named it (PATCH): title is shown as it is
 * @property {boolean} [can_rename] the caller may rename it (its owner, or the operator)
 * @property {boolean} [yours] the caller started it
 * @property {boolean} [can_cancel] the caller may cancel it (its owner, or the operator); a run
 *   opened by its link is read, not controlled (absent in a file saved before issue 27)
 * @property {boolean} [shared] the operator shared it with every visitor
 * @property {"queued" | "running" | "done" | "cancelled" | "failed" | "interrupted"} state queued:
 *   waiting for a training slot (then running)
 * @property {string | null} reason
 * @property {number | null} [place] while queued: its place in line, 1 the next to start
 * @property {number | null} [wait_s] while queued: about how many seconds until it starts
 * @property {string} task
 * @property {string} about
 * @property {string | null} preset
 * @property {string | null} compare
 * @property {number} steps
 * @property {{steps: number, lr: number, batch: number, seed: number}} opt
 * @property {number[]} checkpoint_steps
 * @property {{tokens: string[], text: string, look: string, query: number, prompt: string | null,
 *   verb?: string | null, source?: string[] | null, writes?: string[] | null}} probe query: the
 *   token whose row shows what the task teaches (sentence mode opens the model on it); source,
 *   writes: an encoder-decoder's source tokens, and what each decoder token is trained to write
 * @property {number | null} baseline
 * @property {TrainClaim[] | null} [claims] a preset's, once measured
 * @property {number | null} [preset_steps] a preset's run: the preset's own steps, its claims
 *   made of runs that long (more than steps where a server capped below them made it shorter)
 * @property {{induction: number, alignment: number, induction_from?: number}} [marks] the scores
 *   a head must reach to be named an induction head, an aligned cross-attention head, and the
 *   first layer (0-based) an induction head can be in (absent in a file saved before)
 * @property {{label: string, arch: any, params: number, state: string, model: string | null,
 *   model_step?: number | null, induction: number[][] | null, alignment?: number[][] | null, checkpoints: TrainCheckpoint[],
 *   history: {step: number[], loss: number[], grad_norms: number[][], seconds: number[]}}[]} variants
 * @property {{alphabet: string, max_len: number, min_len: number} | null} [ask] an
 *   encoder-decoder's: the letters it reads, and how many it is asked (it trained on min_len to max_len)
 */

/**
 * A claim measured on a run: in short (claim, for tables), its value and verdict, and as a
 * sentence with its numbers rounded (says; "" in a run kept before sentences were). checked
 * false: an observation (a time), shown and never part of a verdict. value null: not measured
 * (a run made shorter than its preset has not the steps the claim reads; says says so).
 * @typedef {{claim: string, value: number | null, holds: boolean, says?: string, checked?: boolean}} TrainClaim
 */

/**
 * One model of a recurrent comparison: its accuracy per distance and its time per training
 * step per length, each [] until measured.
 * @typedef {{name: "transformer" | "lstm" | "gru", params: number, accuracy: number[],
 *   step_seconds: number[], loss: number | null, steps: number, train_seconds: number | null}} RecurrentModel
 */

/**
 * A comparison of the transformer with an LSTM and a GRU (fetchRecurrent).
 * @typedef {object} RecurrentRun
 * @property {string} id
 * @property {boolean} yours the caller started it
 * @property {boolean} can_cancel the caller may cancel it (its owner, or the operator)
 * @property {string | null} [token] POST's answer only: the caller as a bearer token
 * @property {"queued" | "running" | "done" | "cancelled" | "failed" | "interrupted"} state
 * @property {string | null} reason
 * @property {number | null} [place] while queued: its place in line, 1 the next
 * @property {number | null} [wait_s] while queued: about how many seconds until it starts
 * @property {string} task
 * @property {number} seed
 * @property {number[]} distances where accuracy is measured
 * @property {string} distance what a distance counts
 * @property {number[]} lengths the sequence lengths a step is timed at
 * @property {RecurrentModel[]} models
 * @property {TrainClaim[] | null} claims once done
 * @property {string} shows what it showed, in words, once done
 * @property {number} progress 0 to 1
 * @property {string} doing
 */

/**
 * One comparison in fetchComparisons' list.
 * @typedef {{id: string, yours: boolean, can_cancel: boolean, created: number,
 *   state: RecurrentRun["state"], task: string, seed: number, progress: number}} RecurrentSummary
 */

/**
 * What a comparison can be asked for (fetchRecurrentOptions).
 * @typedef {{tasks: {name: string, title: string, about: string, steps: number,
 *   distances: number[], distance: string}[], default: string, lengths: number[],
 *   max_seed: number, slots: number, queue: number}} RecurrentOptions
 */

/**
 * One run in fetchRuns' list.
 * @typedef {object} TrainRunSummary
 * @property {string} id
 * @property {string} title what it trains, in words, or the name its owner gave it (named)
 * @property {number} created when it started (epoch seconds)
 * @property {boolean} [named] its owner named it: title is shown as it is
 * @property {boolean} [can_rename] the caller may rename it
 * @property {boolean} yours the caller started it
 * @property {boolean} can_cancel the caller may cancel it
 * @property {boolean} shared the operator shared it with every visitor
 * @property {"queued" | "running" | "done" | "cancelled" | "failed" | "interrupted"} state
 * @property {string | null} reason
 * @property {number | null} [place] while queued: its place in line (1 is next)
 * @property {string} task
 * @property {string | null} preset
 * @property {string | null} compare
 * @property {number} steps per variant
 * @property {{label: string, state: string, model: string | null, steps: number,
 *   heldout: number | null}[]} variants steps: trained so far; heldout: at the latest checkpoint
 */

/**
 * A row of an article's table: the article's numbers as it prints them, the engine's at full
 * precision.
 * @typedef {{label: string, article: number[], engine: (number | null)[]}} ArticleRow
 */

/**
 * A table or figure of the article a Learn step restates, with the engine's numbers beside.
 * @typedef {{caption: string, columns: string[], decimals: number, rows: ArticleRow[]}} ArticleTable
 */

/**
 * One step of the Learn mode (api.js fetchLearn): what it says, its formula, the lab's starting
 * state and the tasks the page checks.
 * @typedef {object} LearnStep
 * @property {number} n 1-based, the path's order
 * @property {string} id
 * @property {string} title
 * @property {"toy" | "train"} lab
 * @property {string[]} text paragraphs, plain text
 * @property {string} formula presentation MathML
 * @property {string} formula_text the same in plain text
 * @property {{preset: string | null, tokens: string[], axes: string[], embeddings: number[][],
 *   config: ToyConfig, view: Partial<ToyView>} | null} toy a toy step's starting state
 * @property {{settings: Record<string, string>} | null} train a train step's form settings
 * @property {string | null} [continues] the id of the earlier train step whose run this one
 *   goes on with (its lab is that step's: the run trained there stays in view and is checked)
 * @property {string[]} focus ids of the cards the step is about
 * @property {string[]} [only] ids of the lab's cards the step shows (none: the whole lab)
 * @property {{id: string, prompt: string, hint: string, finding: boolean, action?: string | null,
 *   reads?: string[]}[]} tasks reads: a toy task's parts of the lab, named (a change to one is a try)
 *   action: the id of the lab's button the task needs (the guide shows one of the same name)
 * @property {ArticleTable[]} article
 */

/**
 * A step's check (api.js checkLearn): each task done or not, and why, in words; a toy step's
 * article tables with the engine's numbers from the learner's table (null: the table is no
 * longer the article's case); a task's cell, one it points at ([query, key], marked on the lab's
 * large heatmap).
 * A task not tried yet (`tried` false: no part of the lab it reads changed) says only so.
 * `credited` false: the lab is not the caller's own work (the step's start, a link's lab as it came,
 * another visitor's run), which counts for no one; `seen`, when it is someone else's, says whose
 * and what makes it the caller's own (a task passed there is shown, not done).
 * @typedef {{step: string, tasks: {id: string, done: boolean, says: string, tried?: boolean, cell?: number[] | null}[],
 *   credited?: boolean, seen?: string | null, article?: ArticleTable[] | null}} LearnAnswer
 */

/**
 * The caller's Learn progress as the server keeps it (core/api.js fetchLearnProgress): each
 * step's tasks its checks found done and those tried; whether an operator sees the class.
 * @typedef {{kept: boolean, nickname: string | null, last: string | null,
 *   steps: Record<string, {done: string[], tried: string[]}>, watched: boolean,
 *   note?: string | null}} LearnKept
 */

/**
 * The operator's class view (core/api.js fetchClass): every learner kept, the one seen most
 * recently first, each by nickname or "Learner n", never by an id.
 * @typedef {{n: number, id: string, title: string}} ClassStep
 * @typedef {{prompt: string, tries: number, first_try: number, last_try: number}} ClassStuckTask
 * `on`: the step the learner has open (else that of their latest check); `started`: a task tried
 * on their own work; `looked`: they opened someone else's work (a link, another's run).
 * @typedef {{label: string, named: boolean, on: ClassStep | null, done: number[],
 *   stuck: (ClassStep & {tasks: ClassStuckTask[]})[], started: boolean, looked: boolean,
 *   last_seen: number, seen_s: number}} ClassLearner
 * @typedef {{learners: ClassLearner[], steps: number, now: number, poll_s: number,
 *   stuck_tries: number, stuck_s: number, max_learners: number, keep_days: number | null,
 *   note?: string | null}} LearnClass
 */

/**
 * A trace job: a long trace the server computes, its state as core/api.js reads it.
 * @typedef {object} TraceJob
 * @property {string} id
 * @property {"queued" | "running" | "done" | "cancelled" | "failed"} state
 * @property {string} stage "waiting", "forward", "thumbnails", "encoding", then the state
 * @property {number} layers the model's
 * @property {number} layers_done the forward's
 * @property {number} done layer passes done (the forward's, then the thumbnails')
 * @property {number} total
 * @property {number} elapsed_s
 * @property {number | null} left_s
 * @property {number} estimate_s
 * @property {number} limit_s
 * @property {string | null} message why it was cancelled or failed
 * @property {number | null} status
 * @property {string | null} [remote] a remote deployment's last word (NDIF's queue, its loading)
 * @property {string} url
 * @property {string} result
 * @property {string} events its server-sent events (its state as it changes)
 */

export {};
