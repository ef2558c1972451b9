"""The project's own speed: benchmark results in one format, compared by one test.

Every ``benchmarks/*.py`` saves its result through :func:`save`: the benchmark's own detail
(as it prints it) plus four standard keys, so that any two results can be compared and any
page can quote them through one generator:

- ``format``: :data:`FORMAT`;
- ``benchmark`` and ``label``: which script, and the variant its ``--label``/``--out`` names;
- ``environment``: where and on what it ran (:func:`environment`): git revision, CPU model
  and count, memory, versions of Python, Ray, torch and gymnasium, the command, the time;
- ``samples``: a list of ``{"case", "measure", "unit", "better", "values"}``, one per
  quantity the benchmark exists to measure, ``values`` its raw repetitions (one number per
  repetition, in ``unit``: seconds, env steps/s, MiB, ...), ``better`` ``"higher"`` or
  ``"lower"``.

``python -m analysis.compare --benchmarks BASE NEW`` (:func:`compare_sets`) compares two
results, or two folders of them (matched by file name), sample by sample: the change is the
ratio of medians oriented so that above 1 is better (NEW/BASE for a rate, BASE/NEW for a
time), judged as ``analysis.compare`` judges runs, by asv's rule (``asv compare``): beyond
``factor`` (``analysis.compare.FACTOR``, asv's 1.1) **and** significant, here by a two-sided
Mann-Whitney U test of the raw repetitions at ``alpha`` (``analysis.compare.ALPHA``, 0.01). Where the repetitions are too few
for the test ever to reach ``alpha`` (5 against 5 is the least at 0.01), asv's conservative
fallback: a change is flagged only when the two ranges do not overlap, with at least 3
repetitions a side (two random draws of 3 do so in one direction with probability 1/20); with
fewer, the row is reported and not judged. Exit codes are ``analysis.compare``'s
(docs/results.md): 0, 5 when a sample got significantly worse, 2 refused.

Pages quote a result through the ``benchmark`` region of :mod:`analysis.pages`
(:func:`region`), so a changed result changes docs/benchmarks.md only through the generator;
the history of a benchmark is its result file's history in git.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from analysis.fmt import fmt_count

#: The value of every result's ``format`` key.
FORMAT = "rl-scaling-benchmark/1"
#: Repetitions a side below which the range check judges nothing.
MIN_RANGE_SAMPLES = 3
BETTER = ("higher", "lower")
SLOWER, FASTER, SAME, UNJUDGED = "worse", "better", "no significant change", "not judged"


class BenchmarkError(ValueError):
    """A result that cannot be read or compared; the message is one line (what, where, why)."""


def sample(case: str, measure: str, unit: str, values: Any, better: str) -> dict:
    """One sample of a result: ``values`` (a number or a sequence of numbers, one per
    repetition, in ``unit``) of ``measure`` for ``case``; ``better``: ``"higher"`` or
    ``"lower"``. NaN and None repetitions are dropped.

    Raises:
        BenchmarkError: ``better`` is neither, or no finite value is left.
    """
    if better not in BETTER:
        raise BenchmarkError(f"sample {case}/{measure}: better={better!r}, not one of {BETTER}")
    seq = values if isinstance(values, (list, tuple)) else [values]
    vals = [float(v) for v in seq if v is not None and math.isfinite(float(v))]
    if not vals:
        raise BenchmarkError(f"sample {case}/{measure}: no finite value in {values!r}")
    return {"case": str(case), "measure": measure, "unit": unit, "better": better, "values": vals}


#: Options that only say where a benchmark puts a file; they change no number.
OUTPUT_OPTIONS = ("--out", "--keep-report")


def _portable(argv: list[str]) -> list[str]:
    """``argv`` less each of :data:`OUTPUT_OPTIONS` given an absolute path (``--out /x`` or
    ``--out=/x``): the command published beside a number is one anyone can run, and an
    absolute output path is only the measuring machine's."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        name, eq, value = a.partition("=")
        if name in OUTPUT_OPTIONS:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if Path(value).is_absolute():
                skip = not eq
                continue
        out.append(a)
    return out


