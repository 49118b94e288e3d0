"""Caps on what one trace request may ask for: defined once here, below every layer that checks
them (the capture's readouts, the schemas' fields, the services), and sent to the page through
``/api/presets`` so that JavaScript never repeats a number."""

from __future__ import annotations

from pydantic import BaseModel


class Limits(BaseModel):
    """Caps on what one trace request may ask for."""

    max_tokens: int = 64
    max_dim: int = 64
    max_layers: int = 12
    max_heads: int = 16
    max_token_chars: int = 40
    max_abs_value: float = 1000.0
    # A text of 1,024 tokens (GPT-2's positions) runs to about 5,000 characters of English;
    # the rest is room for long words and whitespace, which take few tokens.
    max_text_chars: int = 20_000
    max_thumb: int = 1024
    max_generate: int = 64  # tokens a causal model writes after a text
    # Attention rollout multiplies a T x T matrix per layer: 2 T^3 operations each. This bounds
    # their sum (about 5 s on two CPU cores): 4,096 tokens through 3 layers, 1,024 through 200.
    max_rollout_flops: float = 5e11
    # Predictions (top_k, lens): the most next tokens a position lists, and the default.
    max_top_k: int = 20
    default_top_k: int = 5
    # Unembedding a position costs 2 d_model x vocab operations per hidden state read (every
    # layer's, for the logit lens): this bounds one part's (about 3 s on two CPU cores; GPT-2's
    # top_k at 2,500 positions, or its lens at 200). Ask for fewer with pos_start, pos_count.
    max_unembed_flops: float = 2e11
    # Heads one trace may knock out (``ablate``): each patch runs its source text once more.
    max_ablate: int = 16
    # Why this score (qk_attribution's ``top``): the components the page keeps on each side, the
    # rest summed into one; the page and a saved file's parts ask for this many.
    attribution_top: int = 6
    # The corpus view (POST /api/models/{name}/corpus): the set's tokens (each runs through the
    # model once: about 5 s for 5,000 of GPT-2's on two CPU cores), the default, an upload's
    # characters (100,000 of any script, 3 bytes each in UTF-8, fit the server's 512 KiB body
    # cap; 25,000 tokens of English, past the set's cap), the tokens of one text of the set (a
    # longer line is cut into windows of this many), and the clusters the heads may be cut into.
    max_corpus_tokens: int = 20_000
    default_corpus_tokens: int = 5_000
    max_corpus_chars: int = 100_000
    max_corpus_text_tokens: int = 128
    max_clusters: int = 32
    # Images with a text (a vision-language model's trace): the most one request carries, and
    # the most pixels one may have once its header is read, before any pixel is decoded (a
    # decompression bomb is a few KB of PNG that claims 30,000 x 30,000). 50 MP takes in the
    # largest photos phones and cameras write by default (8,160 x 6,120 is 49.9 MP) and costs at
    # most 150 MB decoded as RGB, a few times that while it is turned and converted; a model's
    # processor shrinks it to about a megapixel or less anyway.
    max_images: int = 4
    max_image_pixels: int = 50_000_000
    # The most a host may raise one image's byte cap to (Settings.max_image_bytes, 10 MiB by
    # default): the schema's bound on a data URL's length, before the server's own cap is known.
    image_bytes_ceiling: int = 32 * 2**20
    # The Learn path's progress the server keeps per visitor (learn/classroom.py): the longest
    # nickname a learner may give themselves, and the most bytes one learner's record (their
    # steps' tasks done and tried, their nickname) may take; the whole path, every task tried
    # and done, with the longest nickname, takes under 1.5 KB.
    max_nickname_chars: int = 32
    max_learner_bytes: int = 16_384
    # A toy step's lab as the learner left it, kept in their browser's progress (localStorage)
    # so that coming back to the step reopens it: its link's `toy=` part, at most this many
    # characters (a step's own table takes under 1,000; a larger one is not kept, and the step
    # then reopens the last one that was). Nine toy steps at the cap take under 600 KB.
    max_learn_lab_chars: int = 65_536
    # A training run's name, as its owner gives it (PATCH /api/train/{id}): characters once its
    # spaces are trimmed; longer than a line of the runs list, short enough to read as a name.
    max_run_title_chars: int = 80


def data_url_chars(n_bytes: int) -> int:
    """The longest data URL (``data:image/<type>;base64,<data>``) of an image of ``n_bytes``:
    its base64 (4 characters per 3 bytes, padded) and a prefix of at most 64 characters."""
    return 4 * -(-n_bytes // 3) + DATA_URL_PREFIX


DATA_URL_PREFIX = 64  # "data:image/" and a media type's subtype, ";base64,"


LIMITS = Limits()

# The size a one-file export may grow to with its optional parts (more heads exact, the layer's
# aggregates): `attnviz export --budget`'s and ``save_html``'s default, the HTTP export's budget.
EXPORT_BUDGET = 1_600_000
