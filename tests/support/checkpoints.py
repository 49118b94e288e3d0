"""Model folders the tests make themselves, in the standard Hugging Face layout.

``transformers`` (a development dependency, used only as a test oracle) writes them; the app
loads them with its own loader.
"""

from __future__ import annotations

from pathlib import Path

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "I sat on the river bank and watched the water.",
    "I went to the investment bank to ask for a loan.",
    "An apple and a banana are both fruit; a phone is not.",
    "Attention lets every token look at every other token.",
]


def make_tokenizer(vocab_size: int = 400):
    """A byte-level BPE tokenizer like GPT-2's, trained here on a few sentences (no download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer)
    return tok


def make_tiny_gpt2(folder: Path, seed: int = 0, **config) -> Path:
    """A small randomly initialised GPT-2 (2 layers x 4 heads, d_model 32), every parameter
    perturbed so that no LayerNorm is the identity and no bias is zero; ``config``: more
    GPT2Config settings (``tie_word_embeddings=False``: an LM head of its own)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    gpt2 = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=4,
        activation_function="gelu_new",
        bos_token_id=0,
        eos_token_id=0,
        **config,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(gpt2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.save_pretrained(folder)
    return folder


def make_piece_tokenizer(vocab_size: int = 300, specials: tuple[str, ...] = ()):
    """A SentencePiece-style tokenizer (pieces marked "▁" where a word starts, as Llama's and
    Mistral's), a BPE trained here on a few sentences, with <unk>, <s>, </s> and ``specials``
    (a chat template's, say) as special tokens; <s> starts every text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<unk>", "<s>", "</s>", *specials],
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return tok


def make_wordpiece_tokenizer(vocab_size: int = 300):
    """A BERT-style WordPiece tokenizer ([CLS] text [SEP]), trained here on a few sentences."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return tok


def make_roberta_tokenizer(vocab_size: int = 400):
    """A byte-level BPE like RoBERTa's: <s> text </s>, with <pad> as token 1."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return tok


def _perturbed_save(model, folder: Path, seed: int) -> Path:
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    model.save_pretrained(folder)
    return folder


def make_tiny_bert_mlm(folder: Path, seed: int = 0, **more) -> Path:
    """A small random BERT with its masked-LM head (3 layers x 4 heads, d_model 32), every
    parameter perturbed: TransformerLens's BERT adapter reads BertForMaskedLM; ``more``: more
    BertConfig settings."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_wordpiece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=3,
        num_attention_heads=4, intermediate_size=64, max_position_embeddings=128, **more,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _perturbed_save(BertForMaskedLM(config), folder, seed)


# Llama-style configurations the tests cover: grouped-query attention with 2 key/value heads,
# tied embeddings, a non-default rope_theta, Qwen2's biases, Mistral's window.
LLAMA_STYLES: dict[str, dict] = {
    "llama-gqa": {"model_type": "llama", "num_key_value_heads": 2},
    "llama-tied-theta": {
        "model_type": "llama",
        "tie_word_embeddings": True,
        "rope_theta": 500000.0,
    },  # fmt: skip
    "qwen2": {"model_type": "qwen2", "num_key_value_heads": 2, "tie_word_embeddings": True},
    "mistral": {"model_type": "mistral", "num_key_value_heads": 1, "sliding_window": 64},
}


def make_tiny_llama(
    folder: Path, style: str = "llama-gqa", seed: int = 0, n_ctx: int = 256
) -> Path:
    """A small random Llama-style decoder (2 layers x 4 heads, d_model 32, ``n_ctx`` positions)
    of one of ``LLAMA_STYLES``, with a SentencePiece-style tokenizer, every parameter
    perturbed."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = dict(LLAMA_STYLES[style])
    model_type = kw.pop("model_type")
    theta = kw.pop("rope_theta", None)
    folder.mkdir(parents=True, exist_ok=True)
    specials = ("<|im_start|>", "<|im_end|>") if model_type == "qwen2" else ()
    tok = make_piece_tokenizer(specials=specials)
    tok.save(str(folder / "tokenizer.json"))
    config = AutoConfig.for_model(
        model_type,
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=n_ctx,
        bos_token_id=1,
        eos_token_id=2,
        **kw,
    )
    if theta is not None:
        config.rope_parameters = {"rope_type": "default", "rope_theta": theta}
    torch.manual_seed(seed)
    return _perturbed_save(AutoModelForCausalLM.from_config(config), folder, seed)


def make_tiny_encoder(
    folder: Path, model_type: str, seed: int = 0, masked_lm: bool = False, **more
) -> Path:
    """A small random RoBERTa or DistilBERT (2 layers x 4 heads, d_model 32) with its kind of
    tokenizer, every parameter perturbed: the bare encoder, or with ``masked_lm`` its
    masked-language-model head too; ``more``: more config settings."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    if model_type == "roberta":
        tok = make_roberta_tokenizer()
        config = AutoConfig.for_model(
            "roberta", vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
            type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, **more,
        )  # fmt: skip
    else:
        tok = make_wordpiece_tokenizer()
        config = AutoConfig.for_model(
            "distilbert", vocab_size=tok.get_vocab_size(), dim=32, n_layers=2, n_heads=4,
            hidden_dim=64, max_position_embeddings=128, pad_token_id=0, **more,
        )  # fmt: skip
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(seed)
    auto = AutoModelForMaskedLM if masked_lm else AutoModel
    return _perturbed_save(auto.from_config(config), folder, seed)
