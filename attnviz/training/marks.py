"""The marks a head's score must reach to be named what it is, defined once: Learn's checks
(``attnviz.learn.checks_train``) hold a learner's head to them, and every run sends them
(``TrainRun.marks``) so that the Train tab's card Trained models names its best head by the
same marks (a head under the mark is no induction head, whatever it is the best of)."""

from __future__ import annotations

ALIGNED = 0.5  # a cross-attention head's weight on one (anti-)diagonal: an aligned head
PREVIOUS = 0.3  # a head's mean weight on the previous token: a previous-token head
INDUCTIVE = 0.4  # a head's induction score: an induction head
