"""One module per model family, each a pure conversion from a Hugging Face checkpoint to the
engine (TransformerLens style). ``attnviz.pretrained.convert.FAMILIES`` is the table of them.

Adding a family (say ``olmo2``, for config.json's ``model_type`` "olmo2"):

1. ``families/olmo2.py``, importing only from ``attnviz.engine`` and
   ``attnviz.pretrained.checkpoint`` (and another family's module it builds on, as roberta.py
   builds on bert.py) -- never from ``convert.py``, which imports the families:

   - ``olmo2_config(hf: Mapping) -> TransformerConfig`` reads config.json with ``need``,
     ``optional_int``, ``positive_float``, and ``refuse``\\ s by name, with ``ConversionError``,
     any setting the engine does not reproduce;
   - ``olmo2_weights(cfg, tensors, hf) -> dict[str, Tensor]``: ``take = Taker(strip(tensors,
     "model.", _IGNORE))``, every tensor by ``take(key, *shape)``, ``nn.Linear``'s (out, in)
     transposed by ``.T``, fused tensors split (a shape comment on each), values never changed,
     the unembedding by ``unembedding(head, name, table, ties(hf, default))`` (the token table
     only where config.json ties them: an untied head the checkpoint lacks is refused by name),
     then ``take.check_all_used(n)``;
   - ``FAMILY = Family(name="olmo2", config=olmo2_config, weights=olmo2_weights,
     description="OLMo 2 decoders: ...")``; a module that reads several model_types with one
     pair of functions exports ``FAMILIES = (Family(...), Family(...))`` instead (llama.py).

2. One line in ``convert.py``'s table: ``olmo2.FAMILY,`` (or ``*module.FAMILIES,``).

tests/pretrained/test_layout.py checks the pattern: every module here exports its
``FAMILY``/``FAMILIES``, the table holds exactly those, and no module imports ``convert``.
"""
