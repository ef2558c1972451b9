"""Did it get faster? Compare two runs of a sweep, configuration by configuration.

``python -m analysis.compare BASE NEW [--markdown FILE] [--html FILE] [--factor 1.1]
[--alpha 0.01]`` judges the trials each run's analysis judges (the confirmation stage when
there is one; :func:`analysis.metrics.judged_metrics`) and matches configurations by
``config_id`` (a hash of their recorded parameters; the baseline and the reference by role);
unmatched ones are listed.

Per configuration:

- **speedup of NEW over BASE**: median time-to-target of BASE / that of NEW (Kaplan-Meier
  medians when seeds are censored), with its seed-level bootstrap interval
  (:func:`analysis.stats.versus`, the one the speedup tables use);
- **log-rank test** of the two runs' TTT (lifelines; censored seeds count as what they are),
  its p-value adjusted over the matched configurations (Benjamini-Hochberg,
  ``scipy.stats.false_discovery_control``);
- **Mann-Whitney U tests** of env steps/s and of the cold start-up (``cold_startup_s``), with
  their ratios NEW / BASE (scipy).

A configuration is *slower* when its speedup is at most 1 / ``factor`` and its adjusted
log-rank p is below ``alpha``, *faster* when at least ``factor`` under the same p, else "no
significant change". The run's verdict pools the configurations: a Cox proportional-hazards
model of TTT stratified by configuration with one covariate, NEW (lifelines'
``CoxPHFitter(strata=...)``), whose likelihood-ratio test's p-value must be below ``alpha``, and the geometric mean of
the per-configuration speedups beyond ``factor`` in the same direction.

Defaults. ``factor`` 1.1 is asv's (``asv compare --factor``). ``alpha`` is 0.01, not asv's
0.002: asv tests tens of repeats of one benchmark, a sweep runs 3-5 seeds per configuration,
where a log-rank test cannot go below 0.025 (3 against 3) or 0.002 (5 against 5); the pooled
test over every configuration can, and 0.01 keeps a CI gate quiet on runs of the same code
(``tests/test_analysis_compare.py``: same-distribution runs flagged in at most 1 of 20).

Exit codes (docs/results.md): 0 no regression; 5 a regression (the run, or a configuration,
slower); 2 refused (an unreadable run, or runs that cannot be compared: another target,
evaluation protocol or budget), with one line on stderr.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.fmt import config_name, fmt_interval
from analysis.load import Results, ResultsError, load_results
from analysis.metrics import judged_metrics
from analysis.publish import md_table
from analysis.stats import summarize_configs, trial_durations, versus

#: asv compare's default factor: a change smaller than 10 % is never flagged.
FACTOR = 1.1
#: Significance level of the log-rank (per configuration, adjusted) and pooled Cox tests.
ALPHA = 0.01
#: Seed-level bootstrap resamples of each speedup interval.
N_RESAMPLES = 1000

#: Exit codes (docs/results.md): 5, not asv's 1, which is the suite's internal error.
EXIT_OK, EXIT_REGRESSION, EXIT_REFUSED = 0, 5, 2
SLOWER, FASTER, SAME = "slower", "faster", "no significant change"


class CompareError(ValueError):
    """Two runs that cannot be compared; the message is one line (what, where, why)."""


@dataclass
class Judged:
    """One run as the comparison reads it: ``res``; ``tm``, its judged trials' metrics
    (:func:`analysis.metrics.judged_metrics`); ``summary``, their per-configuration statistics
    (:func:`analysis.stats.summarize_configs`)."""

    res: Results
    tm: pd.DataFrame
    summary: pd.DataFrame

    @classmethod
    def of(cls, res: Results) -> Judged:
        """Judge ``res``'s trials against its own target."""
        tm, _, _, _ = judged_metrics(res)
        return cls(res, tm, summarize_configs(tm, seeds=res.seeds))


