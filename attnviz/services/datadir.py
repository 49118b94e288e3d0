"""The data directory (``ATTNVIZ_DATA_DIR``): what the server keeps between restarts. For now the
secret that signs visitors' cookies, when ``ATTNVIZ_SECRET`` does not give one.

Every file here is written whole or not at all: a temporary file in the same folder, flushed to
disk, then moved into place, so that a reader (or a server starting again) never meets half a
file."""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnviz.settings import Settings

log = logging.getLogger(__name__)

SECRET_FILE = "secret"
SECRET_BYTES = 32  # 256 bits


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600, replace: bool = True) -> bool:
    """``data`` at ``path``, whole, with ``mode``. With ``replace=False`` a file already there
    is kept (the first writer wins, whoever it is): False then, True when this one was
    written."""
    path.parent.mkdir(parents=True, exist_ok=True)
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
