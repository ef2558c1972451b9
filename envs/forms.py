"""Env forms: the three ways a sweep names its env, and shipping the user's module to Ray.

A sweep's ``env`` is one of

1. a **registered id**: one of the suite's RLlib names (:data:`envs.RLLIB_ENVS`) or a
   gymnasium id registered by an installed package (``"CartPole-v1"``);
2. gymnasium's **"module:EnvId"**: importing ``module`` registers ``EnvId`` (gymnasium's own
   syntax for ``gymnasium.make``);
3. **"module:Factory"**: ``module.Factory`` is an ``Env`` subclass or a function; it is called
   with the sweep's ``env_config`` as one dict (RLlib's env-creator convention).

The user's module need not be installed anywhere: :func:`modules_to_ship` names the files Ray
must ship (``runtime_env={"py_modules": [...]}``, `Ray docs, runtime environments
<https://docs.ray.io/en/latest/ray-core/handling-dependencies.html>`_) so that every process of
a trial, on every node, can import it. A module counts as the user's when it is neither part
of this project nor installed in the interpreter's site-packages.

Example:
    >>> form = parse_env("CartPole-v1")
    >>> (form.kind, form.module)
    ('registered', None)
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import sysconfig
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium

__all__ = [
    "EnvError",
    "EnvForm",
    "parse_env",
    "make_from_form",
    "check_env",
    "modules_to_ship",
    "runner_env",
    "search_path",
]

#: The project's root (the folder holding ``envs/``): modules under it ship with the project.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


class EnvError(ValueError):
    """The env cannot be named, imported, built or checked. ``str()`` is one line."""


@dataclass(frozen=True)
class EnvForm:
    """A parsed ``env``.

    Attributes:
        name: the string as the sweep gives it.
        kind: ``"registered"``, ``"module_id"`` (``module:EnvId``) or ``"factory"``
            (``module:ClassOrFactory``).
        module: the module to import before the env can be built (None for an installed id).
        attr: ``EnvId`` or the factory's name (None for a registered id).
    """

    name: str
    kind: str
    module: str | None = None
    attr: str | None = None


@contextlib.contextmanager
def search_path(dirs: Sequence[str | Path]) -> Iterator[None]:
    """Put ``dirs`` first on ``sys.path`` for the block (where a user's module is looked up:
    the sweep file's folder and its ``code_dirs``), then restore ``sys.path``."""
    added = [str(Path(d).resolve()) for d in dirs]
    saved = list(sys.path)
    sys.path[:0] = [d for d in added if d not in sys.path]
    try:
        yield
    finally:
        sys.path[:] = saved


def _import(module: str, name: str):
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - the user's module failed to import: one line
        text = " ".join(str(e).split())
        raise EnvError(
            f"env {name!r}: cannot import module {module!r}: {type(e).__name__}: {text}"
        ) from None


def parse_env(name: str) -> EnvForm:
    """Parse and resolve ``name`` (imports the module of a ``module:...`` form).

    Raises:
        EnvError: an unknown id, a module that cannot be imported, or a module that defines
            no such attribute and registers no such gymnasium id.
    """
    import envs

    module, sep, attr = name.partition(":")
    if not sep:
        if name in envs.RLLIB_ENVS or name in gymnasium.registry:
            return EnvForm(name, "registered")
        raise EnvError(
            f"unknown env {name!r}: not an RLlib name in envs.RLLIB_ENVS nor a "
            "registered gymnasium id (a user's env: 'module:EnvId' or "
            "'module:Factory')"
        )
    if not module or not attr:
        raise EnvError(f"env {name!r}: expected 'module:EnvId' or 'module:Factory'")
    mod = _import(module, name)
    factory = getattr(mod, attr, None)
    if factory is not None:
        if not callable(factory):
            raise EnvError(
                f"env {name!r}: {module}.{attr} is a {type(factory).__name__}, not "
                "an Env class or a function returning an Env"
            )
        return EnvForm(name, "factory", module, attr)
    if attr in gymnasium.registry:
        return EnvForm(name, "module_id", module, attr)
    raise EnvError(
        f"env {name!r}: module {module!r} defines no {attr!r} and importing it "
        f"registers no gymnasium id {attr!r}"
    )


def make_from_form(name: str, env_config: Mapping[str, Any] | None = None) -> gymnasium.Env:
    """Build one env of a ``module:...`` form (``envs.make_env`` handles the others).

    Raises:
        EnvError: as :func:`parse_env`, or the factory returned something that is not an Env.
    """
    form = parse_env(name)
    config = dict(env_config or {})
    if form.kind == "module_id":
        return gymnasium.make(form.attr, **config)
    env = getattr(importlib.import_module(form.module), form.attr)(config)
    if not isinstance(env, gymnasium.Env):
        raise EnvError(
            f"env {name!r}: {form.module}.{form.attr}(env_config) returned a "
            f"{type(env).__name__}, not a gymnasium.Env"
        )
    return env


def check_env(name: str, env_config: Mapping[str, Any] | None = None) -> gymnasium.Env:
    """Build the env once and check it: gymnasium's ``env_checker.check_env`` (spaces, reset,
    step, seeding; its warnings are not errors) on the unwrapped env, then one reset and one
    step of the built env. Returns the built env (closed), for its spaces.

    Raises:
        EnvError: the env cannot be built, or it fails a check; one line naming the env and
            the cause.
    """
    from gymnasium.utils.env_checker import check_env as gym_check

    import envs

    try:
        env = envs.make_env(name, env_config, with_latency=False)
    except EnvError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's constructor failed: one line
        raise EnvError(
            f"env {name!r} cannot be built: {type(e).__name__}: {' '.join(str(e).split())}"
        ) from None
    if not isinstance(env, gymnasium.Env):
        raise EnvError(f"env {name!r}: built a {type(env).__name__}, not a gymnasium.Env")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gym_check(env.unwrapped, skip_render_check=True)
            env.reset(seed=0)
            env.step(env.action_space.sample())
    except Exception as e:  # noqa: BLE001 - the checker's assertion, or the env's own error
        text = " ".join(str(e).split()) or "(no message)"
        raise EnvError(
            f"env {name!r} fails gymnasium's env check: {type(e).__name__}: {text}"
        ) from None
    finally:
        env.close()
    return env


def _installed_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    roots = {PROJECT_ROOT, Path(paths["purelib"]), Path(paths["platlib"]), Path(paths["stdlib"])}
    return [r.resolve() for r in roots]


def _user_module_path(module: str) -> Path | None:
    """The file or package folder of ``module``'s top-level package, if it is the user's."""
    top = module.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    path = Path(spec.origin).resolve()
    if spec.submodule_search_locations:  # a package: ship its folder
        path = path.parent
    if any(path.is_relative_to(root) for root in _installed_roots()):
        return None
    return path


def _entry_module(env_id: str) -> str | None:
    """The module of a registered id's entry point (None for the suite's RLlib names)."""
    import envs

    if env_id in envs.RLLIB_ENVS or env_id not in gymnasium.registry:
        return None
    entry = gymnasium.spec(env_id).entry_point
    if isinstance(entry, str):
        return entry.partition(":")[0] or None
    return getattr(entry, "__module__", None)


def runner_env(name: str) -> str:
    """The env name as a trial's processes must see it: a registered id whose entry point
    lives in a user's module (a Python sweep file that imports the module registering it)
    becomes ``"module:EnvId"``, so each process imports the module, which registers the id;
    every other name is unchanged."""
    if ":" in name:
        return name
    module = _entry_module(name)
    if module is not None and _user_module_path(module) is not None:
        return f"{module}:{name}"
    return name


def modules_to_ship(name: str) -> list[str]:
    """Local paths (a ``.py`` file or a package folder) Ray must ship for ``name``'s module,
    as ``runtime_env["py_modules"]``: empty when the env needs no module of the user's."""
    module = name.partition(":")[0] if ":" in name else _entry_module(name)
    if module is None:
        return []
    path = _user_module_path(module)
    return [str(path)] if path is not None else []