def environment(argv: list[str] | None = None) -> dict:
    """Where a benchmark ran: ``git_revision`` (short, ``-dirty`` with uncommitted changes),
    ``cpu_model``, ``cpu_count``, ``memory_gib``, ``gpu`` (``nvidia-smi``'s first name, or
    ""), ``versions`` (python, ray, torch, gymnasium), ``command`` (``python`` and
    ``argv``, default ``sys.argv``, less an output option given an absolute path:
    :func:`_portable`), ``measured_at`` (UTC, ISO 8601)."""
    import importlib.metadata as md

    from sweeps.engine.record import git_revision, host_cpu_model, host_memory_gib

    mem_gib = host_memory_gib()
    try:
        gpu = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            .stdout.splitlines()[0]
            .strip()
        )
    except (OSError, subprocess.SubprocessError, IndexError):
        gpu = ""
    versions = {"python": platform.python_version()}
    for pkg in ("ray", "torch", "gymnasium"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = "not installed"
    args = _portable(sys.argv if argv is None else argv)
    script = Path(args[0]).name if args else ""
    command = " ".join(
        ["python", f"benchmarks/{script}" if script.startswith("bench_") else script, *args[1:]]
    )
    return {
        "git_revision": git_revision(short=True) or "unknown",
        "cpu_model": host_cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(mem_gib, 1) if math.isfinite(mem_gib) else None,
        "gpu": gpu,
        "versions": versions,
        "command": command.strip(),
        "measured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def save(
    path: str | Path,
    detail: dict,
    samples: list[dict],
    *,
    benchmark: str,
    label: str = "",
    env: dict | None = None,
) -> dict:
    """Write a result to ``path`` (JSON, parents made): ``detail`` (the benchmark's own
    record) with :data:`FORMAT`, ``benchmark``, ``label``, ``environment`` (``env``, default
    :func:`environment`) and ``samples`` (each from :func:`sample`) set. Returns what was
    written.

    Raises:
        BenchmarkError: no samples, or two with the same case and measure.
    """
    if not samples:
        raise BenchmarkError(f"{benchmark}: a result without samples")
    keys = [(s["case"], s["measure"]) for s in samples]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise BenchmarkError(f"{benchmark}: two samples of case {dup[0]!r}, measure {dup[1]!r}")
    record = {
        "format": FORMAT,
        "benchmark": benchmark,
        "label": label,
        "environment": environment() if env is None else env,
        **{
            k: v
            for k, v in detail.items()
            if k not in ("format", "benchmark", "label", "environment", "samples")
        },
        "samples": samples,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=float) + "\n")
    return record


@dataclass
class Result:
    """One saved result: ``name`` (its file's stem), ``benchmark``, ``label``,
    ``environment`` and ``samples`` by ``(case, measure)``."""

    path: Path
    name: str
    benchmark: str
    label: str
    environment: dict
    samples: dict[tuple[str, str], dict]


