"""Results in object storage: ``--results s3://bucket/prefix`` (or ``gs://``, ``abfs://``,
``az://``), through fsspec's filesystems (s3fs, gcsfs, adlfs), as Ray Tune's own
``storage_path`` does.

A sweep writes its run directory on local disk first (the *staging* copy under
``~/.cache/rl-scaling/staging/``, or ``$RL_SCALING_STAGING``: Ray Tune's state, the Optuna
database and the run-directory lock need a local file system) and the recorder copies each
file it writes to ``<URI>/<sweep>/<run_id>/`` as soon as it is written. Each copy is one
whole-object upload (S3 ``PutObject``, an Azure block-blob commit), which object stores make
visible atomically: a reader sees the previous version or the new one, never half a file —
the same guarantee the local write-then-rename gives. ``analysis.*`` read a run from its URI
by downloading its files to ``~/.cache/rl-scaling/runs/``.

Credentials and endpoints come from each library's usual environment (``AWS_*`` including
``AWS_ENDPOINT_URL`` for S3-compatible servers; ``AZURE_STORAGE_*`` or ``az login`` for adlfs).
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

from sweeps.engine import rundir
from sweeps.engine.cli import SpecError

#: The files of a run directory that live in object storage (docs/results.md).
RUN_FILES = rundir.RUN_FILES


def is_uri(path: str | os.PathLike | None) -> bool:
    """True for ``scheme://...`` other than ``file://`` (a local path in URI form)."""
    text = str(path or "")
    return "://" in text and not text.startswith("file://")


def local_path(path: str | os.PathLike) -> Path:
    """A local path from a path or a ``file://`` URI."""
    text = str(path)
    return Path(text[len("file://") :]) if text.startswith("file://") else Path(text)


def _cache(kind: str, uri: str) -> Path:
    base = Path(os.environ.get("RL_SCALING_STAGING") or Path.home() / ".cache" / "rl-scaling")
    return base / kind / hashlib.sha1(uri.rstrip("/").encode()).hexdigest()[:16]


def staging_root(uri: str) -> Path:
    """The local results root that stands in for ``uri`` while a sweep runs."""
    return _cache("staging", uri)


def _fs(uri: str):
    import fsspec

    try:
        return fsspec.core.url_to_fs(uri)
    except (ImportError, ValueError) as e:  # no such protocol, or its library is missing
        raise OSError(errno.EPROTONOSUPPORT, f"cannot use {uri}: {e}") from None


def _store_error(what: str, e: Exception) -> OSError:
    """One OSError (one line) for a store's own exception (botocore, azure: not OSErrors)."""
    return OSError(errno.EIO, f"{what}: {type(e).__name__}: " + " ".join(str(e).split())[:200])


def check_writable(uri: str) -> None:
    """Write and delete a probe object under ``uri``.

    Raises:
        OSError: the store cannot be reached or refuses the write (one-line message).
    """
    fs, root = _fs(uri)
    probe = f"{root.rstrip('/')}/.write-test-{os.getpid()}"
    try:
        fs.pipe_file(probe, b"ok")
        fs.rm_file(probe)
    except Exception as e:  # noqa: BLE001 - botocore/azure errors are not OSErrors
        raise _store_error(f"cannot write to {uri}", e) from None


class Mirror:
    """Copies files of a local results root to the same relative paths under a URI.

    Args:
        uri: the results root in object storage, e.g. ``s3://bucket/results``.
        local_root: the local staging root it mirrors (:func:`staging_root`).
    """

    def __init__(self, uri: str, local_root: Path):
        self.uri = uri.rstrip("/")
        self.local_root = Path(local_root)

    def uri_of(self, local: Path) -> str:
        """``local``'s URI (``local`` is under :attr:`local_root`)."""
        return f"{self.uri}/{Path(local).relative_to(self.local_root).as_posix()}"

    def put(self, local: Path) -> None:
        """Upload one file (one whole-object write).

        Raises:
            OSError: the upload failed (network, credentials), naming the URI.
        """
        upload_file(Path(local), self.uri_of(local))


def upload_file(local: Path, uri: str) -> None:
    """Upload one local file to ``uri`` (one whole-object write).

    Raises:
        OSError: the upload failed, naming the URI.
    """
    fs, path = _fs(uri)
    try:
        fs.put_file(str(local), path)
    except Exception as e:  # noqa: BLE001
        raise _store_error(f"upload to {uri} failed", e) from None


def fetch_run(uri: str) -> Path:
    """Download a run directory's files (:data:`RUN_FILES`) from ``uri`` to a local cache
    folder (replacing an older copy) and return that folder.

    Raises:
        OSError: the store cannot be read; FileNotFoundError: no ``trials.parquet`` there.
    """
    fs, root = _fs(uri)
    dest = _cache("runs", uri)
    dest.mkdir(parents=True, exist_ok=True)
    root = root.rstrip("/")
    try:
        names = {Path(p).name for p in fs.ls(root, detail=False)}
    except FileNotFoundError:
        names = set()
    except Exception as e:  # noqa: BLE001
        raise _store_error(f"cannot read {uri}", e) from None
    if rundir.TRIALS not in names:
        raise FileNotFoundError(
            errno.ENOENT, "no trials.parquet there (is this a <results>/<sweep>/<run_id> URI?)", uri
        )
    for name in RUN_FILES:
        if name in names:
            fs.get_file(f"{root}/{name}", str(dest / name))
        else:
            (dest / name).unlink(missing_ok=True)
    return dest


def results_root(results: str, source: str):
    """The local results root and, for an object-store URI (``s3://``, ``abfs://``, ...),
    the :class:`Mirror` that uploads each file written under it.

    Returns:
        ``(root, mirror)``: ``mirror`` is None for a local path (or ``file://`` URI).
    Raises:
        SpecError: the URI's store cannot be reached or written (checked before Ray starts).
    """
    if not is_uri(results):
        return local_path(results), None
    try:
        check_writable(results)
    except OSError as e:
        raise SpecError(f"{source}: --results: {e.strerror or e}") from None
    root = staging_root(results)
    return root, Mirror(results, root)
