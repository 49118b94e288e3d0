"""The marks a head's score must reach to be named what it is, defined once: Learn's checks
(``attnviz.learn.checks_train``) hold a learner's head to them, and every run sends them
(``TrainRun.marks``) so that the Train tab's card Trained models names its best head by the
same marks (a head under the mark is no induction head, whatever it is the best of; nor is a
head of a layer before ``INDUCTION_FROM``, whatever it scores)."""

from __future__ import annotations

ALIGNED = 0.5  # a cross-attention head's weight on one (anti-)diagonal: an aligned head
PREVIOUS = 0.3  # a head's mean weight on the previous token: a previous-token head
INDUCTIVE = 0.4  # a head's induction score: an induction head
# The first layer (0-based) a head can be an induction head in. It finds the position whose
# previous letter is the current one, and only a head of an earlier layer (a previous-token
# head) can have written "the letter before me" there: a first-layer head sees each letter and
# its position alone, so its induction score, however high, comes from position (on strings of
# one length) and names no induction head. The positions preset's claims measure this layer.
INDUCTION_FROM = 1
