"""The style sheet every HTML page of the analysis shares: the report's, the comparison's,
the history's (one look, one place to change it). The pages themselves are templates that
extend ``analysis/templates/page.html.j2`` (:mod:`analysis.templates`)."""

from __future__ import annotations

from analysis.templates import static_text

__all__ = ["CSS", "page_style"]

#: The style sheet (``analysis/templates/report.css``), CSS text.
CSS = static_text("report.css")


def page_style() -> str:
    """The report's style sheet (CSS text), for every page of the analysis."""
    return CSS
