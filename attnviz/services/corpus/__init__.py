"""The corpus view (AttentionViz's idea, Yeh et al. 2023, on attnviz's engine): one head's queries
and keys of every token of a set of texts projected together into 2-D, the user's own sentence
placed into the set's map; every head clustered by the similarity of its patterns on the set.

The package follows the seams of a set's life:

- ``sets``: the set of texts (the model's examples, Python's documentation, an upload), each
  tokenized and cut to the budget;
- ``run``: the set's texts through the model, keeping queries, keys and the heads' Gram matrix;
- ``numbers``: the normalisation, the PCA, the heads' similarity and their clustering;
- ``service``: the sets kept (``CorpusCache``), the checks against the model, and the response.
"""

from attnviz.services.corpus.service import CORPORA, CorpusCache, check, projections

__all__ = ["CORPORA", "CorpusCache", "check", "projections"]
