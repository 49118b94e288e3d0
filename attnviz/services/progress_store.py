"""The Learn path's progress the server keeps per visitor: ``<data_dir>/learn.sqlite3`` (SQLite
in WAL mode, as the runs' index, so that replicas sharing the directory read and write it at
once; each change is one transaction, so a reader never meets half of one).

One row per learner: the visitor's id (never shown: the class view names a learner by the
nickname they gave, else ``Learner <n>``), ``n`` (numbered in the order first seen, never
reused), the nickname, when first and last seen (Unix seconds), and the progress as JSON
(``{"last": <step id>, "steps": {<step id>: {"done": [<task id>...], "tried": [...]}}}``: what
the server's own answers to the learner's checks said, never what a browser claims; with
``"open": <step id>``, the step their page last said it opened, and ``"looked": true`` once
they checked someone else's work: keys a record may lack, read as none and false, so a file
written before them needs no migration). Beside it,
since schema version 2, the learner's tries at each task (``tries``: how many different states
of their lab were checked with the task not done, the first and the latest, Unix seconds), from
which the class view says who is stuck.

The file has a schema version (``PRAGMA user_version``): ``MIGRATIONS[i]`` brings a file at
version ``i`` to ``i + 1``, run with the version's bump in one transaction, so that a file is at
one version or the next, never between; a file a newer attnviz wrote is left as it is (logged),
and progress is then not kept. Nothing is written until a learner is: a server whose visitors
never check a task leaves the directory as it was.

Bounded: at most ``max_learners`` rows (past it the one seen least recently goes), none unseen
for ``keep_days`` (not read, and deleted when the next learner comes), at most ``max_bytes`` per
learner (a change that would take a record past it is not written); a learner's tries are one
row per task of the path at most (the caller counts only the steps' own task ids)."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attnviz.services.datadir import connect, immediate

log = logging.getLogger(__name__)

FILE = "learn.sqlite3"
BUSY_MS = 10_000  # a writer waits this long for another (a replica) to finish its write

# MIGRATIONS[i]: the statements that bring a file at schema version i to version i + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE learners (
            n INTEGER PRIMARY KEY AUTOINCREMENT,  -- "Learner n", in the order first seen
            visitor TEXT NOT NULL UNIQUE,         -- the visitor's id (never shown)
            nickname TEXT,                        -- the name they gave, or NULL
            first_seen REAL NOT NULL,             -- Unix seconds
            last_seen REAL NOT NULL,
            progress TEXT NOT NULL DEFAULT '{}'   -- JSON: {"last", "steps": {id: {done, tried}}}
        )""",
        "CREATE INDEX learners_last_seen ON learners (last_seen)",
    ),
    (
        """CREATE TABLE tries (
            learner INTEGER NOT NULL REFERENCES learners (n) ON DELETE CASCADE,
            step TEXT NOT NULL,
            task TEXT NOT NULL,
            tries INTEGER NOT NULL,               -- different states checked, the task not done
            first_try REAL NOT NULL,              -- Unix seconds
            last_try REAL NOT NULL,
            state TEXT NOT NULL DEFAULT '',       -- a digest of the latest state tried
            PRIMARY KEY (learner, step, task)
        )""",
        # What a version 1 file knew: each task tried and not done, at least once, by the time
        # the learner was last seen.
        """INSERT INTO tries (learner, step, task, tries, first_try, last_try)
        SELECT l.n, s.key, t.value, 1, l.last_seen, l.last_seen
        FROM learners AS l,
            json_each(CASE WHEN json_valid(l.progress) THEN l.progress ELSE '{}' END,
                      '$.steps') AS s,
            json_each(CASE WHEN s.type = 'object' THEN s.value ELSE '{}' END, '$.tried') AS t
        WHERE t.type = 'text' AND NOT EXISTS (
            SELECT 1 FROM json_each(CASE WHEN s.type = 'object' THEN s.value ELSE '{}' END,
                                    '$.done') AS d
            WHERE d.value = t.value)""",
    ),
)
VERSION = len(MIGRATIONS)


class ProgressUnavailable(Exception):
    """The file cannot be read or written here (another version's, a disk that refuses); the
    message says why, without a path."""


class TooLarge(Exception):
    """A learner's record would take more bytes than the cap."""


@dataclass(frozen=True)
class Tries:
    """A learner's tries at one task: ``count`` different states of their lab checked with the
    task not done, the first and the latest of them (Unix seconds)."""

    count: int
    first: float
    last: float


@dataclass(frozen=True)
class Learner:
    n: int
    visitor: str
    nickname: str | None
    first_seen: float
    last_seen: float
    progress: dict = field(default_factory=dict)
    tries: dict[tuple[str, str], Tries] = field(default_factory=dict)  # (step, task): tries


