"""Runs kept in the data directory (``ATTNVIZ_DATA_DIR``), so that a restart keeps them and
their links.

- ``<data_dir>/runs/<id>/``: one folder per run (a training run or a recurrent comparison):
  ``request.json`` (what was asked), ``run.json`` (its state, its metrics: history,
  checkpoints' thumbnails, claims), ``access.json`` (its ownership record) and, for a finished
  training run, one model folder per variant (``variant-<i>/``, as ``training.export`` writes
  it: config.json, model.safetensors, tokenizer.json).
- ``<data_dir>/runs.sqlite3``: the index (SQLite in WAL mode, so that replicas sharing the
  directory read and write it at once): id, kind, replica, owner, shared, openers, state, step,
  created and finished times, bytes on disk, when and why a run was removed (its row stays
  as a tombstone, so that its link can say so), the name its owner gave it, when its owner was
  first told it ended (``seen``: until then the count and the budget never remove it),
  which server holds a run not ended (``claimer``, ``lease``: below) and the client address
  that started a run not ended (``address``: the per-address cap counts it after a restart;
  emptied once the run ends). Its layout's version is
  SQLite's ``user_version`` (``SCHEMA_VERSION``); an index of an older layout is brought up to
  date in place when it is first opened (``MIGRATIONS``); one of a newer layout (another
  attnviz's, with newer code, found at open or while this server runs) is read and no longer
  written: the store logs it once and refuses every write (``NewerIndex``).

One writer per run: a row waiting or training names the process that holds it (``claimer``:
host, pid and a random tag, one per store) and a lease that process renews every ``BEAT_S``
while it holds any (``LEASE_S``; the host's ``ATTNVIZ_DATA_LEASE_S``). Only its holder starts
a waiting run (``claim``: an UPDATE
from ``queued`` that names it); another server on the directory takes a run over
(``take_over``, an UPDATE that names the old holder, which only one process wins) or calls it
interrupted (``interrupt``) only when its holder is gone: a process of this host that is no
more, or a lease past its time. A server that sees runs of its name held by another
(``held_by_others``) looks again every beat, and takes them over once their holder is gone.

Every file is written whole (``datadir.write_atomic``: a temporary file in the same folder,
fsync, rename); a model folder is written beside its place and renamed into it; a run's folder
is complete before its row says it is finished. Every file is 0600 and every folder 0700 (the
data directory's rule, ``datadir``), a model folder's files too; an older store's are made so
when this one first opens it. A folder that cannot be read is skipped with a log line by
whoever reads it (``read_json`` raises ``StoreError``)."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path

from attnviz.services.datadir import connect, immediate, keep_private, private_dir, write_atomic
from attnviz.services.ownership import Ownership

log = logging.getLogger(__name__)

INDEX = "runs.sqlite3"
RUNS = "runs"
BUSY_MS = 10_000  # a writer waits this long for another (a replica) to finish its write

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,             -- 'run' or 'comparison'
    replica TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    shared INTEGER NOT NULL DEFAULT 0,
    openers TEXT NOT NULL DEFAULT '[]',  -- JSON: the visitors who opened it by its link
    state TEXT NOT NULL,            -- queued, running, done, cancelled, failed, interrupted
    step INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,          -- Unix seconds
    finished REAL,
    bytes INTEGER NOT NULL DEFAULT 0,
    removed REAL,                   -- a tombstone: when it was evicted
    removed_why TEXT,
    title TEXT,                     -- the name its owner gave it; NULL: what it trains
    seen REAL,                      -- when its owner was first told it ended; NULL: not yet
    claimer TEXT,                   -- the process holding it while it waits or trains
    lease REAL,                     -- Unix seconds: its holder's claim holds until then
    address TEXT NOT NULL DEFAULT ''  -- the client address that started it, until it ends
)
"""
# The index's layout (PRAGMA user_version): 0, the first (no title); 1, the owner's ``title``;
# 2, ``seen``: when its owner was first told the run ended (eviction spares it until then).
# 3, the holder of a run not ended (``claimer``, ``lease``). 4, the client address that started
# a run not ended (``address``: the per-address cap counts a run put back in line by it).
SCHEMA_VERSION = 4
LEASE_S = 30.0  # a claim holds this long past its holder's last beat
BEAT_S = 10.0  # how often a process renews the leases of the runs it holds
HOST = socket.gethostname()
# A host's setting named in a removed run's reason, as attnviz stored it before its reasons
# were said in a learner's words ("after 30 days (ATTNVIZ_DATA_MAX_AGE_DAYS)").
_SETTING_NAMED = re.compile(r" \(ATTNVIZ_[A-Z_]+\)")


