"""The data directory: a file written whole (temp file, then moved into place) with its mode, a
first writer that wins where the file must not be replaced, and the server's secret generated
once, kept, and a key for the process alone where the folder cannot be written."""

from __future__ import annotations

import stat

from attnviz.services.datadir import SECRET_FILE, server_secret, write_atomic
from attnviz.settings import Settings


def test_a_file_is_written_whole_with_its_mode_and_no_temp_left(tmp_path):
    path = tmp_path / "a" / "b.bin"
    assert write_atomic(path, b"one", mode=0o640)
    assert path.read_bytes() == b"one" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert write_atomic(path, b"two")  # replaced
    assert path.read_bytes() == b"two" and stat.S_IMODE(path.stat().st_mode) == 0o600
    # Where it must not be replaced, the first writer wins.
    assert not write_atomic(path, b"three", replace=False)
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.bin"]


def test_the_secret_is_made_once_and_kept(tmp_path):
    s = Settings(data_dir=tmp_path)
    key = server_secret(s)
    assert len(key) >= 32 and server_secret(s) == key == (tmp_path / SECRET_FILE).read_bytes()
    assert server_secret(Settings(data_dir=tmp_path / "other")) != key
    assert server_secret(Settings(data_dir=tmp_path, secret="given-secret")) == b"given-secret"
    assert server_secret(Settings(data_dir=tmp_path, secret="")) == key  # empty: as unset


def test_a_folder_that_cannot_be_written_gives_a_key_for_this_process(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    s = Settings(data_dir=blocked / "data")
    one, two = server_secret(s), server_secret(s)
    assert len(one) >= 32 and one != two  # nothing kept: each is new
    assert "ATTNVIZ_SECRET" in caplog.text


def test_a_short_secret_file_is_not_used(tmp_path):
    (tmp_path / SECRET_FILE).write_bytes(b"short")
    assert server_secret(Settings(data_dir=tmp_path)) != b"short"
