"""The Learn mode: the derivation of the transformer as a path of steps through the toy lab and
the training lab, each with its text, its formula, a starting state, the article's numbers beside
the engine's, and tasks whose checks read the learner's own trace or run.

- ``path``: what a step and a task are; ``steps`` (``toy_steps``, ``train_steps``): the steps;
- ``article``: the article's tables and how the engine's numbers are read;
- ``reading``, ``checks_toy``, ``checks_train``: what the checks read, and the checks;
- ``service``: the API's answers (the steps with their engine numbers, a check on the compute
  thread).
"""