def parse(data: dict, path: str | Path = "<result>") -> Result:
    """A result from its JSON object (as :func:`save` writes it).

    Raises:
        BenchmarkError: not in :data:`FORMAT`, or a sample without finite values.
    """
    path = Path(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BenchmarkError(
            f"{path}: not a benchmark result in format {FORMAT} "
            "(re-run its benchmark, which saves in it)"
        )
    samples = {}
    for s in data.get("samples") or []:
        vals = [float(v) for v in s.get("values") or [] if v is not None and math.isfinite(v)]
        if not vals or s.get("better") not in BETTER:
            raise BenchmarkError(f"{path}: sample {s.get('case')}/{s.get('measure')} is malformed")
        samples[(s["case"], s["measure"])] = {**s, "values": vals}
    if not samples:
        raise BenchmarkError(f"{path}: a result without samples")
    return Result(
        path,
        path.stem,
        data.get("benchmark", ""),
        data.get("label", ""),
        data.get("environment") or {},
        samples,
    )


def read(path: str | Path) -> Result:
    """The result saved in ``path``.

    Raises:
        BenchmarkError: unreadable, not JSON, or not in :data:`FORMAT`.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path}: cannot read a benchmark result ({e})") from None
    return parse(data, path)


def read_set(path: str | Path) -> list[Result]:
    """The result in a file, or every result in a folder (``*.json`` in :data:`FORMAT`;
    other JSON files there are skipped), by name.

    Raises:
        BenchmarkError: nothing there, or a file given that is not a result.
    """
    path = Path(path)
    if path.is_dir():
        out = []
        for f in sorted(path.glob("*.json")):
            try:
                out.append(read(f))
            except BenchmarkError:
                continue
        if not out:
            raise BenchmarkError(f"{path}: no benchmark result in format {FORMAT}")
        return out
    return [read(path)]


def _median(vals: list[float]) -> float:
    return statistics.median(vals)


def _min_p(n: int, m: int) -> float:
    """The smallest two-sided exact Mann-Whitney p-value ``n`` against ``m`` values can give."""
    return min(1.0, 2.0 / math.comb(n + m, n))


@dataclass
class Row:
    """One compared sample: ``key`` (``name/case`` or ``case``), ``measure``, ``unit``,
    ``better``, the raw values, their medians, ``change`` (above 1: NEW better, oriented by
    ``better``), ``p`` (Mann-Whitney, NaN when not run), ``test`` (what judged it) and
    ``verdict``."""

    key: str
    measure: str
    unit: str
    better: str
    base: list[float]
    new: list[float]
    base_median: float
    new_median: float
    change: float
    p: float
    test: str
    verdict: str


@dataclass
class BenchComparison:
    """``rows``; ``unmatched`` (lines naming samples in one side only); ``warnings`` (the
    environments' differences); ``regression``: a row got significantly worse."""

    rows: list[Row]
    unmatched: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    environments: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return any(r.verdict == SLOWER for r in self.rows)


def judge(
    base: list[float], new: list[float], better: str, factor: float, alpha: float
) -> tuple[float, float, str, str]:
    """``(change, p, test, verdict)`` of NEW's repetitions against BASE's (module docstring).

    ``change``: median(NEW)/median(BASE) for ``better="higher"``, the inverse for "lower";
    ``p``: two-sided Mann-Whitney U (``scipy.stats.mannwhitneyu``), NaN when the sizes cannot
    reach ``alpha``.
    """
    from scipy.stats import mannwhitneyu

    mb, mn = _median(base), _median(new)
    if mb <= 0 or mn <= 0:
        change = math.nan
    else:
        change = mn / mb if better == "higher" else mb / mn
    beyond = math.isfinite(change) and (change >= factor or change <= 1.0 / factor)
    direction = FASTER if change >= 1 else SLOWER
    if _min_p(len(base), len(new)) < alpha:
        p = float(mannwhitneyu(new, base, alternative="two-sided").pvalue)
        verdict = direction if beyond and p < alpha else SAME
        return change, p, "Mann-Whitney U", verdict
    if min(len(base), len(new)) < MIN_RANGE_SAMPLES:
        return change, math.nan, f"under {MIN_RANGE_SAMPLES} repetitions a side", UNJUDGED
    disjoint = min(new) > max(base) or max(new) < min(base)
    return change, math.nan, "ranges (too few for U)", direction if beyond and disjoint else SAME


def _env_rows(
    base: list[Result], new: list[Result]
) -> tuple[list[tuple[str, str, str]], list[str]]:
    def get(rs: list[Result], key: str) -> str:
        vals = []
        for r in rs:
            e = r.environment
            v = (
                e.get("versions", {}).get(key)
                if key in ("python", "ray", "torch", "gymnasium")
                else e.get(key)
            )
            vals.append("?" if v in (None, "") else str(v))
        uniq = sorted(set(vals))
        return uniq[0] if len(uniq) == 1 else ", ".join(uniq)

    keys = [
        "git_revision",
        "measured_at",
        "cpu_model",
        "cpu_count",
        "gpu",
        "python",
        "ray",
        "torch",
    ]
    rows = [(k, get(base, k), get(new, k)) for k in keys]
    warns = [
        f"{k} differs ({b} against {n}): the comparison measures it too"
        for k, b, n in rows
        if k in ("cpu_model", "cpu_count", "gpu", "python", "ray", "torch") and b != n
    ]
    return rows, warns


def compare_sets(
    base: list[Result],
    new: list[Result],
    *,
    factor: float,
    alpha: float,
    by_name: bool | None = None,
) -> BenchComparison:
    """Compare NEW's results against BASE's, sample by sample (module docstring), at
    ``factor`` and ``alpha`` (``analysis.compare.FACTOR`` and ``ALPHA`` from its CLI).
    ``by_name``: match results by file name first, then ``(case, measure)`` (folders; the
    default unless one result a side), else by ``(case, measure)`` alone (two files, which
    may be named differently).

    Raises:
        BenchmarkError: no sample in common.
    """
    single = not by_name if by_name is not None else len(base) == len(new) == 1

    def flat(rs: list[Result]) -> dict[tuple[str, str], dict]:
        return {
            ((c if single else f"{r.name}/{c}"), m): s
            for r in rs
            for (c, m), s in r.samples.items()
        }

    fb, fn = flat(base), flat(new)
    rows = []
    for k in [k for k in fb if k in fn]:
        sb, sn = fb[k], fn[k]
        change, p, test, verdict = judge(sb["values"], sn["values"], sb["better"], factor, alpha)
        rows.append(
            Row(
                k[0],
                k[1],
                sb["unit"],
                sb["better"],
                sb["values"],
                sn["values"],
                _median(sb["values"]),
                _median(sn["values"]),
                change,
                p,
                test,
                verdict,
            )
        )
    if not rows:
        raise BenchmarkError("the two sides have no sample in common (case and measure)")
    unmatched = [f"only in BASE: {c} {m}" for c, m in fb if (c, m) not in fn]
    unmatched += [f"only in NEW: {c} {m}" for c, m in fn if (c, m) not in fb]
    env_rows, warns = _env_rows(base, new)
    return BenchComparison(rows, unmatched, warns, env_rows)


def _spread(vals: list[float]) -> str:
    med = fmt_count(_median(vals))
    if len(vals) == 1:
        return med
    return f"{med} [{fmt_count(min(vals))}-{fmt_count(max(vals))}]"


def table(c: BenchComparison) -> tuple[list[str], list[list[str]]]:
    """Headers and text rows of a comparison (terminal and Markdown)."""
    headers = [
        "sample",
        "measure",
        "BASE median [range]",
        "NEW median [range]",
        "change",
        "p",
        "test",
        "verdict",
    ]
    rows = [
        [
            r.key,
            f"{r.measure} ({r.unit}, {r.better} is better)",
            f"{_spread(r.base)} (n={len(r.base)})",
            f"{_spread(r.new)} (n={len(r.new)})",
            "-" if not math.isfinite(r.change) else f"{r.change:.2f}x",
            "-" if not math.isfinite(r.p) else f"{r.p:.3g}",
            r.test,
            r.verdict,
        ]
        for r in c.rows
    ]
    return headers, rows


def markdown(c: BenchComparison) -> str:
    """The comparison as Markdown: the table, unmatched samples, the environments."""
    from analysis.publish import md_table

    headers, rows = table(c)
    out = [md_table(headers, rows, right=(2, 3, 4, 5))]
    out += [f"- {u}" for u in c.unmatched]
    out.append("")
    out.append(md_table(["", "BASE", "NEW"], [list(r) for r in c.environments]))
    out += [f"\nwarning: {w}" for w in c.warnings]
    return "\n".join(out) + "\n"


def html_page(c: BenchComparison) -> str:
    """The comparison as a self-contained HTML page in the report's style."""
    from analysis.templates import render

    headers, rows = table(c)
    return render(
        "benchmarks.html.j2",
        title="rl-scaling benchmark comparison",
        subtitle="NEW against BASE, sample by sample",
        command="python -m analysis.compare --benchmarks",
        note="the test and defaults: analysis.benchmarks' docstring.",
        headers=headers,
        rows=rows,
        unmatched=c.unmatched,
        environments=[list(r) for r in c.environments],
        warnings=c.warnings,
    )


def region(data: dict) -> str:
    """docs' ``benchmark`` region of a result (its JSON object): one row per case, a column
    per measure (median [range] over its repetitions), then where it was measured and the
    command."""
    from analysis.publish import md_table

    res = parse(data)
    measures: dict[str, str] = {}
    cases: dict[str, dict[str, dict]] = {}
    for (case, measure), s in res.samples.items():
        measures.setdefault(measure, s["unit"])
        cases.setdefault(case, {})[measure] = s
    rows = [
        [
            case,
            *(_spread(by[m]["values"]) if m in by else "-" for m in measures),
            "/".join(sorted({str(len(s["values"])) for s in by.values()}, key=int)),
        ]
        for case, by in cases.items()
    ]
    headers = ["case", *(f"{m} ({u})" for m, u in measures.items()), "repetitions"]
    env = res.environment
    machine = (
        f"{env.get('cpu_model') or 'CPU model not recorded'}, {env.get('cpu_count') or '?'} CPUs"
    )
    if env.get("gpu"):
        machine += f", {env['gpu']}"
    lines = [
        md_table(headers, rows, right=tuple(range(1, len(headers)))),
        "",
        f"Measured at `{env.get('git_revision') or '?'}` on {machine}"
        + (f", {str(env['measured_at'])[:10]}" if env.get("measured_at") else "")
        + "; median [range] over the repetitions.",
    ]
    if env.get("command"):
        lines.append(f"Command: `{env['command']}`.")
    return "\n".join(lines) + "\n"
