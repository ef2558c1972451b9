"""Tune's state files are written whole: a process killed while it writes one leaves the old
file, never an empty or cut one (sweeps.engine.rundir.tune_files)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A child that opens the file through the filesystem under test, writes half of the new
# content, flushes it to the OS and is killed (SIGKILL: no clean-up runs) before it closes it.
WRITER = """
import os, signal, sys
import pyarrow.fs
from sweeps.engine.rundir.tune_files import tune_filesystem
fs = tune_filesystem() if sys.argv[2] == "atomic" else pyarrow.fs.LocalFileSystem()
stream = fs.open_output_stream(sys.argv[1])
stream.write(b"new" * 1000)
stream.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_writer(path, kind: str) -> None:
    proc = subprocess.run([sys.executable, "-c", WRITER, str(path), kind], timeout=120)
    assert proc.returncode == -9  # it was killed mid-write, as a driver is


@pytest.mark.parametrize("kind", ["atomic", "plain"])
def test_a_writer_killed_mid_file_leaves_the_old_file_whole(tmp_path, kind):
    path = tmp_path / "search_gen_state-2026-01-01_00-00-00.json"
    path.write_bytes(b"old state")
    _killed_writer(path, kind)
    if kind == "plain":  # the failure this guards against: pyarrow's own local filesystem
        assert path.read_bytes() != b"old state"
    else:
        assert path.read_bytes() == b"old state"
        # its temporary file is hidden from the patterns Tune restores by
        assert [p.name for p in tmp_path.iterdir() if p != path][0].startswith(".")


def test_a_closed_file_replaces_the_old_one_and_copies_make_folders(tmp_path):
    import pyarrow.fs

    from sweeps.engine.rundir.tune_files import tune_filesystem

    fs = tune_filesystem()
    src = tmp_path / "staging"
    (src / "trial").mkdir(parents=True)
    (src / "experiment_state.json").write_text("{}")
    (src / "trial" / "result.json").write_text("[1]")
    dst = tmp_path / "tune"
    dst.mkdir()
    (dst / "experiment_state.json").write_text("old")
    pyarrow.fs.copy_files(
        str(src),
        str(dst),
        source_filesystem=pyarrow.fs.LocalFileSystem(),
        destination_filesystem=fs,
    )
    assert (dst / "experiment_state.json").read_text() == "{}"
    assert (dst / "trial" / "result.json").read_text() == "[1]"
    assert sorted(p.name for p in dst.rglob("*")) == [
        "experiment_state.json",
        "result.json",
        "trial",
    ]


def test_files_keep_the_umasks_permissions_and_concurrent_writers_do_not_mix(tmp_path):
    """Two threads writing one path (Tune's sync thread beside its driver) each write their
    own temporary file: the path ends as one writer's whole content. The file has the
    permissions a plain ``open`` gives (the umask's), as the one it replaces had."""
    import stat
    import threading

    from sweeps.engine.rundir.tune_files import tune_filesystem

    fs = tune_filesystem()
    path = tmp_path / "experiment_state.json"
    contents = [bytes([65 + i]) * 200_000 for i in range(2)]
    barrier = threading.Barrier(2)

    def write(data: bytes) -> None:
        with fs.open_output_stream(str(path)) as stream:
            barrier.wait()
            for k in range(0, len(data), 1000):
                stream.write(data[k : k + 1000])

    threads = [threading.Thread(target=write, args=(c,)) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert path.read_bytes() in contents
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiment_state.json", "plain"]
