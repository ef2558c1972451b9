"""The analysis' HTML pages as Jinja2 templates (``analysis/templates/``): the page shell
every page shares (``page.html.j2``: header, style sheet, closing note), the report's
(``report.html.j2``: navigation, sections, embedded plotly.js and its figure loader) and the
style sheet and scripts they include. Python builds what a page says; the templates lay it
out. Values are escaped by the template unless it marks them ``safe`` (HTML built here)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["render", "static_text"]


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("analysis", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=True),
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


def render(name: str, **context: Any) -> str:
    """The page of template ``name`` (e.g. ``"report.html.j2"``) with ``context``.

    Raises:
        jinja2.TemplateNotFound: no such template in ``analysis/templates/``.
        jinja2.UndefinedError: the template uses a value ``context`` lacks.
    """
    return _environment().get_template(name).render(**context)


def static_text(name: str) -> str:
    """The text of a file in ``analysis/templates/`` (the style sheet, a script)."""
    return _environment().loader.get_source(_environment(), name)[0]
