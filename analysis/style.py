"""The style sheet every HTML page of the analysis shares: the report's, the comparison's,
the history's (one look, one place to change it)."""

from __future__ import annotations

import html

from analysis.templates import render, static_text

__all__ = ["CSS", "html_table", "page", "page_style"]

#: The style sheet (``analysis/templates/report.css``), CSS text.
CSS = static_text("report.css")


def page_style() -> str:
    """The report's style sheet (CSS text), for every page of the analysis."""
    return CSS


def html_table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain HTML table of text cells (escaped here)."""
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    trs = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def page(title: str, subtitle: str, body: str, command: str, note: str) -> str:
    """A whole page in the report's style (``analysis/templates/page.html.j2``): a header with
    ``title`` and ``subtitle`` (text, escaped there), ``body`` (HTML) and a closing note naming
    the ``command`` that wrote it."""
    return render(
        "page.html.j2", title=title, subtitle=subtitle, body=body, command=command, note=note
    )
