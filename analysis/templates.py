"""The analysis' HTML pages as Jinja2 templates (``analysis/templates/``): the page shell
every page shares (``page.html.j2``: header, style sheet, closing note), the report's
(``report.html.j2``: navigation, sections, embedded plotly.js and its figure loader) and the
style sheet and scripts they include, and the report's sections (``report/``: one template
per section and the macros they share). Python builds what a page says; the templates lay it
out. Values are escaped by the template unless it marks them ``safe`` or Python passes them
as :class:`markupsafe.Markup` (a figure).

The report's templates are wrapped for reading; their line breaks are folded into spaces
(:class:`_FoldLines`), so that each sentence of the page stays on one line, as a search of
the page expects."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jinja2.ext

__all__ = ["render", "static_text"]


class _FoldLines(jinja2.ext.Extension):
    """Folds each line break of a ``report/`` template, with the indent after it, into one
    space (in its source: a value's own line breaks, as in ``<pre>``, are kept)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return re.sub(r"\n\s*", " ", source) if name and name.startswith("report/") else source


def cell(value: Any) -> Any:
    """A table cell whose value and 95 % interval (``"6.0 s [5.8 s, 7.4 s]"``, as
    :func:`analysis.fmt.fmt_ci` writes them; :func:`analysis.fmt.interval_pieces` reads them)
    may break between the value and the interval, and in a narrow column between the
    interval's ends, but never inside a number and its unit: ``6.0 s`` over ``[5.8 s, 7.4 s]``
    instead of a word a line. Any other cell as it is (escaped by the template)."""
    from markupsafe import Markup, escape

    from analysis.fmt import interval_pieces

    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    split = interval_pieces(value)
    if split is None:
        return value
    pieces, tail = split
    spans = " ".join(f'<span class="nw">{escape(x)}</span>' for x in pieces)
    return Markup(spans) + escape(tail)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("analysis", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=True),
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
        extensions=[_FoldLines],
    )
    env.filters["cell"] = cell
    return env


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
