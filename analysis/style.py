"""The style sheet every HTML page of the analysis shares: the report's, the comparison's,
the history's (one look, one place to change it)."""

from __future__ import annotations

import html

__all__ = ["CSS", "html_table", "page", "page_style"]

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; font-size: 15px; line-height: 1.45; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 24px 48px; }
header { background: #1d2b44; color: #fff; padding: 18px 24px; }
header h1 { margin: 0 0 4px; font-size: 24px; } header p { margin: 0; color: #c9d3e6; }
nav { background: #fff; border-bottom: 1px solid #dde1e8; padding: 8px 24px; font-size: 14px; }
nav a { margin-right: 18px; color: #1d4f91; text-decoration: none; }
section { background: #fff; border: 1px solid #dde1e8; border-radius: 8px; padding: 16px 20px;
          margin: 18px 0; }
h2 { margin: 0 0 10px; font-size: 20px; } h3 { font-size: 16px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13.5px; }
th, td { border-bottom: 1px solid #e4e7ec; padding: 4px 9px; text-align: right; vertical-align: top; }
th { background: #f0f2f6; text-align: center; } td.l, th.l { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0 12px; }
.card { flex: 1 1 220px; border: 1px solid #dde1e8; border-radius: 8px; padding: 10px 14px;
        background: #fbfcfe; }
.card .k { color: #5a6478; font-size: 13px; } .card .v { font-size: 21px; font-weight: 600; }
.card .s { color: #5a6478; font-size: 12.5px; }
.warn { background: #fff7e6; border: 1px solid #f5d08a; border-radius: 6px; padding: 8px 14px; }
.warn li { margin: 2px 0; } .note { color: #5a6478; font-size: 13.5px; }
.missing { background: #f3f4f7; border: 1px dashed #b8bfcc; border-radius: 6px; padding: 10px 14px;
           color: #4a5468; margin: 8px 0; }
.banner { background: #ffe9e9; border: 1px solid #f0a0a0; color: #7a1010; padding: 8px 14px;
          border-radius: 6px; margin-top: 14px; font-weight: 600; }
pre { background: #f3f4f7; padding: 10px; border-radius: 6px; overflow-x: auto; font-size: 12.5px;
      max-height: 420px; }
.fig { margin: 6px 0 14px; } .grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
details summary { cursor: pointer; color: #1d4f91; margin: 6px 0; }
"""


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
    """A whole page in the report's style: a header with ``title`` and ``subtitle`` (text,
    escaped here), ``body`` (HTML) and a closing note naming the ``command`` that wrote it."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)}</p></header><main>"
        f'{body}<p class="note">Written by <code>{html.escape(command)}</code> (rl-scaling); '
        f"{html.escape(note)}</p></main></body></html>"
    )
