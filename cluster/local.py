"""Obtain a Ray cluster for one run: an embedded local Ray, or an existing cluster.

The sweep runner does::

    with ray_session(args.address) as info:   # None -> embedded, sized to this machine
        ...                                   # Tune/RLlib work; info.nodes for environment.json

* No address and ``RAY_ADDRESS`` unset (or ``"local"``): a new Ray on this machine
  (``ray.init(address="local")``, so never a stray cluster that happens to run here), with
  ``os.cpu_count()`` CPUs unless told otherwise, no dashboard, warnings-only logging, shut down
  when the block ends, also on Ctrl-C.
* An address (argument, else ``RAY_ADDRESS``): connect to that cluster (``host:port`` of its
  GCS, or ``"auto"`` for the cluster ``ray start`` left on this machine). If nothing answers
  there, :class:`ClusterError` is raised within seconds, with a one-line message.

Token authentication (Ray 2.60 turns it on for new local clusters): the embedded Ray gets a
random token that lives only in this process's environment (``RAY_AUTH_TOKEN``) unless one is
configured already (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``); Ray's
default would write a token file into the home directory. A cluster that was started with a
token needs ``RAY_AUTH_MODE=token`` and its token in the environment of this process:
:mod:`cluster.local_multinode` and :mod:`cluster.bootstrap` put them there. The token is never
logged: errors are passed through :func:`cluster.auth.redact`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from cluster.auth import AUTH_MODE_VAR, AUTH_TOKEN_VAR, configured_token, new_token, redact
from cluster.nodes import (
    RAY_SYSTEM_CONFIG,
    grpc_answers,
    is_loopback,
    port_open,
    split_address,
)

#: Seconds to wait for a TCP answer from an existing cluster's GCS before giving up.
CONNECT_PROBE_TIMEOUT_S = 5.0

#: Attempts (about one second each) to get an answer from the GCS of an existing cluster.
GCS_CONNECT_ATTEMPTS = 10

_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_GCS_WAIT_VAR = "RAY_gcs_server_port_wait_time_s"


class ClusterError(RuntimeError):
    """Ray could not be started or reached. The message is one line: what, where, why."""


@dataclass
class ClusterInfo:
    """The Ray cluster a :func:`ray_session` is connected to.

    Attributes:
        address: ``"local"`` for an embedded Ray, else the address that was connected to.
        embedded: True if the session started (and will stop) its own local Ray.
        nodes: alive nodes when the session started, head first, as :func:`alive_nodes`.
    """

    address: str
    embedded: bool
    nodes: list[dict] = field(default_factory=list)


def alive_nodes() -> list[dict]:
    """Alive nodes of the connected Ray cluster, head node first.

    Returns:
        One dict per node: ``node_ip`` (str), ``num_cpus`` and ``num_gpus`` (float, the node's
        logical resources), ``node_id`` (hex str; nodes of a loopback cluster share an IP).

    Raises:
        ClusterError: Ray is not initialised in this process.
    """
    import ray

    if not ray.is_initialized():
        raise ClusterError("alive_nodes: Ray is not initialised in this process (no ray_session)")
    nodes = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        resources = n.get("Resources", {})
        nodes.append(
            {
                "node_ip": n["NodeManagerAddress"],
                "num_cpus": float(resources.get("CPU", 0.0)),
                "num_gpus": float(resources.get("GPU", 0.0)),
                "node_id": n["NodeID"],
                "_head": "node:__internal_head__" in resources,
            }
        )
    nodes.sort(key=lambda d: (not d["_head"], d["node_ip"], d["node_id"]))
    for d in nodes:
        del d["_head"]
    return nodes


def _resolve_address(address: str | None) -> tuple[str | None, str]:
    """The address asked for (argument, else ``RAY_ADDRESS``; None: embedded) and its source."""
    source = "address"
    if address is None:
        address, source = os.environ.get("RAY_ADDRESS"), "RAY_ADDRESS"
    address = (address or "").strip()
    if not address or address == "local":
        return None, source
    return address, source


def _embedded_auth() -> None:
    """Give an embedded Ray a token in this process's environment, unless one is configured.

    The token stays in ``os.environ`` after the session on purpose: Ray's C++ token loader
    caches the first token it reads in a process, so every later Ray of this process must
    find the same one.
    """
    if os.environ.get(AUTH_MODE_VAR, "token").lower() != "token":
        return  # the user opted out (RAY_AUTH_MODE=disabled): respect it
    if configured_token() is None:
        os.environ[AUTH_TOKEN_VAR] = new_token()


def _start_embedded(
    num_cpus: int | None, log_to_driver: bool = True, runtime_env: dict | None = None
) -> None:
    import ray

    _embedded_auth()
    auth_logger = logging.getLogger(_AUTH_LOGGER)
    level = auth_logger.level
    auth_logger.setLevel(logging.ERROR)  # "token authentication is enabled" on every start
    try:
        ray.init(
            address="local",
            num_cpus=num_cpus or os.cpu_count() or 1,
            include_dashboard=False,
            logging_level=logging.WARNING,
            log_to_driver=log_to_driver,
            runtime_env=runtime_env,
            _system_config=dict(RAY_SYSTEM_CONFIG),
        )
    except Exception as exc:
        raise ClusterError(
            f"could not start a local Ray on this machine: {redact(_one_line(exc))}"
        ) from None
    finally:
        auth_logger.setLevel(level)


def _connect(
    address: str, source: str, log_to_driver: bool = True, runtime_env: dict | None = None
) -> None:
    import ray
    from ray._private.services import canonicalize_bootstrap_address

    if address != "auto":
        try:
            if address.startswith("ray://"):  # Ray Client: probe the client server itself
                host, port = split_address(address[len("ray://") :])
            else:
                split_address(address)
                # Probe where Ray will really connect: it maps a loopback host to this
                # machine's outward IP unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 is set.
                host, port = split_address(canonicalize_bootstrap_address(address) or address)
        except ValueError as exc:
            raise ClusterError(f"bad Ray {source} {address!r}: {exc}") from None
        if not port_open(host, port, timeout_s=CONNECT_PROBE_TIMEOUT_S):
            hint = ""
            if is_loopback(split_address(address)[0]) and not is_loopback(host):
                hint = (
                    f" (Ray maps a loopback address to this machine's {host}; a cluster bound "
                    "to 127.0.0.1, like cluster.local_multinode's, also needs "
                    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here)"
                )
            raise ClusterError(
                f"cannot reach a Ray cluster at {address} ({source}): nothing answered on "
                f"{host}:{port} within {CONNECT_PROBE_TIMEOUT_S:.0f} s{hint}"
            )
        if not grpc_answers(host, port, timeout_s=CONNECT_PROBE_TIMEOUT_S):
            raise ClusterError(
                f"no Ray cluster at {address} ({source}): something listens on {host}:{port} "
                f"but it is not a Ray GCS (no gRPC answer within {CONNECT_PROBE_TIMEOUT_S:.0f} s)"
            )
    # Ray retries the GCS for ~20 s (NUM_REDIS_GET_RETRIES) when it answers but refuses us,
    # e.g. for a missing or wrong token; ten 1-s attempts are plenty for a live cluster.
    saved = os.environ.get(_GCS_WAIT_VAR)
    os.environ.setdefault(_GCS_WAIT_VAR, str(GCS_CONNECT_ATTEMPTS))
    try:
        ray.init(
            address=address,
            logging_level=logging.WARNING,
            log_to_driver=log_to_driver,
            runtime_env=runtime_env,
        )
    except Exception as exc:
        raise ClusterError(
            f"cannot connect to the Ray cluster at {address} ({source}): "
            f"{redact(_one_line(exc))} (a cluster with token authentication needs "
            f"RAY_AUTH_MODE=token and its RAY_AUTH_TOKEN in this environment)"
        ) from None
    finally:
        if saved is None:
            os.environ.pop(_GCS_WAIT_VAR, None)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def ray_session(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    log_to_driver: bool = True,
    runtime_env: dict | None = None,
) -> Iterator[ClusterInfo]:
    """Start or connect to Ray for the duration of a ``with`` block.

    An address is checked before ``ray.init`` (which would retry for minutes): a TCP
    connection, then a gRPC answer, each within ``CONNECT_PROBE_TIMEOUT_S`` seconds.

    Args:
        address: ``None`` for ``RAY_ADDRESS`` or, if that is unset, an embedded local Ray;
            ``"local"`` for an embedded Ray; ``"host:port"`` of an existing cluster's GCS;
            ``"auto"`` for the cluster ``ray start`` left on this machine.
        num_cpus: CPUs of an embedded Ray (default ``os.cpu_count()``); ignored, as Ray
            requires, when connecting to an existing cluster (its nodes declare their own).
        log_to_driver: forward the stdout/stderr of Ray workers (trials, env runners) to this
            process (``ray.init(log_to_driver=...)``); False hides their warnings.
        runtime_env: the job's Ray runtime environment (``ray.init(runtime_env=...)``), e.g.
            ``{"py_modules": [path]}`` to ship a user's env module to every node.

    Yields:
        :class:`ClusterInfo` of the cluster.

    Raises:
        ClusterError: Ray is already initialised in this process, the local Ray did not
            start, or the cluster at ``address`` is unreachable (within about
            ``CONNECT_PROBE_TIMEOUT_S`` seconds) or refused the connection.

    Example::

        with ray_session() as info:          # embedded: 2 CPUs on a 2-core laptop
            print(info.address, info.nodes)  # local [{'node_ip': ..., 'num_cpus': 2.0, ...}]
    """
    import ray

    if ray.is_initialized():
        raise ClusterError(
            "ray_session: Ray is already initialised in this process; call ray.shutdown() "
            "first or use the existing connection"
        )
    resolved, source = _resolve_address(address)
    started = time.monotonic()
    if resolved is None:
        _start_embedded(num_cpus, log_to_driver, runtime_env)
    else:
        _connect(resolved, source, log_to_driver, runtime_env)
    try:
        info = ClusterInfo(
            address=resolved or "local", embedded=resolved is None, nodes=alive_nodes()
        )
        logging.getLogger(__name__).debug(
            "Ray ready in %.1f s: %s", time.monotonic() - started, info
        )
        yield info
    finally:
        ray.shutdown()