def _add_title(conn: sqlite3.Connection) -> None:
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    if "title" not in columns:
        conn.execute("ALTER TABLE runs ADD COLUMN title TEXT")


def _add_seen(conn: sqlite3.Connection) -> None:
    """``seen``; the runs that had ended count as seen when they ended (their owners were
    shown them before the index kept this), so that they stay evictable."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    if "seen" not in columns:
        conn.execute("ALTER TABLE runs ADD COLUMN seen REAL")
    conn.execute("UPDATE runs SET seen = finished WHERE finished IS NOT NULL AND seen IS NULL")


def _add_claims(conn: sqlite3.Connection) -> None:
    """``claimer`` and ``lease``: NULL for the rows before (a run going then is no one's)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    for name, kind in (("claimer", "TEXT"), ("lease", "REAL")):
        if name not in columns:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")


def _add_address(conn: sqlite3.Connection) -> None:
    """``address``: empty for the rows before (a run an older server left waiting is counted
    by no address, as it was then)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    if "address" not in columns:
        conn.execute("ALTER TABLE runs ADD COLUMN address TEXT NOT NULL DEFAULT ''")


# What brings an index of version ``v - 1`` to ``v``, in one transaction with the version.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_title,
    2: _add_seen,
    3: _add_claims,
    4: _add_address,
}


def migrate(conn: sqlite3.Connection) -> int:
    """The index made (a new one at ``SCHEMA_VERSION``) or brought up to it in place, in one
    transaction: a replica opening it at the same moment waits, then finds it done. One of a
    later version (a newer attnviz's) is left as it is (a ``RunStore`` then only reads it:
    ``NewerIndex``). Returns the version it was at."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        was = int(conn.execute("PRAGMA user_version").fetchone()[0])
        made = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
        ).fetchone()
        if made is None:
            conn.execute(SCHEMA)
        else:
            for version in range(was + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](conn)
        if was < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if made is not None and was < SCHEMA_VERSION:
        log.info("the run index went from version %d to %d", was, SCHEMA_VERSION)
    return was


class StoreError(Exception):
    """A run folder (or a file in it) that is missing or cannot be read."""


# How long a start refused because the index is a newer attnviz's tells its client to wait:
# until an operator has given this server a data directory of its own, or upgraded it.
NEWER_RETRY_S = 600
_NEWER_TOLD: set[Path] = set()  # the indexes this process has logged as a newer attnviz's
_NEWER_LOCK = threading.Lock()


