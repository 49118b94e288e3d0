"""Training runs for the API: started by a request, trained on threads of their own, watched
through an append-only log of events, and, once finished, models in the registry.

A run trains one or more variants (of one switch, or of an ablation preset) one after the other,
each with the same seed and so the same data order. Runs are bounded: by the server's slots
(a start past them waits in a bounded line; past that it is ``Busy``: 503 with Retry-After),
and each by steps, seconds, parameters and text size. Runs are kept in the data directory
(``services.store``), so a restart keeps them; past the store's bounds the oldest go, and their
links say when (404).

The package follows the seams of a run's life:

- ``runs``: what a run is (its plan, its variants, its event log) and the two refusals;
- ``queue``: the runs in the line for a slot (``services.line``), their places and estimates;
- ``service``: the run table (``TrainService``): what is offered, starting, cancelling,
  evicting, and asking a finished model (decode, folder);
- ``worker``: one run's thread, which trains its variants and logs what happens;
- ``report``: what goes to clients (a run's state, the summaries, the event stream);
- ``kept``: a run written to the store (at each checkpoint, and whole at its end) and read back.

The scores a finished run reports (induction, alignment) are ``attnviz.training.measures``,
which the ablation presets and ``attnviz bench`` share.
"""

from attnviz.services.training.report import thumbs
from attnviz.services.training.runs import LiveRun, NoRoom, RunElsewhere, RunGone, TrainRefused
from attnviz.services.training.service import TrainService

__all__ = [
    "LiveRun",
    "NoRoom",
    "RunElsewhere",
    "RunGone",
    "TrainRefused",
    "TrainService",
    "thumbs",
]
