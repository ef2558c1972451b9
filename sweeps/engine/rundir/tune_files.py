"""Tune's experiment folder written one whole file at a time.

Tune saves its experiment state (trial statuses, the searcher's state, the search generator's
state) in a driver staging folder and copies that whole folder to the storage path after each
save (``ray.tune.execution.experiment_state``), through ``pyarrow.fs.copy_files``, which
truncates each destination file before it writes it. A driver killed during a copy (SIGKILL, an
out-of-memory kill, a lost node) leaves empty or cut files behind, and ``--resume`` then fails
on them (``EOFError: Ran out of input`` from unpickling an empty ``search_gen_state``). Tune
says as much ("may cause consistency issues upon restoration if your driver script
ungracefully exits").

:func:`tune_filesystem` is the local filesystem with one change: a file is written under a
hidden temporary name beside its place and renamed over it when closed (``os.replace``,
atomic on POSIX and Windows), so the storage path holds each state file whole, old or new.
The sweep passes it as the run's ``storage_filesystem``.
"""

from __future__ import annotations

import io
import os
import uuid

import pyarrow
import pyarrow.fs

__all__ = ["tune_filesystem"]


class _ReplaceOnClose(io.FileIO):
    """A file written at a unique hidden ``.<name>.*.tmp`` beside ``path`` (two writers of
    one path, threads of one process included, never share it) and renamed to ``path`` when
    closed; a write that raised leaves ``path`` as it was."""

    def __init__(self, path: str) -> None:
        folder, name = os.path.split(path)
        self._final = path
        self._temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        # the umask's permissions, as the file it replaces was made with (mkstemp's are 0600)
        fd = os.open(self._temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self._failed = False
        super().__init__(fd, "w", closefd=True)

    def write(self, data) -> int:
        try:
            return super().write(data)
        except BaseException:
            self._failed = True
            raise

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if self._failed:
            os.unlink(self._temporary)
        else:
            os.replace(self._temporary, self._final)


class AtomicLocalFiles(pyarrow.fs.FSSpecHandler):
    """fsspec's local filesystem as a pyarrow filesystem handler whose output streams are
    :class:`_ReplaceOnClose` files (parent folders created as needed)."""

    def __init__(self) -> None:
        from fsspec.implementations.local import LocalFileSystem

        super().__init__(LocalFileSystem(auto_mkdir=True))

    def open_output_stream(self, path: str, metadata) -> pyarrow.NativeFile:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return pyarrow.PythonFile(_ReplaceOnClose(path), mode="w")


def tune_filesystem() -> pyarrow.fs.FileSystem:
    """The local filesystem, each file written whole (:class:`AtomicLocalFiles`): Tune's
    ``storage_filesystem`` for a run's ``tune`` folder. Paths on it are absolute local
    paths."""
    return pyarrow.fs.PyFileSystem(AtomicLocalFiles())
