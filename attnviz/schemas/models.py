"""``GET /api/models``: the models this server offers, its example texts and heads, and the
limits a text's trace and the corpus view keep to."""

from __future__ import annotations

from pydantic import BaseModel, Field

from attnviz.limits import LIMITS
from attnviz.pretrained.convert import FAMILIES
from attnviz.pretrained.folder import Backend


class Placement(BaseModel):
    """Where a model lives: its token embedding's device, each layer's (0 first) and its head's
    (the unembedding; an encoder's body: its last layer's). One device for all, unless a device
    map (--device-map) spread the layers over the GPUs, the CPU and the disk; a layer whose parts
    accelerate put on several devices names each ("cpu+disk")."""

    embed: str = Field(examples=["cuda:0"])
    layers: list[str] = Field(examples=[["cuda:0", "cuda:0", "cuda:1", "cpu", "disk"]])
    head: str = Field(examples=["cuda:1"])


class ModelInfo(BaseModel):
    name: str
    family: str = Field(
        description="The model's family: its config.json model_type. attnviz's own engine reads "
        f"these (the table of conversions; the examples): {', '.join(FAMILIES)}",
        examples=list(FAMILIES),
    )
    layers: int
    heads: int
    d_model: int
    head_dim: int
    kv_heads: int = Field(
        description="Key/value heads: fewer than heads with grouped-query attention, each "
        "shared by heads / kv_heads query heads"
    )
    causal: bool
    max_tokens: int = Field(
        description="The most tokens a trace may have: the smaller of the "
        "model's position table and the server's cap"
    )
    model_max_tokens: int
    device: str = Field(description="Where its inputs go (with a device map, its embedding's)")
    placement: Placement = Field(description="Where its embedding, each layer and its head live")
    source: str = Field(
        description="Where the weights came from: the package or the folder's name (never a "
        "path on the server), or the training run"
    )
    examples: list[str] | None = Field(
        None, description="Texts this model reads (a trained run's), else null: the list's"
    )
    run: str | None = Field(
        None,
        description="The training run this model comes from (null for a loaded model). Behind "
        "a proxy with several replicas, send it as X-Attnviz-Run with a trace of the model.",
    )
    title: str | None = Field(
        None,
        description='A trained run\'s model: what it is, in words ("induction, 2 layers"), or '
        "the name its run's owner gave it (`named`); the page names it by this (and, when not "
        "`named`, the run's start), never by its id; or the character model that ships with "
        "attnviz's (run null), which the page names by this too; null for a folder's model",
    )
    characters: str | None = Field(
        None,
        description="A character-level model's characters (its whole vocabulary, one token "
        "each): a text with any other is refused, naming them; null for any other tokenizer",
    )
    created: float | None = Field(None, description="When its run started (epoch seconds)")
    named: bool = Field(
        False,
        description="A trained run's model whose run its owner named (PATCH /api/train/{id}): "
        "`title` is that name (with the variant's label), shown as it is, without the start's "
        "time",
    )
    backend: Backend = Field(
        "native",
        description="What runs the model: attnviz's own engine (native: every internal a named "
        "hook) or Hugging Face transformers (the bridge, for families the engine has no "
        "conversion for: pip install 'attnviz[transformers]'; a model whose attention does not "
        "go through transformers' AttentionInterface has no queries, keys, values or scores), or "
        "an NDIF deployment (ndif: the model runs there, nnsight sends it one trace at a time: pip "
        "install 'attnviz[ndif]')",
    )
    reads_images: bool = Field(
        False,
        description="The model reads images with its text (a vision-language model): a trace "
        "may carry images; a text-only model's trace with images is refused (422)",
    )
    ablate_refused: str | None = Field(
        None,
        description="Why this model's heads cannot be knocked out (a trace's ablate is refused "
        "with this reason), or null when they can: the native engine's models, and those served "
        "through transformers whose attention goes through its AttentionInterface",
    )


class ExampleHead(BaseModel):
    """A head worth a look for an example text, measured on the model when asked
    (``services.pointers``): the one that singles the key out for the query most."""

    model: str
    text: str = Field(description="The example text it is about")
    query: str = Field(description="The token that attends")
    key: str = Field(description="The token it attends to")
    layer: int = Field(description="0-based, as in a trace")
    head: int = Field(description="0-based, as in a trace")
    weight: float = Field(description="The weight from query to key in that head, rounded")
    column: float = Field(
        description="What the key gets from the other tokens in that head, on average, rounded"
    )
    singles_out: bool = Field(
        description="Whether the weight exceeds the column's mean by services.pointers' margin: "
        "false when no head of the model singles the key out (the note then says so)"
    )
    note: str = Field(description="What the page says about it")


class CorpusLimits(BaseModel):
    """What the corpus view (POST /api/models/{name}/corpus) allows on this server."""

    max_tokens: int = Field(description="The most tokens a set may have (``max_tokens``)")
    default_tokens: int = Field(description="A set's tokens when the request names none")
    max_chars: int = Field(description="The most characters of an upload")
    max_clusters: int = Field(LIMITS.max_clusters, description="The most clusters of heads")
    projections: list[str] = Field(description="The projections this server can do: pca, umap")


class ImageLimits(BaseModel):
    """What a trace's images (for a model that reads them: ModelInfo.reads_images) may be."""

    max_images: int = Field(LIMITS.max_images, description="The most images one trace carries")
    max_bytes: int = Field(description="The most bytes of one image (ATTNVIZ_MAX_IMAGE_BYTES)")
    max_pixels: int = Field(
        LIMITS.max_image_pixels, description="The most pixels of one image, width x height"
    )
    types: list[str] = Field(
        default_factory=lambda: ["image/png", "image/jpeg", "image/webp"],
        description="The types read (from the bytes, whatever the data URL says)",
    )


class ModelList(BaseModel):
    models: list[ModelInfo]
    default: str | None = Field(description="The model the page starts with; null when none")
    predicting: str | None = Field(
        None,
        description="The model the page offers, in one click, where the chosen one gives no "
        "predictions (an encoder): the character model that ships with attnviz when it is "
        "loaded, else the first causal model listed; null when none is",
    )
    examples: list[str]
    max_text_chars: int
    max_generate: int = Field(description="Tokens a causal model may write after a text")
    max_ablate: int = Field(
        LIMITS.max_ablate, description="Heads one trace may knock out (the trace's ablate)"
    )
    attribution_top: int = Field(
        LIMITS.attribution_top,
        description="The components Why this score keeps on each side (qk_attribution's top)",
    )
    max_json_values: int = Field(
        description="The most numbers one JSON trace may carry; ask for parts, or the compact "
        "form, beyond"
    )
    install: str = Field(
        description="What the page says on a server without a model for sentences, in words: "
        "its host can install the default model (the command is in the documentation's Models "
        "page, never sent)"
    )
    example_heads: list[ExampleHead] = Field(
        default_factory=list, description="Heads worth a look for the example texts"
    )
    corpus: CorpusLimits = Field(description="The corpus view's limits and projections")
    images: ImageLimits = Field(description="What a trace's images may be")
