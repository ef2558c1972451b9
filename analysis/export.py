"""PNG export of plotly figures with a headless Chromium/Chrome, offline.

The browser: ``BROWSER_PATH``, else ``chromium`` (or Chrome) on PATH; Debian: ``apt-get
install -y chromium``. plotly.js comes from the plotly package and MathJax is off. Engines:
``kaleido`` (plotly's ``write_image`` route, through ``kaleido.write_fig_from_object_sync``;
needs the ``kaleido>=1`` package) and ``chromium`` (a one-figure HTML page screenshot with
``chromium --headless --screenshot``; needs nothing but the browser). ``auto`` uses kaleido
when it is installed and falls back to the screenshot. Used by :mod:`analysis.publish`.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ExportError", "export_png", "find_browser"]

_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
_CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)


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


def _export_chromium(
    jobs: list[tuple[Any, Path, int, int]], scale: float, browser: str, timeout_s: float
) -> None:
    import plotly.graph_objects as go

    with tempfile.TemporaryDirectory(prefix="rl-scaling-publish-") as tmp:
        for i, (fig, path, width, height) in enumerate(jobs):
            fig = go.Figure(fig)
            fig.update_layout(width=width, height=height)
            page = Path(tmp) / f"figure{i}.html"
            html = fig.to_html(
                full_html=True,
                include_plotlyjs=True,
                config={"staticPlot": True, "displayModeBar": False},
            )
            html = html.replace(
                "<head>",
                "<head><style>html, body { margin: 0; padding: 0; "
                "overflow: hidden; background: #fff; }</style>",
                1,
            )
            page.write_text(html, encoding="utf-8")
            profile = Path(tmp) / f"profile{i}"
            shot = Path(tmp) / f"figure{i}.png"
            cmd = [
                browser,
                *_CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--force-device-scale-factor={scale:g}",
                "--virtual-time-budget=10000",
                f"--screenshot={shot}",
                page.as_uri(),
            ]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise ExportError(
                    f"{browser}: no screenshot of {path.name} within {timeout_s:g} s"
                ) from None
            if proc.returncode != 0 or not shot.is_file() or shot.stat().st_size == 0:
                tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:]
                raise ExportError(
                    f"{browser} exited {proc.returncode} without a screenshot of "
                    f"{path.name}" + (f" ({tail[0][:200]})" if tail else "")
                )
            shutil.move(str(shot), path)


def export_png(
    figures: dict[Path, tuple[Any, int]],
    *,
    width: int = 1000,
    scale: float = 2.0,
    engine: str = "auto",
    timeout_s: float = 120.0,
) -> str:
    """Write plotly figures as PNG files.

    Args:
        figures: ``{output path: (figure, height in CSS px)}``; parents are created.
        width: figure width in CSS px; the PNG is ``width x scale`` by ``height x scale`` pixels.
        scale: device pixels per CSS pixel (2 = sharp on high-DPI screens and in print).
        engine: ``"kaleido"``, ``"chromium"`` (screenshot) or ``"auto"`` (kaleido if installed,
            the screenshot if kaleido is missing or fails; see the module docstring).
        timeout_s: seconds allowed per figure (chromium) or per render (kaleido).

    Returns:
        The engine that wrote the files.

    Raises:
        ExportError: no browser, the engine is not installed, or a render failed.
        ValueError: an unknown engine, or a width/scale that is not positive.
    """
    if engine not in ("auto", "kaleido", "chromium"):
        raise ValueError(f"engine {engine!r}: expected auto, kaleido or chromium")
    if not (width > 0 and scale > 0):
        raise ValueError(f"width {width} and scale {scale} must be positive")
    if not figures:
        return engine
    browser = find_browser()
    jobs = []
    for path, (fig, height) in figures.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        jobs.append((fig, path, int(width), int(height)))
    has_kaleido = importlib.util.find_spec("kaleido") is not None
    if engine == "kaleido" and not has_kaleido:
        raise ExportError(
            "engine kaleido: the kaleido package is not installed "
            "(pip install 'kaleido>=1'), or use --engine chromium"
        )
    if engine in ("auto", "kaleido") and has_kaleido:
        try:
            _export_kaleido(jobs, scale, browser, timeout_s)
            return "kaleido"
        except Exception as exc:  # kaleido/choreographer raise many types
            if engine == "kaleido":
                raise ExportError(
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                ) from None
            sys.stderr.write(
                f"analysis.publish: kaleido failed ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); falling back "
                "to a chromium screenshot\n"
            )
    _export_chromium(jobs, scale, browser, timeout_s)
    return "chromium"
