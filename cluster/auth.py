"""Ray token authentication: one secret per cluster, carried by the environment only.

Ray 2.60 turns token authentication on by default for clusters started by ``ray.init()``
(``RAY_AUTH_MODE=token``). Every Ray process (GCS, raylets, workers, drivers) then needs the
same token, which Ray looks up, in order, in the ``RAY_AUTH_TOKEN`` environment variable, the
file named by ``RAY_AUTH_TOKEN_PATH``, and ``~/.ray/auth_token`` (see
``ray/_private/authentication/authentication_token_setup.py`` and the C++
``AuthenticationTokenLoader``). ``ray start`` never creates a token and worker nodes never turn
token mode on by themselves, so a multi-node cluster must pass both variables to every node.

Here the token lives only in the environment of the processes we start (``RAY_AUTH_TOKEN``):
it is never written to a file, printed, or put on a command line (``/proc/<pid>/cmdline`` is
world-readable, the environment is not). :func:`redact` scrubs it from any text we echo.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

AUTH_MODE_VAR = "RAY_AUTH_MODE"
AUTH_TOKEN_VAR = "RAY_AUTH_TOKEN"
AUTH_TOKEN_PATH_VAR = "RAY_AUTH_TOKEN_PATH"

#: Environment variables whose values are secrets and must never be recorded.
SECRET_VARS = (AUTH_TOKEN_VAR,)


def new_token() -> str:
    """Return a fresh random token: 32 random bytes as 64 hex characters (``secrets``)."""
    return secrets.token_hex(32)


def configured_token(env: Mapping[str, str] | None = None) -> str | None:
    """Return the token Ray would use from ``env`` (default ``os.environ``), or None.

    Looks where Ray looks, in Ray's order: ``RAY_AUTH_TOKEN``, the file at
    ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``. Empty values count as absent.
    """
    env = os.environ if env is None else env
    token = env.get(AUTH_TOKEN_VAR, "").strip()
    if token:
        return token
    for path in (env.get(AUTH_TOKEN_PATH_VAR), Path.home() / ".ray" / "auth_token"):
        if not path:
            continue
        try:
            token = Path(path).read_text().strip()
        except OSError:
            continue
        if token:
            return token
    return None


def auth_env(token: str | None) -> dict[str, str]:
    """Environment variables that put a Ray process in the given auth mode.

    Args:
        token: the cluster's token, or None for a cluster without token authentication.

    Returns:
        ``{"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}``, or
        ``{"RAY_AUTH_MODE": "disabled"}`` when ``token`` is None. The mode is always explicit:
        a node left to guess (``RAY_AUTH_MODE`` unset) turns token mode on when it happens to
        find ``~/.ray/auth_token`` and then cannot talk to the others.
    """
    if token is None:
        return {AUTH_MODE_VAR: "disabled"}
    return {AUTH_MODE_VAR: "token", AUTH_TOKEN_VAR: token}


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """Replace every secret value found in ``env`` (default ``os.environ``) by ``***``."""
    env = os.environ if env is None else env
    for var in SECRET_VARS:
        value = env.get(var, "")
        if len(value) >= 8:
            text = text.replace(value, "***")
    return text
