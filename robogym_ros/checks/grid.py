"""The tick grid: classify each stamp (new, duplicate, reordered, restart, ahead of time) and account
for every tick."""
from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import as_dt_ns, as_stamps
from .results import (
    AHEAD,
    DUPLICATE,
    LIST_LIMIT,
    NEW,
    REORDERED,
    RESTART,
    CheckResult,
    Finding,
    capped,
    fmt_list,
    fmt_s,
)


def classify_stamps(stamps_ns: Any, control_dt_ns: int, *,
                    reorder_window_ticks: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Kind of each message (NEW, DUPLICATE, REORDERED, RESTART, AHEAD) and its run (segment) id.

    Sim time never goes backwards within one sim process, so a step back is a late
    message, a repeat, or a restarted sim. A restart is told apart by distance (more than
    ``reorder_window_ticks`` back) or by the stream carrying on from the earlier stamp
    (the next two stamps continue it tick by tick below the previous maximum); a message
    followed straight away by one beyond the previous maximum was only late. A stamp that leaps
    ahead while the next two carry on from the previous maximum, tick by tick below it, is AHEAD:
    a message stamped ahead of time (injected, or a second publisher's), not a run of dropped
    ticks; it neither moves the frontier nor counts as a tick received.
    """
    stamps = as_stamps(stamps_ns)
    dt = as_dt_ns(control_dt_ns)
    window_ns = reorder_window_ticks * dt
    kinds = np.zeros(len(stamps), dtype=np.int8)
    segments = np.zeros(len(stamps), dtype=np.int64)
    seen: set[int] = set()
    top: int | None = None
    seg = 0
    s_list = stamps.tolist()
    # a stamp that leaps ahead is AHEAD only if its tick comes again in order (or never comes): a
    # message merely late, after the ones sent before it, is REORDERED on its own arrival instead
    stamp_values, stamp_counts = np.unique(stamps, return_counts=True)
    repeated = set(stamp_values[stamp_counts > 1].tolist())
    newest = s_list[-1] if s_list else None
    for i, s in enumerate(s_list):
        if top is None or s > top:
            ahead = s_list[i + 1:i + 3]
            leaps = top is not None and s > top + dt and len(ahead) == 2 and \
                top < ahead[0] < s and ahead[1] == ahead[0] + dt and (s in repeated or s > newest)
            if leaps:
                kinds[i], segments[i] = AHEAD, seg
                continue
            kind = NEW
        else:
            ahead = s_list[i + 1:i + 3]
            carries_on = s < top and len(ahead) == 2 and all(
                a == s + (k + 1) * dt and a <= top for k, a in enumerate(ahead))
            returns = bool(ahead) and ahead[0] > top  # back to the frontier: a late message
            if carries_on or (top - s > window_ns and not returns):
                kind = RESTART
            elif s in seen:
                kind = DUPLICATE
            else:
                kind = REORDERED
        if kind == RESTART:
            seg += 1
            seen = set()
            top = None
        kinds[i] = kind
        segments[i] = seg
        seen.add(s)
        top = s if top is None else max(top, s)
    return kinds, segments


def check_tick_grid(stamps_ns: Any, control_dt_ns: int, *, reorder_window_ticks: int = 50,
                    name: str = "tick_grid") -> CheckResult:
    """Account for every tick between the first and last stamp of each run of the sim."""
    stamps = as_stamps(stamps_ns)
    dt = as_dt_ns(control_dt_ns)
    if len(stamps) == 0:
        return CheckResult(name, "no stamps received", {"n_received": 0}, no_data=True)
    kinds, segments = classify_stamps(stamps, dt, reorder_window_ticks=reorder_window_ticks)

    off_grid = stamps[stamps % dt != 0]
    n_unique, n_expected, dropped, period_ns = _account_runs(stamps, kinds, segments, dt)
    dups = stamps[kinds == DUPLICATE]
    reord = stamps[kinds == REORDERED]
    early = stamps[kinds == AHEAD]
    jump_idx = np.flatnonzero(kinds == RESTART)
    jumps = [{"index": int(i), "from_stamp_ns": int(stamps[i - 1]), "to_stamp_ns": int(stamps[i])}
             for i in jump_idx]

    figures: dict[str, Any] = {
        "control_dt_ns": dt,
        "n_received": int(len(stamps)),
        "n_unique": n_unique,
        "n_expected": n_expected,
        "first_stamp_ns": int(stamps[0]),
        "last_stamp_ns": int(stamps[-1]),
        "n_dropped": len(dropped),
        "dropped_stamps_ns": capped(dropped),
        "n_duplicated": int(len(dups)),
        "duplicated_stamps_ns": capped(dups),
        "n_reordered": int(len(reord)),
        "reordered_stamps_ns": capped(reord),
        "n_ahead_of_time": int(len(early)),
        "ahead_of_time_stamps_ns": capped(early),
        "n_time_jumps_back": len(jumps),
        "time_jumps": jumps[:LIST_LIMIT],
        "n_runs": int(segments[-1] + 1),
        "monotonic": bool(np.all(np.diff(stamps) > 0)),
        "period_ns": period_ns,
        "period_equals_control_dt": period_ns == dt,
        "n_off_grid": int(len(off_grid)),
        "off_grid_stamps_ns": capped(off_grid),
    }
    findings = _grid_findings(stamps, kinds, segments, dt, dropped, n_expected, jumps, off_grid, period_ns)

    period_txt = "period n/a" if period_ns is None else (
        f"period {period_ns / 1e6:g} ms" + (" = control dt" if period_ns == dt else f" != control dt {dt / 1e6:g} ms"))
    in_time = stamps[kinds != AHEAD]
    summary = (f"received {n_unique} of {n_expected} expected ticks ({fmt_s(in_time.min())}..{fmt_s(in_time.max())}"
               f"{', ' + str(figures['n_runs']) + ' runs' if figures['n_runs'] > 1 else ''}); dropped {len(dropped)}, "
               f"duplicated {len(dups)}, reordered {len(reord)}, "
               f"{f'ahead of time {len(early)}, ' if len(early) else ''}jumps back {len(jumps)}, "
               f"off-grid {len(off_grid)}; "
               f"{period_txt}; {'monotonic' if figures['monotonic'] else 'not monotonic'}")
    return CheckResult(name, summary, figures, tuple(findings))


def _account_runs(stamps: np.ndarray, kinds: np.ndarray, segments: np.ndarray, dt: int
                  ) -> tuple[int, int, list[int], int | None]:
    """(unique ticks, expected ticks, dropped stamps, median in-order period) over every run."""
    n_unique = n_expected = 0
    dropped: list[int] = []
    periods: list[np.ndarray] = []
    for seg in np.unique(segments):
        s = stamps[(segments == seg) & (kinds != AHEAD)]
        if len(s) == 0:
            continue
        ticks = np.unique(np.round(s / dt).astype(np.int64))
        n_unique += len(ticks)
        n_expected += int(ticks[-1] - ticks[0] + 1)
        missing = np.setdiff1d(np.arange(ticks[0], ticks[-1] + 1), ticks, assume_unique=True)
        dropped.extend(int(t) * dt for t in missing)
        periods.append(np.diff(stamps[(segments == seg) & (kinds == NEW)]))
    all_periods = np.concatenate(periods) if periods else np.array([], np.int64)
    period_ns = int(np.median(all_periods)) if len(all_periods) else None
    return n_unique, n_expected, dropped, period_ns


def _grid_findings(stamps: np.ndarray, kinds: np.ndarray, segments: np.ndarray, dt: int, dropped: list[int],
                   n_expected: int, jumps: list[dict], off_grid: np.ndarray, period_ns: int | None) -> list[Finding]:
    dups = stamps[kinds == DUPLICATE]
    reord = stamps[kinds == REORDERED]
    findings: list[Finding] = []
    if dropped:
        findings.append(Finding("dropped_ticks", (
            f"dropped {len(dropped)} of {n_expected} expected ticks: {fmt_list(dropped)}"),
            {"n_dropped": len(dropped), "stamps_ns": capped(dropped)}))
    if len(dups):
        findings.append(Finding("duplicated_ticks", (
            f"{len(dups)} ticks received more than once: {fmt_list(dups)}"),
            {"n_duplicated": int(len(dups)), "stamps_ns": capped(dups)}))
    if len(reord):
        after = [int(stamps[:i][segments[:i] == segments[i]].max()) for i in np.flatnonzero(kinds == REORDERED)]
        findings.append(Finding("reordered_ticks", (
            f"{len(reord)} ticks arrived out of order: {fmt_s(reord[0])} arrived after "
            f"{fmt_s(after[0])}" + (f" (and {len(reord) - 1} more)" if len(reord) > 1 else "")),
            {"n_reordered": int(len(reord)), "stamps_ns": capped(reord)}))
    early = np.flatnonzero(kinds == AHEAD)
    if len(early):
        i = int(early[0])
        before = stamps[:i][kinds[:i] != AHEAD]
        lead = f" ({round((stamps[i] - before.max()) / dt)} ticks ahead of {fmt_s(before.max())}, the stream then " \
            f"carrying on from there)" if len(before) else ""
        findings.append(Finding("ahead_of_time_stamps", (
            f"{len(early)} message{'s' if len(early) > 1 else ''} stamped ahead of time: "
            f"{fmt_s(stamps[i])} arrived{lead}"
            + (f" (and {len(early) - 1} more)" if len(early) > 1 else "")
            + "; an injected message, or a second publisher on the topic?"),
            {"n_ahead_of_time": int(len(early)), "stamps_ns": capped(stamps[early])}))
    for j in jumps:
        findings.append(Finding("time_jump_backwards", (
            f"sim time jumped backwards at message {j['index']}: {fmt_s(j['from_stamp_ns'])} -> "
            f"{fmt_s(j['to_stamp_ns'])} (sim restarted mid-run?); ticks are accounted per run"),
            dict(j)))
    if len(off_grid):
        findings.append(Finding("off_grid_stamps", (
            f"{len(off_grid)} stamps are not multiples of control dt {dt / 1e6:g} ms: "
            f"{fmt_list(off_grid)}"), {"n_off_grid": int(len(off_grid)), "stamps_ns": capped(off_grid)}))
    if period_ns is not None and period_ns != dt:
        ratio = period_ns / dt
        findings.append(Finding("period_mismatch", (
            f"median period {period_ns / 1e6:g} ms = {ratio:.2f} x control dt {dt / 1e6:g} ms"),
            {"period_ns": period_ns, "control_dt_ns": dt, "ratio": ratio}))
    return findings
