"""The data directory (``ATTNVIZ_DATA_DIR``): what the server keeps between restarts. Here, the
secret that signs visitors' cookies, when ``ATTNVIZ_SECRET`` does not give one, and the rules
every store of the directory writes by.

Every file here is written whole or not at all: a temporary file in the same folder, flushed to
disk, then moved into place, so that a reader (or a server starting again) never meets half a
file.

Everything here is the server's user's alone, as under a umask of 077: every file 0600 and every
folder 0700 (``FILE_MODE``, ``DIR_MODE``), the directory itself included. A store makes its
folders with ``private_dir``, its files with ``write_atomic``, its SQLite files with
``connect``, a folder another module filled with ``keep_private``, which also gives what an
older attnviz wrote (0644, 0755) the same modes when a store opens it."""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from attnviz.settings import Settings

log = logging.getLogger(__name__)

SECRET_FILE = "secret"
SECRET_BYTES = 32  # 256 bits

FILE_MODE = 0o600  # a file of the data directory: read and written by the server's user alone
DIR_MODE = 0o700  # a folder of it, the directory itself included
_OTHERS = 0o077  # the bits that FILE_MODE and DIR_MODE leave out: group's and others'
# SQLite's files beside a database (it gives them the database's own mode when it makes them).
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _keep_to_owner(path: Path) -> None:
    """``path``'s mode without the group's and others' bits, where it is this user's own: a
    link, a path of another user's (a volume's root, root's) and one gone meanwhile (a run
    evicted) are left as they are, and a mode that cannot be changed (a filesystem without
    modes) is logged. Nothing here stops a write."""
    if os.name != "posix":
        return
    try:
        st = path.lstat()
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid() or not mode & _OTHERS:
            return
        os.chmod(path, mode & ~_OTHERS)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("%s: its mode is left as it is (%s)", path, exc)


def private_dir(path: Path) -> Path:
    """``path`` as a folder only the server's user may open (0700): made with whichever of its
    parents are missing, each 0700, or, already there, its mode made so."""
    missing: list[Path] = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for folder in reversed(missing):
        with suppress(FileExistsError):  # another replica made it meanwhile
            folder.mkdir(mode=DIR_MODE)
    _keep_to_owner(path)
    return path


def keep_private(root: Path) -> None:
    """``root`` (a file, or a folder with every folder and file under it) made the server's
    user's alone (0600, 0700), where it is not already: a folder another module filled (a
    model folder), or what an older attnviz wrote. Links are left as they are, and not
    followed; so is what is another user's."""
    paths = [root] if not root.is_dir() else [
        Path(folder) / name
        for folder, dirs, files in os.walk(root)
        for name in (".", *dirs, *files)
    ]  # fmt: skip
    for path in paths:
        _keep_to_owner(path)


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """An SQLite database of the data directory, opened for autocommit (``immediate`` makes its
    transactions): its folder made with ``private_dir``, the file made 0600 before SQLite opens
    it (its -wal and -shm files then get the same mode), and an older one's files made so."""
    private_dir(path.parent)
    if not path.exists():
        # Only where it is not there yet: closing a descriptor of a file this process has open
        # drops every POSIX lock the process holds on it, SQLite's own connections' included
        # (another process's writes could then go over theirs: a commit lost).
        with suppress(FileExistsError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for file in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDECARS)):
        _keep_to_owner(file)
    return sqlite3.connect(path, timeout=timeout, isolation_level=None)


def open_data_dir(root: Path) -> None:
    """At start: the data directory, when it is there and the server's user's, made its alone
    (0700), so that nothing in it, whatever wrote it and whenever, is another user's to read.
    Each store makes its own files so as it opens them. (A volume's root that is another
    user's, such as a Kubernetes volume's, is left: what the server writes in it is 0600.)"""
    _keep_to_owner(root)  # not there yet: made 0700 with the first file written in it


def write_atomic(path: Path, data: bytes, *, mode: int = FILE_MODE, replace: bool = True) -> bool:
    """``data`` at ``path``, whole, with ``mode``, in a folder made with ``private_dir``. With
    ``replace=False`` a file already there is kept (the first writer wins, whoever it is):
    False then, True when this one was written."""
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)  # a rename that never overwrites: fails when the file exists
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction of an index in the data directory (BEGIN IMMEDIATE: a writer of
    another replica waits for it), rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def server_secret(settings: Settings) -> bytes:
    """The key that signs visitors: ``ATTNVIZ_SECRET`` (an empty one counts as unset), else
    the one kept in the data directory, generated there the first time (0600). Where the
    directory cannot be written, a key for this process alone (logged): visitors are then new
    visitors after a restart."""
    given = settings.secret.get_secret_value() if settings.secret is not None else ""
    if given:  # an empty one (ATTNVIZ_SECRET="") is no secret: as if unset
        return given.encode()
    path = settings.data_path / SECRET_FILE
    try:
        if not path.exists():
            write_atomic(path, secrets.token_urlsafe(SECRET_BYTES).encode(), replace=False)
        else:
            keep_private(path)  # an older attnviz's may be 0644
        key = path.read_bytes().strip()
        if len(key) < 16:
            raise ValueError(f"{path} holds {len(key)} bytes, too few for a key")
        return key
    except (OSError, ValueError) as exc:
        log.warning(
            "no secret kept (%s): visitors' cookies last until this process stops; set "
            "ATTNVIZ_SECRET, or ATTNVIZ_DATA_DIR to a writable folder",
            exc,
        )
        return secrets.token_urlsafe(SECRET_BYTES).encode()