def migrate(conn: sqlite3.Connection, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> int:
    """Bring the file to the last version of ``migrations`` (each step with its version's bump,
    all in one transaction). Returns the version it was at; ``ProgressUnavailable`` for a file
    of a later version (left as it is)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        was = too_new(conn, len(migrations))
        for version in range(was, len(migrations)):
            for statement in migrations[version]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return was


def too_new(conn: sqlite3.Connection, version: int) -> int:
    """The file's version; ``ProgressUnavailable`` past ``version`` (a newer attnviz's)."""
    was = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if was > version:
        raise ProgressUnavailable(
            f"its file is of schema version {was}, written by a newer attnviz (this one reads "
            f"versions up to {version}); it is left as it is"
        )
    return was


def record_bytes(nickname: str | None, progress: dict) -> int:
    """What a learner's record takes: its nickname and its progress, as UTF-8 JSON."""
    text = json.dumps(progress, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode()) + len((nickname or "").encode())


class ProgressStore:
    """The learners' progress under ``root`` (the data directory)."""

    def __init__(
        self,
        root: Path,
        *,
        max_learners: int,
        keep_days: float | None,
        max_bytes: int,
        migrations: Sequence[Sequence[str]] = MIGRATIONS,
    ) -> None:
        self.path = Path(root) / FILE
        self.max_learners = max_learners
        self.keep_days = keep_days
        self.max_bytes = max_bytes
        self.migrations = migrations
        self._local = threading.local()
        self._broken: str | None = None  # why the file cannot be used until the next start

    # -- the file -------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._broken is not None:
            raise ProgressUnavailable(self._broken)
        try:
            conn = connect(self.path, BUSY_MS / 1000)  # 0600 in a 0700 folder
        except (sqlite3.Error, OSError) as exc:
            raise ProgressUnavailable(f"its file cannot be opened ({type(exc).__name__})") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            too_new(conn, len(self.migrations))  # before WAL, which marks the file's header
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")  # a learner forgotten takes their tries
            conn.row_factory = sqlite3.Row
            was = migrate(conn, self.migrations)
        except (sqlite3.Error, ProgressUnavailable) as exc:
            conn.close()
            if isinstance(exc, ProgressUnavailable) or type(exc) is sqlite3.DatabaseError:
                # Another version's file, or not SQLite at all: so until the next start.
                why = str(exc) if isinstance(exc, ProgressUnavailable) else "it is not SQLite"
                self._broken = why
                log.warning("%s: Learn progress is not kept: %s", self.path, why)
                raise ProgressUnavailable(why) from None
            raise ProgressUnavailable(f"its file cannot be opened ({type(exc).__name__})") from exc
        if was != len(self.migrations):
            log.info("%s: schema version %d -> %d", self.path, was, len(self.migrations))
        self._local.conn = conn
        return conn

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            with immediate(conn):
                yield conn
        except sqlite3.Error as exc:
            raise ProgressUnavailable(f"its file cannot be written ({type(exc).__name__})") from exc

    def _since(self, now: float) -> float:
        """The oldest last_seen still kept."""
        return now - self.keep_days * 86_400 if self.keep_days is not None else float("-inf")

    @staticmethod
    def _learner(r: sqlite3.Row, tries: dict[tuple[str, str], Tries] | None = None) -> Learner:
        try:
            progress = json.loads(r["progress"])
        except ValueError:
            progress = {}
        return Learner(n=r["n"], visitor=r["visitor"], nickname=r["nickname"],
                       first_seen=r["first_seen"], last_seen=r["last_seen"],
                       progress=progress if isinstance(progress, dict) else {},
                       tries=tries or {})  # fmt: skip

    @staticmethod
    def _tries(db: sqlite3.Connection, ns: list[int]) -> dict[int, dict[tuple[str, str], Tries]]:
        """The tries of the learners numbered ``ns``, by learner."""
        out: dict[int, dict[tuple[str, str], Tries]] = {n: {} for n in ns}
        for i in range(0, len(ns), 500):  # well under SQLite's cap on a statement's variables
            chunk = ns[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in db.execute(
                "SELECT learner, step, task, tries, first_try, last_try FROM tries "
                f"WHERE learner IN ({marks})",
                chunk,
            ):
                out[r["learner"]][(r["step"], r["task"])] = Tries(
                    r["tries"], r["first_try"], r["last_try"]
                )
        return out

    def _rows(self, db: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[Learner]:
        tries = self._tries(db, [r["n"] for r in rows])
        return [self._learner(r, tries[r["n"]]) for r in rows]

    # -- reading --------------------------------------------------------------------------------

    def get(self, visitor: str, now: float | None = None) -> Learner | None:
        """The learner ``visitor`` is, or None (never recorded, or forgotten)."""
        if not visitor or not self.exists:
            return None
        now = time.time() if now is None else now
        try:
            db = self._conn()
            r = db.execute(
                "SELECT * FROM learners WHERE visitor = ? AND last_seen >= ?",
                (visitor, self._since(now)),
            ).fetchone()
            return None if r is None else self._rows(db, [r])[0]
        except sqlite3.Error as exc:
            raise ProgressUnavailable(f"its file cannot be read ({type(exc).__name__})") from exc

    def learners(self, now: float | None = None) -> list[Learner]:
        """Every learner kept, the one seen most recently first."""
        if not self.exists:
            return []
        now = time.time() if now is None else now
        try:
            db = self._conn()
            rows = db.execute(
                "SELECT * FROM learners WHERE last_seen >= ? ORDER BY last_seen DESC, n DESC "
                "LIMIT ?",
                (self._since(now), self.max_learners),
            ).fetchall()
            return self._rows(db, rows)
        except sqlite3.Error as exc:
            raise ProgressUnavailable(f"its file cannot be read ({type(exc).__name__})") from exc

    # -- writing --------------------------------------------------------------------------------

    def change(
        self,
        visitor: str,
        edit: Callable[[Learner | None], tuple[str | None, dict] | None],
        *,
        create: bool = True,
        now: float | None = None,
        tried: Sequence[tuple[str, str, str]] = (),
    ) -> Learner | None:
        """Apply ``edit`` to the learner ``visitor`` is (None: not recorded yet) in one
        transaction: it returns their nickname and progress as they are to be (None: leave the
        record as it is, or write none), and the learner is seen now. A learner not recorded
        yet is recorded only with ``create`` (else None, nothing written); recording one may
        forget the one seen least recently (``max_learners``) and those unseen for
        ``keep_days``. ``TooLarge`` when the record would take more than ``max_bytes``: nothing
        is written. ``tried``: (step, task, state) of each task tried now and not done, where
        ``state`` is a digest of the lab's state checked: a try is counted when it is another
        state than the task's latest try (the same state checked again is no new try)."""
        now = time.time() if now is None else now
        if not visitor or (not create and not self.exists):
            return None
        with self._db() as db:
            r = db.execute(
                "SELECT * FROM learners WHERE visitor = ? AND last_seen >= ?",
                (visitor, self._since(now)),
            ).fetchone()
            was = None if r is None else self._rows(db, [r])[0]
            if was is None and not create:
                return None
            got = edit(was)
            if got is None:
                if was is None:
                    return None
                got = (was.nickname, was.progress)
            nickname, progress = got
            size = record_bytes(nickname, progress)
            if size > self.max_bytes:
                raise TooLarge(f"{size} bytes is over the cap of {self.max_bytes} per learner")
            text = json.dumps(progress, separators=(",", ":"), ensure_ascii=False)
            if was is None:
                db.execute("DELETE FROM learners WHERE visitor = ?", (visitor,))  # forgotten
                db.execute(
                    "INSERT INTO learners (visitor, nickname, first_seen, last_seen, progress) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (visitor, nickname, now, now, text),
                )
                self._evict(db, now)
            else:
                db.execute(
                    "UPDATE learners SET nickname = ?, last_seen = ?, progress = ? "
                    "WHERE visitor = ?",
                    (nickname, max(now, was.last_seen), text, visitor),
                )
            r = db.execute("SELECT * FROM learners WHERE visitor = ?", (visitor,)).fetchone()
            if r is None:
                return None
            for step, task, state in tried:
                db.execute(
                    "INSERT INTO tries (learner, step, task, tries, first_try, last_try, state) "
                    "VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT (learner, step, task) DO UPDATE SET "
                    "tries = tries + (excluded.state != state), "
                    "last_try = CASE WHEN excluded.state != state THEN excluded.last_try "
                    "ELSE last_try END, state = excluded.state",
                    (r["n"], step, task, now, now, state),
                )
            return self._rows(db, [r])[0]

    def _evict(self, db: sqlite3.Connection, now: float) -> None:
        """Forget those unseen for ``keep_days``, then the least recently seen past
        ``max_learners``."""
        gone = db.execute("DELETE FROM learners WHERE last_seen < ?", (self._since(now),))
        over = db.execute(
            "DELETE FROM learners WHERE n IN (SELECT n FROM learners "
            "ORDER BY last_seen DESC, n DESC LIMIT -1 OFFSET ?)",
            (self.max_learners,),
        )
        if gone.rowcount > 0 or over.rowcount > 0:
            log.info(
                "learners forgotten: %d unseen for %s days, %d past the last %d (%s)",
                max(gone.rowcount, 0), self.keep_days, max(over.rowcount, 0),
                self.max_learners, "ATTNVIZ_LEARN_MAX_LEARNERS",
            )  # fmt: skip
