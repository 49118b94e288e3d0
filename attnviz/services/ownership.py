"""Who may do what with a run (a training run or a recurrent comparison), without accounts.

A run belongs to the visitor who started it (``owner``); its id is unguessable, so the id is a
capability: whoever holds it may read the run (its state, its events, its model, its files),
and is remembered as having opened it (``viewers``). Only its owner, or the operator, may control
it (cancel it, forget it); to anyone else it is a run that does not exist. The operator may also
share it with everyone. The lists (runs, models) show a caller what ``listed_for`` says.

Everything here is plain data (an owner's id, a flag, a set of ids) that a store can keep."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

ID_BYTES = 16  # a run's id: 128 random bits, so that holding it is the capability
MAX_VIEWERS = 1024  # visitors remembered per run as having opened it; the oldest go first


@dataclass(frozen=True)
class Caller:
    """Who is asking: a visitor's id (from its signed cookie or bearer token), whether it holds
    the operator's token, and ``token``: what identifies it to the server again (its signed
    value, which an API client sends as a bearer token). ``new``: its id was made for this
    request (it came with no cookie or token the server signed): a client that keeps none is
    a new visitor at every request. ``address``: the client's address (a trusted proxy's
    ``X-Forwarded-For``, else the peer's), which the per-address caps count by."""

    visitor: str
    operator: bool = False
    token: str = ""
    new: bool = False
    address: str = ""


NOBODY = Caller(visitor="")  # an internal reader (a Learn check): reads, never remembered


@dataclass
class Ownership:
    """A run's owner, whether the operator shared it, and who opened it by its link."""

    owner: str
    shared: bool = False
    viewers: dict[str, None] = field(default_factory=dict)  # ordered: the oldest first

    def may_control(self, caller: Caller) -> bool:
        """Cancel or forget the run: its owner and the operator."""
        return caller.operator or (bool(caller.visitor) and caller.visitor == self.owner)

    def yours(self, caller: Caller) -> bool:
        return bool(caller.visitor) and caller.visitor == self.owner

    def told(self, caller: Caller, *, shared: bool = False) -> dict[str, bool]:
        """What a run's state tells ``caller`` of it: ``yours``, ``can_cancel`` (and, with
        ``shared``, whether it is)."""
        told = {"yours": self.yours(caller), "can_cancel": self.may_control(caller)}
        return {**told, "shared": self.shared} if shared else told

    def listed_for(self, caller: Caller) -> bool:
        """In the caller's lists: its own, opened by its link, shared, or any for the operator."""
        return (
            self.shared
            or self.may_control(caller)
            or (bool(caller.visitor) and caller.visitor in self.viewers)
        )

    def opened_by(self, caller: Caller) -> None:
        """The caller opened the run by its id: remember it (the run is then in its lists)."""
        v = caller.visitor
        if not v or v == self.owner or v in self.viewers:
            return
        self.viewers[v] = None
        while len(self.viewers) > MAX_VIEWERS:
            del self.viewers[next(iter(self.viewers))]

    def merge(self, other: Ownership) -> bool:
        """What another copy of this record adds (the store's: written by another replica):
        shared, and who opened it. Whether anything changed."""
        before = (self.shared, len(self.viewers))
        self.shared = self.shared or other.shared
        for v in other.viewers:
            self.opened_by(Caller(visitor=v))
        return (self.shared, len(self.viewers)) != before


def new_run_id(replica: str = "") -> str:
    """A run's (or a comparison's) id: 32 hex digits (128 bits), after the replica's name when
    there is one (``r1-...``: a proxy routes the run's requests to the replica that has it)."""
    token = secrets.token_hex(ID_BYTES)
    return f"{replica}-{token}" if replica else token
