"""One pure weight conversion per model family beyond BERT and GPT-2 (which live in
``convert.py``), each in its own module: a ``*_config`` that reads ``config.json`` and refuses
what the engine cannot reproduce, and a ``*_weights`` that checks every tensor's shape and that
every tensor is used."""