class NewerIndex(sqlite3.DatabaseError):
    """The index is of a newer layout than this server's (another attnviz, with newer code,
    opened the data directory and migrated it): this store no longer writes runs (an
    ``sqlite3.Error``, so that every caller that goes on without the store goes on)."""

    def __init__(self) -> None:
        super().__init__(
            "this server cannot save runs right now: its data directory is in use by a newer "
            "version of attnviz; ask its operator"
        )


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    replica: str
    owner: str
    shared: bool
    openers: list[str]
    state: str
    step: int
    created: float
    finished: float | None
    bytes: int
    removed: float | None
    removed_why: str | None
    title: str | None = None  # the name its owner gave it; None: what it trains
    seen: float | None = None  # when its owner was first told it ended; None: not yet
    claimer: str | None = None  # the process holding it while it waits or trains
    lease: float | None = None  # until when its holder's claim holds (Unix seconds)
    address: str = ""  # the client address that started it, while it waits or trains

    def access(self) -> Ownership:
        return Ownership(owner=self.owner, shared=self.shared,
                         viewers=dict.fromkeys(self.openers))  # fmt: skip

    @property
    def removed_text(self) -> str:
        """``run: <id> was removed on <date> UTC to make room ...``'s end: when, and why, in
        its owner's words (a reason stored by an older attnviz named the host's setting, in
        parentheses: left out here)."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.removed or 0))
        why = _SETTING_NAMED.sub("", self.removed_why or "")
        return f"was removed on {when} {why}".rstrip()


def folder_bytes(folder: Path) -> int:
    """What ``folder`` takes on disk as ``du -sb`` counts it: the apparent size of every file
    and folder in it, itself included, links not followed."""
    total = 0
    for dirpath, dirs, files in os.walk(folder):
        links = [d for d in dirs if (Path(dirpath) / d).is_symlink()]  # never walked
        for name in [".", *links, *files]:
            with suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_size
    return total


class RunStore:
    """The run folders and their index under ``root`` (the data directory)."""

    def __init__(self, root: Path, lease_s: float = LEASE_S) -> None:
        """Nothing is written until a run is: a server that never trains leaves the directory
        as it was. ``lease_s``: how long a claim holds past its holder's last beat (a beat
        every third of it)."""
        self.root = Path(root)
        self.runs = self.root / RUNS
        self.path = self.root / INDEX
        self._local = threading.local()
        self._kept_private = False  # the runs of an older store made 0600 and 0700, once
        # This store's process, as the rows it holds name it (``claim``), and its beat.
        self.claimer = f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease_s = lease_s
        self.beat_s = lease_s * BEAT_S / LEASE_S
        self._beat_lock = threading.Lock()
        self._beating: threading.Thread | None = None
        self._woken = False
        # The version of a newer attnviz's index, once found (at open or at a write): from
        # then on this store reads and never writes (``NewerIndex``).
        self.newer: int | None = None

    # -- the index ------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            private_dir(self.runs)
            if not self._kept_private:
                keep_private(self.runs)
                self._kept_private = True
            conn = connect(self.path, timeout=BUSY_MS / 1000)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            if (was := migrate(conn)) > SCHEMA_VERSION:
                self._found_newer(was)
        return conn

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; ``NewerIndex`` (nothing written) where the index is, or has
        become while this server ran, a newer attnviz's."""
        if self.newer is not None:
            raise NewerIndex()
        with immediate(self._conn()) as conn:
            self._check_version(conn)
            yield conn

    @property
    def read_only(self) -> bool:
        """Whether this store stopped writing: the index is a newer attnviz's."""
        return self.newer is not None

    def check_writable(self) -> None:
        """``NewerIndex`` where the index is (now) a newer attnviz's: what a run about to be
        started or written asks first, so that nothing of it is written."""
        if self.newer is not None:
            raise NewerIndex()
        if self.exists:
            self._check_version(self._conn())

    def _check_version(self, conn: sqlite3.Connection) -> None:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            self._found_newer(version)
        if self.newer is not None:
            raise NewerIndex()

    def _found_newer(self, version: int) -> None:
        """No write from now on, and one error in the log: the first time this process (any of
        its stores: the training's, the comparisons') finds this index so."""
        self.newer = version
        with _NEWER_LOCK:
            if self.path in _NEWER_TOLD:
                return
            _NEWER_TOLD.add(self.path)
        log.error(
            "the run index %s is of version %d, newer than this server's %d: another attnviz, "
            "with newer code, uses this data directory. This server reads it and no longer "
            "writes to it: its runs go on in memory only and new ones are refused (503) until "
            "it is restarted with that attnviz or with a data directory of its own "
            "(ATTNVIZ_DATA_DIR)", self.path, version, SCHEMA_VERSION)  # fmt: skip

    @staticmethod
    def _row(r: sqlite3.Row) -> Row:
        try:
            openers = json.loads(r["openers"])
        except ValueError:
            openers = []
        return Row(id=r["id"], kind=r["kind"], replica=r["replica"], owner=r["owner"],
                   shared=bool(r["shared"]), openers=[str(o) for o in openers], state=r["state"],
                   step=r["step"], created=r["created"], finished=r["finished"], bytes=r["bytes"],
                   removed=r["removed"], removed_why=r["removed_why"],
                   title=r["title"], seen=r["seen"], claimer=r["claimer"],
                   lease=r["lease"], address=r["address"])  # fmt: skip

    def row(self, run_id: str) -> Row | None:
        if not self.exists:
            return None
        r = self._conn().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return None if r is None else self._row(r)

    def kept(self, run_id: str, kind: str) -> Row | None:
        """The row of ``run_id`` when it is a ``kind`` that ended and is kept (any replica's:
        what a replica that does not hold it reads back); None otherwise (no such row, another
        kind's, removed, still training or waiting on its replica) or where the index cannot
        be read."""
        row = self._find(run_id)
        if row is None or row.kind != kind or row.removed is not None:
            return None
        return None if row.state in ("queued", "running") else row

    def tombstone(self, run_id: str, kind: str) -> Row | None:
        """The row of ``run_id`` when it is a ``kind`` that was removed (its link says when and
        why); None otherwise or where the index cannot be read."""
        row = self._find(run_id)
        return row if row is not None and row.kind == kind and row.removed is not None else None

    def _find(self, run_id: str) -> Row | None:
        try:
            return self.row(run_id)
        except (sqlite3.Error, OSError, StoreError):
            return None

    def rows(self, kind: str) -> list[Row]:
        """Every row of ``kind``, tombstones included, oldest first."""
        if not self.exists:
            return []
        got = self._conn().execute(
            "SELECT * FROM runs WHERE kind = ? ORDER BY created, id", (kind,)
        )
        return [self._row(r) for r in got.fetchall()]

    def finished_rows(self, kind: str) -> list[Row]:
        """The rows of ``kind`` whose runs ended and are kept (no tombstones), oldest first:
        what any replica may serve."""
        if not self.exists:
            return []
        got = self._conn().execute(
            "SELECT * FROM runs WHERE kind = ? AND finished IS NOT NULL AND removed IS NULL "
            "ORDER BY created, id",
            (kind,),
        )
        return [self._row(r) for r in got.fetchall()]

    def put(self, run_id: str, kind: str, *, replica: str, access: Ownership, state: str,
            step: int, created: float, finished: float | None = None,
            title: str | None = None, address: str = "") -> None:  # fmt: skip
        """The run's row, as it is now (its bytes on disk counted when it is finished);
        ``title``, its owner's name for it, only where the row is new (``put_title`` renames);
        ``address``, the client address that started it, kept while it waits or trains (the
        per-address cap counts it after a restart) and emptied once it has ended. A new row is
        this store's (``claimer``); a row it holds has its lease renewed."""
        size = folder_bytes(self.folder(run_id)) if finished is not None else 0
        with self._db() as db:
            db.execute(
                "INSERT INTO runs (id, kind, replica, owner, shared, openers, state, step, "
                "created, finished, bytes, title, claimer, lease, address) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET owner = excluded.owner, shared = excluded.shared, "
                "openers = excluded.openers, state = excluded.state, step = excluded.step, "
                "finished = excluded.finished, bytes = excluded.bytes, lease = CASE WHEN "
                "runs.claimer = excluded.claimer THEN excluded.lease ELSE runs.lease END, "
                "address = CASE WHEN excluded.finished IS NULL THEN runs.address ELSE '' END",
                (run_id, kind, replica, access.owner, int(access.shared),
                 json.dumps(list(access.viewers)), state, step, created, finished, size, title,
                 self.claimer, time.time() + self.lease_s, "" if finished is not None else address),
            )  # fmt: skip
        if finished is None:
            self._beat()

    def measure(self, run_id: str) -> int:
        """The bytes of the run's folder as it is now (``folder_bytes``) into its row, once its
        folder is final (a run's checkpoints removed at its end): what the disk budget counts.
        Returns them."""
        size = folder_bytes(self.folder(run_id))
        with self._db() as db:
            db.execute("UPDATE runs SET bytes = ? WHERE id = ? AND removed IS NULL",
                       (size, run_id))  # fmt: skip
        return size

    def mark_seen(self, run_id: str) -> bool:
        """Its owner was told the run ended (read its final state): from now on eviction may
        remove it. Whether its row says so (it is kept and ended)."""
        with self._db() as db:
            db.execute(
                "UPDATE runs SET seen = ? WHERE id = ? AND seen IS NULL AND finished IS NOT NULL",
                (time.time(), run_id),
            )
            got = db.execute("SELECT seen FROM runs WHERE id = ?", (run_id,)).fetchone()
        return got is not None and got["seen"] is not None

    def told(self, run_id: str, kind: str = "run") -> bool:
        """``mark_seen`` where the index may be written (not a newer attnviz's); where it cannot
        be, False and one warning line, and the run stays unseen (kept from eviction)."""
        if self.read_only:
            return False  # a newer attnviz's index: nothing written (the store said so, once)
        try:
            return self.mark_seen(run_id)
        except (sqlite3.Error, OSError, StoreError) as exc:
            log.warning("%s %s: its owner's look not stored (%s)", kind, run_id, exc)
            return False

    def held_bytes(self) -> int:
        """The bytes of the ended runs eviction may not remove yet: those whose owners have not
        been told they ended."""
        if not self.exists:
            return 0
        got = self._conn().execute(
            "SELECT COALESCE(SUM(bytes), 0) FROM runs WHERE finished IS NOT NULL AND "
            "removed IS NULL AND seen IS NULL AND owner != ''"
        )
        return int(got.fetchone()[0])

    def put_title(self, run_id: str, title: str | None) -> bool:
        """The name its owner gave the run (None: back to what it trains). Whether it has a
        row to keep it in."""
        with self._db() as db:
            got = db.execute("UPDATE runs SET title = ? WHERE id = ?", (title, run_id))
            return got.rowcount > 0

    def put_access(self, run_id: str, access: Ownership) -> None:
        """Who may read it changed (opened by a link, shared): its row and its record, with
        what the row says already (another replica's openers are kept, never written over)."""
        with self._db() as db:
            was = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            access = replace(access, viewers=dict(access.viewers))
            if was is not None:
                access.merge(self._row(was).access())
            db.execute(
                "UPDATE runs SET owner = ?, shared = ?, openers = ? WHERE id = ?",
                (access.owner, int(access.shared), json.dumps(list(access.viewers)), run_id),
            )
        if self.folder(run_id).is_dir():
            self.write_json(run_id, "access.json", access_record(access))

    def interrupt(self, kind: str, replica: str, *, warn: bool = True) -> list[str]:
        """Every ``running`` row of ``kind`` that ``replica`` (this server's name) started and
        whose holder is gone: its run was going when that server stopped, and is now
        ``interrupted``. One held by a process still going (another server on this directory
        under the same name) is left to it, with a warning (with ``warn``). Returns the ids
        interrupted."""
        if not self.exists:
            return []
        with self._db() as db:
            rows = [self._row(r) for r in db.execute(
                "SELECT * FROM runs WHERE kind = ? AND replica = ? AND state = 'running' "
                "AND removed IS NULL", (kind, replica))]  # fmt: skip
            ids = []
            for row in rows:
                if row.claimer == self.claimer or self.held_elsewhere(row):
                    continue  # its own, or another's that is there
                got = db.execute(
                    "UPDATE runs SET state = 'interrupted', finished = ?, address = '' WHERE "
                    "id = ? AND state = 'running' AND claimer IS ? AND lease IS ?",
                    (time.time(), row.id, row.claimer, row.lease),
                )
                if got.rowcount:
                    ids.append(row.id)
        if warn:
            self.warn_shared(rows)
        return ids

    def held_by_others(self, kind: str, replica: str) -> list[Row]:
        """The rows of ``kind`` under ``replica`` (this server's name) waiting or training that
        another process still going holds (``held_elsewhere``)."""
        if not self.exists:
            return []
        got = self._conn().execute(
            "SELECT * FROM runs WHERE kind = ? AND replica = ? AND state IN ('queued', "
            "'running') AND removed IS NULL", (kind, replica))  # fmt: skip
        return [row for row in map(self._row, got.fetchall()) if self.held_elsewhere(row)]

    # -- who holds a run ------------------------------------------------------------------------

    def held_elsewhere(self, row: Row) -> bool:
        """Whether another process that is still going holds ``row``'s run: its lease holds,
        and, on this host, its process is there (a process gone, or another store of this very
        process, is no holder: a server started over it)."""
        if not row.claimer or row.claimer == self.claimer:
            return False
        host, _, rest = row.claimer.partition(":")
        pid_text, _, _ = rest.partition(":")
        if host == HOST:
            if not pid_text.isdigit():
                return False
            pid = int(pid_text)
            if pid == os.getpid() or not _process_is_there(pid):
                return False
        return row.lease is not None and row.lease > time.time()

    def warn_shared(self, rows: list[Row]) -> None:
        """A warning for the runs of ``rows`` another server still going holds."""
        others = sorted({r.claimer or "" for r in rows if self.held_elsewhere(r)})
        if others:
            log.warning(
                "another attnviz server (%s) is using this data directory under the same "
                "ATTNVIZ_REPLICA: its runs are left to it; give each server its own "
                "ATTNVIZ_REPLICA (or data directory) so that a proxy can send each run's "
                "requests to the server that holds it", ", ".join(others))  # fmt: skip

    def take_over(self, row: Row) -> bool:
        """The waiting run ``row`` names, whose holder is gone (``held_elsewhere`` is False),
        now this store's: one UPDATE naming the holder ``row`` read, which only one process
        wins. Whether this one did."""
        if row.claimer == self.claimer:
            return True
        if self.held_elsewhere(row):
            return False
        with self._db() as db:
            got = db.execute(
                "UPDATE runs SET claimer = ?, lease = ? WHERE id = ? AND state = 'queued' AND "
                "removed IS NULL AND claimer IS ? AND lease IS ?",
                (self.claimer, time.time() + self.lease_s, row.id, row.claimer, row.lease),
            )  # fmt: skip
            won = got.rowcount > 0
        if won:
            self._beat()
        return won

    def claim(self, run_id: str) -> bool:
        """The waiting run ``run_id``, which this store holds, starts: its row goes from
        ``queued`` to ``running`` where it is still this store's. Whether it is this store's
        to train (False: another server took it over, or it ended meanwhile); a run with no
        row (its write failed) is only this process's."""
        with self._db() as db:
            got = db.execute(
                "UPDATE runs SET state = 'running', lease = ? WHERE id = ? AND state = 'queued' "
                "AND removed IS NULL AND claimer = ?",
                (time.time() + self.lease_s, run_id, self.claimer),
            )  # fmt: skip
            if got.rowcount:
                return True
            return db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None

    def beat(self) -> int:
        """The leases of the runs this store holds, renewed: how many it holds."""
        with self._db() as db:
            got = db.execute(
                "UPDATE runs SET lease = ? WHERE claimer = ? AND state IN ('queued', 'running') "
                "AND removed IS NULL",
                (time.time() + self.lease_s, self.claimer),
            )  # fmt: skip
            return got.rowcount

    def _beat(self) -> None:
        """The beat goes on (a thread, while this store holds a run; one at most)."""
        with self._beat_lock:
            self._woken = True
            if self._beating is None:
                self._beating = threading.Thread(target=self._beats, name="run-claims",
                                                 daemon=True)  # fmt: skip
                self._beating.start()

    def _beats(self) -> None:
        while True:
            time.sleep(self.beat_s)
            try:
                held = self.beat()
            except NewerIndex:
                held = 0  # nothing more to renew: the leases are the newer attnviz's to judge
            except (sqlite3.Error, OSError) as exc:
                log.warning("the leases of this server's runs not renewed (%s)", exc)
                held = 1
            with self._beat_lock:
                if not held and not self._woken:
                    self._beating = None
                    return
                self._woken = False

    def remove(self, run_id: str, why: str, *, forget: bool = False) -> None:
        """Delete the run's folder; its row stays as a tombstone saying when and ``why`` (or
        goes too, with ``forget``: its owner forgot it)."""
        shutil.rmtree(self.folder(run_id), ignore_errors=True)
        with self._db() as db:
            if forget:
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            else:
                db.execute(
                    "UPDATE runs SET removed = ?, removed_why = ?, bytes = 0 WHERE id = ?",
                    (time.time(), why, run_id),
                )

    # -- the folders ----------------------------------------------------------------------------

    def folder(self, run_id: str) -> Path:
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            raise StoreError(f"{run_id!r} is not a run id")
        return self.runs / run_id

    def write_json(self, run_id: str, name: str, data: object) -> None:
        if self.newer is not None:
            raise NewerIndex()
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        write_atomic(self.folder(run_id) / name, text.encode())

    def read_json(self, run_id: str, name: str) -> dict:
        path = self.folder(run_id) / name
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: {exc}") from exc
        if not isinstance(data, dict):
            raise StoreError(f"{path}: not a JSON object")
        return data

    def write_folder(self, run_id: str, name: str, write: Callable[[Path], None]) -> Path:
        """A folder in the run's, written whole: ``write`` fills a temporary one beside it,
        which is then renamed into place."""
        if self.newer is not None:
            raise NewerIndex()
        final = self.folder(run_id) / name
        tmp = final.with_name(f".{name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        private_dir(tmp)
        try:
            write(tmp)
            keep_private(tmp)  # what ``write`` wrote (safetensors, a tokenizer) is 0644
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final

    # -- eviction -------------------------------------------------------------------------------

    def evict(
        self, *, keep: int, max_age_days: float | None, max_mb: float, spare: Collection[str] = ()
    ) -> list[tuple[str, str]]:
        """Remove the finished runs past the bounds, oldest unshared first, shared last: those
        older than ``max_age_days``, those past the newest ``keep`` of each kind, then while
        their folders are over ``max_mb``. Never one in ``spare`` (the run that just ended);
        the count and the budget never remove one its owner has not been told ended (not
        ``seen``), though it counts. Each leaves its row as a tombstone saying when and why.
        Returns (id, kind) of each removed."""
        rows = [r for r in self.rows_all() if r.removed is None and r.finished is not None]
        order = sorted(rows, key=lambda r: (r.shared, r.created))
        # Each removed run, why in its owner's words (its link's 404 says it), and the host's
        # setting behind it, which only the log names.
        gone: list[tuple[Row, str, str]] = []
        if max_age_days is not None:
            limit = time.time() - max_age_days * 86_400
            gone += [(r, f"after {max_age_days:g} days, as long as this server keeps "
                         f"{plural(r.kind)}", "ATTNVIZ_DATA_MAX_AGE_DAYS")
                     for r in order if r.created < limit and r.id not in spare]  # fmt: skip
        aged = {g.id for g, _, _ in gone}
        left = [r for r in order if r.id not in aged]

        def may_go(r: Row) -> bool:
            return r.id not in spare and (r.seen is not None or not r.owner)

        for kind in sorted({r.kind for r in left}):
            mine = [r for r in left if r.kind == kind]
            over = len(mine) - keep
            for r in [r for r in mine if may_go(r)][: max(0, over)]:
                gone.append((r, f"to make room for newer {plural(kind)}: this server keeps "
                                f"its last {keep:,} {plural(kind)}",
                             "ATTNVIZ_TRAIN_KEEP_RUNS"))  # fmt: skip
                left.remove(r)
        budget = max_mb * 2**20
        held = sum(r.bytes for r in left)
        for r in [r for r in left if may_go(r)]:
            if held <= budget:
                break
            gone.append((r, f"to make room for newer {plural(r.kind)}: this server keeps its "
                            f"runs and comparisons within {max_mb:,g} MB of disk",
                         "ATTNVIZ_DATA_MAX_MB"))  # fmt: skip
            held -= r.bytes
        for r, why, setting in gone:
            self.remove(r.id, why)
            log.info("%s %s removed from the store %s (%s)", r.kind, r.id, why, setting)
        return [(r.id, r.kind) for r, _, _ in gone]

    def rows_all(self) -> list[Row]:
        if not self.exists:
            return []
        got = self._conn().execute("SELECT * FROM runs ORDER BY created, id")
        return [self._row(r) for r in got.fetchall()]


def _process_is_there(pid: int) -> bool:
    """Whether process ``pid`` of this host is there and not a zombie (killed, not reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: there
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def access_record(access: Ownership) -> dict:
    return {"owner": access.owner, "shared": access.shared, "openers": list(access.viewers)}


def plural(kind: str) -> str:
    return {"run": "runs", "comparison": "comparisons"}.get(kind, kind)


def claimed(store: RunStore | None, run_id: str) -> bool:
    """Whether the waiting run ``run_id`` is this server's to start: its row goes from queued to
    running where ``store`` still holds it (``RunStore.claim``: one writer per run). No store,
    or an index that cannot be written, leaves it this process's alone."""
    if store is None:
        return True
    try:
        return store.claim(run_id)
    except (sqlite3.Error, OSError) as exc:
        log.warning("run %s: its start not stored (%s)", run_id, exc)
        return True
