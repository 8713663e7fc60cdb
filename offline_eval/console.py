"""What the terminal shows: a progress line while judging, the summary table at the end."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from offline_eval.gate import describe_failure
from offline_eval.report import view
from offline_eval.runner import Progress


def _interactive() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def progress_printer(*, quiet: bool = False) -> Callable[[Progress], None]:
    """A bar with ETA redrawn in place on a terminal; plain lines under CI or a pipe; nothing if quiet."""
    interactive = _interactive()

    def show(p: Progress) -> None:
        if quiet:
            return
        eta = p.elapsed / p.done * (p.total - p.done) if p.done else 0.0
        stats = f"{p.done}/{p.total} samples · {p.judge_calls} judge calls ({p.cache_hits} cached) · " \
                f"{_clock(p.elapsed)} elapsed · ETA {_clock(eta)}"
        if interactive:
            width = 24
            filled = int(width * p.done / max(p.total, 1))
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {stats}  ")
            if p.done == p.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(stats + "\n")
        sys.stderr.flush()

    return show


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _ci(stat) -> str:
    low, high = stat.get("ci_low"), stat.get("ci_high")
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def summary(report: dict[str, Any], timing: dict[str, Any] | None = None) -> str:
    """The end-of-run table: each score's mean, interval, counts, threshold and status; then the verdict."""
    checks = {c["metric"]: c for c in view.gate_checks(report) if c.get("category") is None}
    ppi = view.has_ppi(report)
    extra = f" {'PPI':>6} {'PPI 95% CI':>15} {'rev':>4}" if ppi else ""
    head = f"{'metric':<24} {'mean':>6} {'95% CI':>15}{extra} {'n':>4} {'n/c':>4} {'thresh':>6}  status"
    lines = [head, "-" * len(head)]
    for metric, agg in view.aggregate_of(report).items():
        check = checks.get(metric)
        cells = ""
        if ppi:
            corrected = view.ppi_for(report, metric)
            cells = f" {_num(corrected.get('value')):>6} {_ci(corrected):>15} {corrected.get('n_labelled', 0):>4}"
        lines.append(f"{metric:<24} {_num(agg['mean']):>6} {_ci(agg):>15}{cells} {agg['n']:>4} "
                     f"{agg['n_not_computable']:>4} {_num(check['threshold']) if check else '':>6}  "
                     f"{check['status'] if check else ''}")
    lines.append("")
    if ppi:
        lines += [f"PPI: the judge's mean corrected by {view.review_summary(report)}", ""]
    for check in view.gate_checks(report):
        where = f" [{check['category']}]" if check.get("category") else ""
        if check["status"] == "failed":
            lines.append(f"FAILED {check['metric']}{where}: {describe_failure(check)}")
        elif check["status"] == "skipped":
            lines.append(f"skipped {check['metric']}{where}: {check['reason']}")
    on = {"mean": "the mean", "95% CI lower bound": "the 95% interval's lower bound"}.get(
        view.gate_value_label(report), "the PPI-corrected mean")
    lines.append(f"gate {'PASSED' if view.passed(report) else 'FAILED'} (judged on {on})")
    determinism = view.judge_determinism(report)
    if determinism:
        lines.append(f"judge {determinism}")
    if timing:
        lines.append(f"{timing['judge_calls']} judge calls ({timing['cache_hits']} from cache) in {timing['seconds']:.1f}s")
    return "\n".join(lines)
