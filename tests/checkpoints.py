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


def make_tiny_gpt2(folder: Path, seed: int = 0) -> Path:
    """A small randomly initialised GPT-2 (2 layers x 4 heads, d_model 32), every parameter
    perturbed so that no LayerNorm is the identity and no bias is zero."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=4,
        activation_function="gelu_new",
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.save_pretrained(folder)
    return folder
