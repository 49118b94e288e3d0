"""Write a tiny random Llama checkpoint (2 layers, d_model 64) with a tokenizer to a folder.

No hub access: the tokenizer is a byte-level BPE trained here on a few sentences. The folder
path is the model key both sides use: nnsight's ``LanguageModel(folder)`` on the client, and
the NDIF model actor's ``from_pretrained(folder)`` on the server (same machine).

Usage: python make_tiny_model.py FOLDER   (any Python with torch, transformers, tokenizers)
"""

from __future__ import annotations

import sys
from pathlib import Path

TEXT = [
    "hello world, this is a tiny model for a round trip.",
    "the quick brown fox jumps over the lazy dog.",
    "attention lets every token look at the tokens before it.",
]


def main(folder: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        TEXT * 4,
        trainers.BpeTrainer(
            vocab_size=320,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.save_pretrained(folder)

    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=256,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    print(folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