@dataclass
class Comparison:
    """Two runs compared (:func:`compare`).

    Attributes:
        base, new: the two runs' judged trials (:class:`Judged`).
        rows: one row per matched configuration: ``config_id``, ``name``, ``base_ttt_s``,
            ``new_ttt_s`` (seconds), ``speedup`` (BASE TTT / NEW TTT) with ``low``/``high``
            (95 % bootstrap interval, NaN with too few seeds), ``p_logrank``, ``p_adjusted``,
            ``throughput_ratio`` and ``p_throughput`` (env steps/s, NEW / BASE),
            ``startup_ratio`` and ``p_startup`` (cold start-up), ``verdict``.
        unmatched: configuration names in one run only, each ``"BASE only: ..."`` or
            ``"NEW only: ..."``.
        speedup: the geometric mean of the rows' finite speedups; ``p_pooled`` the stratified
            Cox test's p-value; ``verdict`` the run's.
        environment: ``(what, base value, new value)`` of both runs' environments.
        warnings: differences that make the comparison measure more than the code (another
            machine, cluster or library version).
    """

    base: Judged
    new: Judged
    rows: pd.DataFrame
    unmatched: list[str]
    speedup: float
    p_pooled: float
    verdict: str
    factor: float = FACTOR
    alpha: float = ALPHA
    environment: list[tuple[str, str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        """Whether the run, or one of its configurations, is slower."""
        return self.verdict == SLOWER or bool((self.rows["verdict"] == SLOWER).any())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _setting(value: Any) -> str:
    """A sweep setting as its file would spell it: ``unset`` for none, else its repr."""
    return "unset" if value is None else repr(value)


def check_comparable(base: Results, new: Results) -> None:
    """Refuse runs judged differently: another target (metric or value), evaluation protocol
    or trial budget.

    Raises:
        CompareError: one line naming the first difference.
    """
    for key, what in (
        ("target", "target"),
        ("evaluation", "evaluation protocol"),
        ("budget", "trial budget"),
    ):
        a, b = base.spec.get(key) or {}, new.spec.get(key) or {}
        keys = ("metric", "value") if key == "target" else sorted(set(a) | set(b))
        for k in keys:
            if not _same(a.get(k), b.get(k)):
                raise CompareError(
                    f"{new.path}: its {what} differs from {base.path}'s ({key}.{k}: "
                    f"{_setting(b.get(k))} against {_setting(a.get(k))}); time-to-target is "
                    "not comparable"
                )


def _judged(run: Judged) -> dict[str, pd.Series]:
    return {str(r["config_id"]): r for _, r in run.summary.iterrows()}


def config_names(*runs: Judged) -> dict[str, str]:
    """Each configuration's name: its algorithm and env runner count, then the recorded
    parameters that set it apart from the other configurations of its algorithm (in either
    run), marked as the baseline or the reference."""
    rows = [r for run in runs for r in _judged(run).values()]
    parts = {
        str(r["config_id"]): [p for p in str(r.get("config_label") or "").split(", ") if p]
        for r in rows
    }
    out = {}
    for r in rows:
        same_algo = [parts[str(o["config_id"])] for o in rows if o["algorithm"] == r["algorithm"]]
        common = set.intersection(*(set(p) for p in same_algo))
        own = [p for p in parts[str(r["config_id"])] if p not in common]
        out[str(r["config_id"])] = config_name(
            r["algorithm"],
            None if r.get("is_reference") else r.get("num_env_runners"),
            detail=f" ({', '.join(own)})" if own else "",
            baseline=bool(r.get("is_baseline")),
            reference=bool(r.get("is_reference")),
        )
    return out


def _mwu(tm_a: pd.DataFrame, tm_b: pd.DataFrame, cid: str, col: str) -> tuple[float, float]:
    """(median NEW / median BASE, two-sided Mann-Whitney U p) of ``col`` over the finished
    trials of ``cid``; NaNs where either side has no value."""
    from scipy.stats import mannwhitneyu

    def values(tm: pd.DataFrame) -> np.ndarray:
        if col not in tm:
            return np.array([])
        v = tm.loc[(tm["config_id"] == cid) & (tm["status"] != "error"), col]
        v = pd.to_numeric(v, errors="coerce").to_numpy(float)
        return v[np.isfinite(v)]

    a, b = values(tm_a), values(tm_b)
    if len(a) == 0 or len(b) == 0 or np.median(a) <= 0:
        return math.nan, math.nan
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return float(np.median(b) / np.median(a)), p


def _logrank(bd: np.ndarray, br: np.ndarray, nd: np.ndarray, nr: np.ndarray) -> float:
    from lifelines.statistics import logrank_test

    if not (br.any() or nr.any()):
        return 1.0  # nobody reached the target: no evidence either way
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(logrank_test(bd, nd, event_observed_A=br, event_observed_B=nr).p_value)


def _pooled(base: Judged, new: Judged, cids: list[str]) -> float:
    """p-value of NEW's coefficient in a Cox model of TTT stratified by configuration."""
    from lifelines import CoxPHFitter

    parts = []
    for flag, study in ((0, base), (1, new)):
        for cid in cids:
            d, r = trial_durations(study.tm, cid)
            parts.append(pd.DataFrame({"t": d, "e": r, "new": flag, "cfg": cid}))
    data = pd.concat(parts, ignore_index=True)
    if not data["e"].any() or data["new"].nunique() < 2:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = CoxPHFitter().fit(data, duration_col="t", event_col="e", strata=["cfg"])
        except Exception:  # separation or too few events: no pooled evidence
            return 1.0
        # the likelihood-ratio test, not the coefficient's Wald test: when every NEW trial is
        # slower than every BASE trial of its configuration the coefficient runs off to
        # infinity and its Wald p-value tends to 1 (Hauck-Donner); the ratio test stays right
        p = float(fit.log_likelihood_ratio_test().p_value)
    return p if math.isfinite(p) else 1.0


def _verdict(speedup: float, p: float, factor: float, alpha: float) -> str:
    if not (math.isfinite(speedup) and math.isfinite(p)) or p >= alpha:
        return SAME
    if speedup >= factor:
        return FASTER
    if speedup <= 1.0 / factor:
        return SLOWER
    return SAME


def _environment(base: Results, new: Results) -> tuple[list[tuple[str, str, str]], list[str]]:
    def get(res: Results, what: str) -> str:
        env = res.environment
        versions = env.get("versions") or {}
        value = {
            "git revision": env.get("git_revision"),
            "Ray": versions.get("ray"),
            "torch": versions.get("torch"),
            "Python": versions.get("python"),
            "CPU model": env.get("cpu_model"),
            "CPUs": env.get("cpu_count"),
            "nodes": len(env.get("nodes") or []) or None,
            "env config": res.spec.get("env_config"),
            "command": env.get("command"),
        }[what]
        return "?" if value is None else str(value)

    keys = ["git revision", "Ray", "torch", "Python", "CPU model", "CPUs", "nodes"]
    keys += ["env config", "command"]
    rows = [(k, get(base, k), get(new, k)) for k in keys]
    warns = [
        f"{k} differs ({b} against {n}): the comparison measures it too"
        for k, b, n in rows
        if k in ("Ray", "torch", "Python", "CPU model", "CPUs", "nodes", "env config") and b != n
    ]
    return rows, warns


def compare(
    base: Results | Judged,
    new: Results | Judged,
    *,
    factor: float = FACTOR,
    alpha: float = ALPHA,
    seed: int = 0,
) -> Comparison:
    """Compare NEW against BASE (see the module docstring).

    Args:
        base, new: loaded runs (:func:`analysis.load.load_results`), or runs already
            judged (:class:`Judged`: a history judges each of its runs once).
        factor: smallest speedup (or its inverse) flagged, > 1.
        alpha: significance level of the tests, in (0, 1).
        seed: seed of the bootstrap resamples.

    Returns:
        :class:`Comparison`.

    Raises:
        CompareError: the runs cannot be compared (:func:`check_comparable`), or neither
            has a configuration the other has.
    """
    from scipy.stats import false_discovery_control

    a = base if isinstance(base, Judged) else Judged.of(base)
    b = new if isinstance(new, Judged) else Judged.of(new)
    base, new = a.res, b.res
    check_comparable(base, new)
    ca, cb = _judged(a), _judged(b)
    cids = [c for c in ca if c in cb]
    names = config_names(a, b)
    unmatched = [f"BASE only: {names[c]}" for c in ca if c not in cb]
    unmatched += [f"NEW only: {names[c]}" for c in cb if c not in ca]
    if not cids:
        raise CompareError(
            f"{new.path}: no configuration in common with {base.path} (configurations are "
            "matched by their recorded parameters)"
        )
    rng = np.random.default_rng(seed)
    rows = []
    for cid in cids:
        bd, br = trial_durations(a.tm, cid)
        nd, nr = trial_durations(b.tm, cid)
        v, _ = versus(
            ca[cid], bd, br, cb[cid], nd, nr, rng,
            confidence=0.95, n_resamples=N_RESAMPLES, who="base run",
        )  # fmt: skip
        tput, p_tput = _mwu(a.tm, b.tm, cid, "env_steps_per_s")
        start, p_start = _mwu(a.res.trials, b.res.trials, cid, "cold_startup_s")
        rows.append(
            {
                "config_id": cid,
                "name": names[cid],
                "base_ttt_s": float(ca[cid]["ttt_s"]),
                "new_ttt_s": float(cb[cid]["ttt_s"]),
                "speedup": v["speedup"],
                "low": v["low"],
                "high": v["high"],
                "seeds": f"{len(bd)}/{len(nd)}",
                "p_logrank": _logrank(bd, br, nd, nr) if len(bd) and len(nd) else math.nan,
                "throughput_ratio": tput,
                "p_throughput": p_tput,
                "startup_ratio": start,
                "p_startup": p_start,
            }
        )
    t = pd.DataFrame(rows)
    p = t["p_logrank"].fillna(1.0).to_numpy(float)
    t["p_adjusted"] = false_discovery_control(p) if len(p) > 1 else p
    t["verdict"] = [
        _verdict(s, q, factor, alpha) for s, q in zip(t["speedup"], t["p_adjusted"], strict=True)
    ]
    finite = t["speedup"][np.isfinite(t["speedup"]) & (t["speedup"] > 0)].to_numpy(float)
    overall = float(np.exp(np.mean(np.log(finite)))) if len(finite) else math.nan
    p_pooled = _pooled(a, b, cids)
    env, warns = _environment(base, new)
    return Comparison(
        base=a,
        new=b,
        rows=t,
        unmatched=unmatched,
        speedup=overall,
        p_pooled=p_pooled,
        verdict=_verdict(overall, p_pooled, factor, alpha),
        factor=factor,
        alpha=alpha,
        environment=env,
        warnings=warns,
    )


def _x(v: float, digits: int = 2) -> str:
    return f"{v:.{digits}f}" if math.isfinite(v) else "-"


def _p(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{v:.2g}" if v < 0.01 else f"{v:.2f}"


def _interval(r: pd.Series) -> str:
    s = f"{_x(r['speedup'])}x"
    return s + (fmt_interval(r["low"], r["high"], _x) if math.isfinite(r["low"]) else "")


def _ttt(v: float) -> str:
    return f"{v:.1f} s" if math.isfinite(v) else "not reached"


def table(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """The per-configuration table: headers and rows of text cells."""
    headers = [
        "configuration",
        "seeds (base/new)",
        "TTT base",
        "TTT new",
        "speedup new/base [95 % CI]",
        "log-rank p (adj.)",
        "env steps/s new/base (p)",
        "cold start-up new/base (p)",
        "verdict",
    ]
    rows = [
        [
            r["name"],
            r["seeds"],
            _ttt(r["base_ttt_s"]),
            _ttt(r["new_ttt_s"]),
            _interval(r),
            f"{_p(r['p_logrank'])} ({_p(r['p_adjusted'])})",
            f"{_x(r['throughput_ratio'])} ({_p(r['p_throughput'])})",
            f"{_x(r['startup_ratio'])} ({_p(r['p_startup'])})",
            r["verdict"],
        ]
        for _, r in c.rows.iterrows()
    ]
    return headers, rows


def pooled_verdict(c: Comparison) -> str:
    """The run's verdict in words: ``slower`` or ``faster`` (beyond the factor at p < alpha),
    ``within 1.1x`` (significant at p < alpha, but smaller than the factor: not flagged), or
    ``no significant change``."""
    if c.verdict == SAME and math.isfinite(c.p_pooled) and c.p_pooled < c.alpha:
        return f"within {c.factor:g}x"
    return c.verdict


def headline(c: Comparison) -> str:
    """One sentence: the run's verdict, its pooled speedup and p-value, and the rules
    (:func:`pooled_verdict`'s words)."""
    v = pooled_verdict(c)
    words = {SLOWER: "slower than", FASTER: "faster than", SAME: "not significantly different from"}
    return (
        f"NEW is {words.get(v, f'{v} of')} BASE: time-to-target speedup {_x(c.speedup)}x (geometric mean over "
        f"{len(c.rows)} configuration(s)), pooled Cox p = {_p(c.p_pooled)} (flagged beyond "
        f"{c.factor:g}x at p < {c.alpha:g})."
    )


def markdown(c: Comparison) -> str:
    """The comparison as Markdown: headline, table, unmatched configurations, environments."""
    headers, rows = table(c)
    parts = [
        f"# {c.base.res.name}: {c.new.res.path.name} against {c.base.res.path.name}",
        "",
        headline(c),
        "",
        md_table(headers, rows, right=(2, 3)),
    ]
    if c.unmatched:
        parts += ["", "Not in both runs: " + "; ".join(c.unmatched) + "."]
    parts += ["", md_table(["", "BASE", "NEW"], [list(e) for e in c.environment])]
    if c.warnings:
        parts += ["", *[f"- Warning: {w}" for w in c.warnings]]
    return "\n".join(parts) + "\n"


def html_page(c: Comparison) -> str:
    """The comparison as one HTML page in the report's style."""
    from analysis.templates import render

    headers, rows = table(c)
    return render(
        "compare.html.j2",
        title=f"rl-scaling comparison: {c.base.res.name}",
        subtitle=f"NEW {c.new.res.path} against BASE {c.base.res.path}",
        command="python -m analysis.compare",
        note="the tests and defaults: the module's docstring.",
        headline=headline(c),
        headers=headers,
        rows=rows,
        unmatched=c.unmatched,
        environment=[list(e) for e in c.environment],
        warnings=c.warnings,
    )


def judging_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """The options ``compare`` and ``history`` share: ``--factor``, ``--alpha``,
    ``--markdown``, ``--html`` (``what``: the thing written, e.g. "the comparison")."""
    p.add_argument("--factor", type=float, default=FACTOR, help=f"default {FACTOR} (asv's)")
    p.add_argument("--alpha", type=float, default=ALPHA, help=f"default {ALPHA}")
    p.add_argument("--markdown", help=f"also write {what} as Markdown to this file")
    p.add_argument("--html", help="also write it as an HTML page to this file")


def check_judging(args: argparse.Namespace) -> None:
    """Refuse a ``--factor`` not above 1 or an ``--alpha`` outside (0, 1).

    Raises:
        CompareError: one line naming both values.
    """
    if not args.factor > 1.0 or not 0.0 < args.alpha < 1.0:
        raise CompareError(
            f"--factor {args.factor} / --alpha {args.alpha}: need factor > 1 and 0 < alpha < 1"
        )


def write_pages(args: argparse.Namespace, subject: Any, markdown_of, html_of) -> None:
    """Write ``--markdown`` and ``--html`` when asked, each saying where."""
    for path, text in ((args.markdown, markdown_of), (args.html, html_of)):
        if path:
            Path(path).write_text(text(subject))
            print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    """CLI: print the comparison; exit 0 (no regression), 5 (a regression) or 2 (refused).
    With ``--benchmarks``, BASE and NEW are benchmark results, or folders of them
    (:func:`analysis.benchmarks.compare_sets`; exit 5 when a sample got significantly worse)."""
    p = argparse.ArgumentParser(
        prog="python -m analysis.compare", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--benchmarks",
        action="store_true",
        help="BASE and NEW are benchmark results (benchmarks/results/*.json) or folders of them",
    )
    p.add_argument("base", help="the earlier run: results/<sweep>/<run_id>")
    p.add_argument("new", help="the run to judge against it")
    judging_arguments(p, "the comparison")
    args = p.parse_args(argv)
    if args.benchmarks:
        return _main_benchmarks(args)
    try:
        check_judging(args)
        base, new = load_results(args.base), load_results(args.new)
        c = compare(base, new, factor=args.factor, alpha=args.alpha)
    except (CompareError, ResultsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    headers, rows = table(c)
    print(headline(c))
    print(md_table(headers, rows, right=(2, 3)))
    for line in c.unmatched:
        print(line)
    for w in c.warnings:
        print(f"warning: {w}")
    write_pages(args, c, markdown, html_page)
    return EXIT_REGRESSION if c.regression else EXIT_OK


def _main_benchmarks(args: argparse.Namespace) -> int:
    """``--benchmarks``: compare two benchmark results (or folders) by
    :func:`analysis.benchmarks.compare_sets`, at asv's factor and this module's ``alpha``."""
    from analysis import benchmarks as bm

    try:
        check_judging(args)
        c = bm.compare_sets(
            bm.read_set(args.base),
            bm.read_set(args.new),
            factor=args.factor,
            alpha=args.alpha,
            by_name=Path(args.base).is_dir() or Path(args.new).is_dir(),
        )
    except (CompareError, bm.BenchmarkError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    headers, rows = bm.table(c)
    worse = sum(r.verdict == bm.SLOWER for r in c.rows)
    better = sum(r.verdict == bm.FASTER for r in c.rows)
    print(
        f"{len(c.rows)} samples compared: {worse} worse, {better} better "
        f"(factor {args.factor}, alpha {args.alpha})"
    )
    print(md_table(headers, rows, right=(2, 3, 4, 5)))
    for line in c.unmatched:
        print(line)
    for w in c.warnings:
        print(f"warning: {w}")
    write_pages(args, c, bm.markdown, bm.html_page)
    return EXIT_REGRESSION if c.regression else EXIT_OK


if __name__ == "__main__":
    from sweeps.engine.cli import guard

    raise SystemExit(guard("python -m analysis.compare", main))
