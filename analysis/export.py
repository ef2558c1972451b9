"""PNG export of plotly figures with a headless Chromium/Chrome, offline.

The browser: ``BROWSER_PATH``, else ``chromium`` (or Chrome) on PATH; Debian: ``apt-get
install -y chromium``. One engine, kaleido (a dependency: plotly's ``write_image`` route,
through ``kaleido.write_fig_from_object_sync``), which drives that browser; plotly.js comes
from the plotly package and MathJax is off. Used by :mod:`analysis.publish`.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

__all__ = ["ExportError", "export_png", "find_browser"]

_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class ExportError(RuntimeError):
    """A figure could not be exported as PNG; the message (one line) says why."""


def find_browser() -> str:
    """The Chromium/Chrome executable used for PNG export.

    ``BROWSER_PATH`` (the variable kaleido/choreographer read) if set, else the first of
    ``chromium``, ``chromium-browser``, ``google-chrome``, ... on PATH.

    Raises:
        ExportError: ``BROWSER_PATH`` is not an executable file, or no browser is on PATH.
    """
    env = os.environ.get("BROWSER_PATH")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise ExportError(f"BROWSER_PATH={env!r}: not an executable file")
    for name in _BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ExportError(
        "no Chromium/Chrome for PNG export: install Debian's chromium "
        "(apt-get install -y chromium) or set BROWSER_PATH"
    )


def _export_kaleido(
    jobs: list[tuple[Any, Path, int, int]], scale: float, browser: str, timeout_s: float
) -> None:
    import kaleido

    specs = [
        {
            "fig": fig.to_dict(),
            "path": str(path),
            "opts": {"format": "png", "width": width, "height": height, "scale": scale},
        }
        for fig, path, width, height in jobs
    ]
    # mathjax=False: no CDN fetch (offline); plotly.js is the plotly package's own copy.
    errors = kaleido.write_fig_from_object_sync(
        specs, kopts={"path": browser, "mathjax": False, "timeout": timeout_s}
    )
    if errors:
        exc = errors[0]
        raise ExportError(f"kaleido: {type(exc).__name__}: {str(exc).splitlines()[0]}")


def export_png(
    figures: dict[Path, tuple[Any, int]],
    *,
    width: int = 1000,
    scale: float = 2.0,
    engine: str = "auto",
    timeout_s: float = 120.0,
) -> str:
    """Write plotly figures as PNG files with kaleido.

    Args:
        figures: ``{output path: (figure, height in CSS px)}``; parents are created.
        width: figure width in CSS px; the PNG is ``width x scale`` by ``height x scale`` pixels.
        scale: device pixels per CSS pixel (2 = sharp on high-DPI screens and in print).
        engine: ``"auto"`` or ``"kaleido"`` (the same: the one engine). ``"chromium"``, the
            screenshot engine this module had beside kaleido, is deprecated: it writes with
            kaleido (which drives the same browser) and warns.
        timeout_s: seconds allowed per render.

    Returns:
        ``"kaleido"``, the engine that wrote the files.

    Raises:
        ExportError: no browser, or a render failed.
        ValueError: an unknown engine, or a width/scale that is not positive.
    """
    if engine not in ("auto", "kaleido", "chromium"):
        raise ValueError(f"engine {engine!r}: expected auto or kaleido")
    if engine == "chromium":
        warnings.warn(
            "engine 'chromium' is deprecated: figures are written with kaleido, which drives "
            "the same browser; use 'auto' or 'kaleido'",
            FutureWarning,
            stacklevel=2,
        )
    if not (width > 0 and scale > 0):
        raise ValueError(f"width {width} and scale {scale} must be positive")
    if not figures:
        return "kaleido"
    browser = find_browser()
    jobs = []
    for path, (fig, height) in figures.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        jobs.append((fig, path, int(width), int(height)))
    try:
        _export_kaleido(jobs, scale, browser, timeout_s)
    except ExportError:
        raise
    except Exception as exc:  # kaleido/choreographer raise many types: one line
        raise ExportError(
            f"kaleido: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    return "kaleido"
