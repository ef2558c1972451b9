"""Docstrings and docs cite files the repository has (the project's own docs/design.md for its
terms), never a file outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = [
    p
    for d in ("envs", "sweeps", "analysis", "cluster", "benchmarks")
    for p in (ROOT / d).rglob("*.py")
]


def test_every_cited_doc_exists():
    cited = {}
    for path in CODE + [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for match in re.finditer(r"\bdocs/[\w./-]+?\.md\b", path.read_text()):
            cited.setdefault(match.group(0), path.relative_to(ROOT))
    assert "docs/design.md" in cited
    missing = {doc: str(where) for doc, where in cited.items() if not (ROOT / doc).is_file()}
    assert missing == {}


def test_no_file_cites_a_design_brief_outside_the_repository():
    citing = [
        str(p.relative_to(ROOT))
        for p in CODE + [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
        if re.search(r"(?<![\w/])DESIGN\.md", p.read_text())
    ]
    assert citing == []


def test_code_and_readme_carry_no_dates():
    """Comments say why, not when; the README is instructions: no ISO date in a .py file (the
    tests included) or in the README (dated history belongs in git and docs/changelog.md)."""
    date = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
    files = CODE + list((ROOT / "tests").rglob("*.py")) + [ROOT / "README.md"]
    dated = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if date.search(line)
    ]
    assert dated == []
    assert date.search("measured " + "-".join(("2026", "11", "26")))  # (not spelled here)
    assert not date.search("run 20261126-052632")  # a run id is a name, not a date
