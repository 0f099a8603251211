"""The report's figures, one PNG per question the checks answer (see
:mod:`robogym_ros.recorder.report.page`), drawn headless with matplotlib's Agg from a
:class:`~robogym_ros.recorder.report.data.ReportData`; a failed check's figure shows where it failed.
The velocity figure is in :mod:`robogym_ros.recorder.report.velocity`.
"""
from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from robogym_ros.checks import DUPLICATE, REORDERED, RESTART, CheckResult, classify_stamps
from robogym_ros.contract import NS_PER_S
from robogym_ros.recorder.report.data import ReportData

FAIL_RGB, WARN_RGB, OK_RGB = "#c62828", "#ef6c00", "#2e7d32"
MAX_JOINT_PLOTS = 12
DPI = 100


@dataclass(frozen=True)
class FigureInfo:
    """One figure of the report: where it is, what it shows, whether it shows a failure."""
    name: str
    path: Path
    caption: str
    level: str = "ok"  # "ok" | "fail" (a check it draws failed); "warn" only beside a check that warned
    marks: Mapping[str, Any] = field(default_factory=dict)  # what the figure marked, counted
    checks: tuple[str, ...] = ()  # the checks whose arrays or findings it draws

    @property
    def failed(self) -> bool:
        return self.level == "fail"


def level(failed: bool) -> str:
    return "fail" if failed else "ok"


def seconds(stamps_ns: np.ndarray) -> np.ndarray:
    return np.asarray(stamps_ns, np.float64) / NS_PER_S


def save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI, format="png")


def _wrap(text: str, width: int = 110) -> str:
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def fail_title(ax, text: str, failed: bool) -> None:
    ax.set_title(_wrap(text), color=FAIL_RGB if failed else "black", fontsize=10)


def first_message(result: CheckResult | None) -> str:
    return result.findings[0].message if result is not None and result.findings else ""


def _aliased_slots(data: ReportData, truth: np.ndarray, found: np.ndarray, atol: float) -> np.ndarray:
    """Slots holding the newest slot's value while their own truth differs (check_aliasing's rule)."""
    idx = np.flatnonzero(found)
    if len(idx) < 2:
        return np.array([], np.int64)
    s, t = data.positions[idx], truth[idx]
    holds = np.all(np.abs(s[:-1] - s[-1]) <= atol, axis=1)
    differs = np.any(np.abs(t[:-1] - t[-1]) > atol, axis=1)
    return idx[:-1][holds & differs]


STILL_SPAN = 1e-4  # rad or m: a joint that moved less is drawn still, on a 10 mrad axis
STILL_AXIS = 5e-3


def _still_axis(ax, *series) -> None:
    """A joint that hardly moved is drawn flat on an axis of +- STILL_AXIS about its value:
    matplotlib would otherwise zoom into the servo's last bits (tick labels like 1e-12+1.25e-1)."""
    values = np.concatenate([np.asarray(s, float).ravel() for s in series])
    values = values[np.isfinite(values)]
    if len(values) and float(values.max() - values.min()) < STILL_SPAN:
        mid = float(np.median(values))
        ax.set_ylim(mid - STILL_AXIS, mid + STILL_AXIS)
        ax.ticklabel_format(axis="y", useOffset=False)


def positions_figure(out: Path, data: ReportData, aliasing: CheckResult | None) -> FigureInfo:
    truth, found = data.matched_truth()
    atol = float((aliasing.figures.get("atol") if aliasing else None) or 1e-9)
    aliased = _aliased_slots(data, truth, found, atol)
    failed = aliasing is not None and aliasing.status == "fail"
    n = min(len(data.joint_names), MAX_JOINT_PLOTS)
    cols = 3 if n > 4 else n
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(4.2 * cols, 2.4 * rows + 0.8), layout="constrained")
    t_true, t = seconds(data.true_stamps_ns), seconds(data.stamps_ns)
    for j in range(n):
        ax = fig.add_subplot(rows, cols, j + 1)
        ax.plot(t_true, data.true_positions[:, j], color="0.55", lw=2.5, label="true")
        ax.plot(t, data.positions[:, j], color="#1565c0", lw=1.0, label="stored")
        ax.plot(t[0], data.positions[0, j], "o", ms=7, mfc="none", mec="black", label="oldest slot")
        if len(aliased):
            ax.plot(t[aliased], data.positions[aliased, j], ".", color=FAIL_RGB, ms=3,
                    label="slot = newest value")
        ax.set_title(data.joint_names[j], fontsize=9)
        ax.tick_params(labelsize=7)
        _still_axis(ax, data.true_positions[:, j], data.positions[:, j])
        if j == 0:
            ax.legend(fontsize=7, loc="best")
    head = "stored vs true position [rad or m] over sim time [s]; the oldest slot circled"
    if failed:
        head += f"\nFAIL: {first_message(aliasing)}"
    fig.suptitle(_wrap(head, 150), color=FAIL_RGB if failed else "black", fontsize=10)
    path = out / "positions.png"
    save(fig, path)
    caption = "Stored vs true positions per joint; the oldest slot is circled"
    if len(aliased):
        caption += f"; {len(aliased)} of {max(int(found.sum()) - 1, 0)} older slots hold the newest value (red)"
    return FigureInfo("positions", path, caption, level(failed),
                      {"aliased_slots": int(len(aliased)), "older_slots": max(int(found.sum()) - 1, 0),
                       "joints_drawn": n}, checks=("aliasing",))


def slot_error_figure(out: Path, data: ReportData, result: CheckResult | None) -> FigureInfo:
    """|stored - true| of every slot over its sim time, on a log axis that draws zero as zero: the
    axis is linear below ``floor`` (symlog), so an exact slot sits on the labelled 0 line."""
    truth, found = data.matched_truth()
    err = np.abs(data.positions - truth).max(axis=1)  # NaN where there is no truth
    atol = float((result.figures.get("atol") if result else None) or 1e-9)
    t = seconds(data.stamps_ns)
    bad = found & (err > atol)
    exact = found & (err == 0)
    failed = result is not None and result.status == "fail"
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.add_subplot()
    floor = max(atol * 1e-3, 1e-15)
    ax.set_yscale("symlog", linthresh=floor, linscale=0.5)
    drawn = err[found]
    ax.plot(t[found], drawn, ".", color="#1565c0", ms=3, label="|stored - true|, worst joint")
    if exact.any():
        ax.plot(t[exact], err[exact], "_", color="#2e7d32", ms=6,
                label=f"exactly 0 ({int(exact.sum())} of {int(found.sum())} slots)")
    if bad.any():
        ax.plot(t[bad], err[bad], ".", color=FAIL_RGB, ms=4, label=f"beyond {atol:g}")
    ax.axhline(atol, color="0.4", ls="--", lw=1, label=f"tolerance {atol:g}")
    top = max(atol, float(np.nanmax(drawn)) if len(drawn) else atol) * 10
    ax.set_ylim(-floor, top)  # a little below 0: exact slots sit on the 0 line, clear of the axis
    if found.any():
        first = int(np.flatnonzero(found)[0])
        ax.annotate(f"oldest slot: {err[first]:.3g}", (t[first], err[first]), xytext=(10, 10),
                    textcoords="offset points", fontsize=8, arrowprops={"arrowstyle": "->"})
    ax.set_xlabel("sim time of the slot [s] (slots oldest first)")
    ax.set_ylabel("error [rad or m] (0 drawn as 0)")
    ax.legend(fontsize=7, loc="best")
    worst = float(np.nanmax(drawn)) if len(drawn) else float("nan")
    head = f"error per slot against ground truth: max {worst:.3g} over {int(found.sum())} slots"
    fail_title(ax, head + (f" -- FAIL: {first_message(result)}" if failed else ""), failed)
    path = out / "slot_error.png"
    save(fig, path)
    ydata = np.asarray(ax.lines[0].get_ydata(), np.float64)
    return FigureInfo("slot_error", path, "Error of every stored slot against ground truth over sim time, oldest "
                      "first; an exact slot is drawn at 0", level(failed),
                      {"slots_beyond_tolerance": int(bad.sum()), "slots_without_truth": int((~found).sum()),
                       "slots_exact": int(exact.sum()), "max_error": worst,
                       "drawn_min": float(ydata.min()) if len(ydata) else None,
                       "y_ticks": [float(v) for v in ax.get_yticks()], "x_axis": ax.get_xlabel()},
                      checks=("slot_error",))


def tick_grid_figure(out: Path, data: ReportData, result: CheckResult | None) -> FigureInfo:
    """The step between consecutive stamps (in control ticks) at the sim time of the later one, in
    arrival order; each dropped tick marked at its own sim time, duplicates, reorders and sim
    restarts at the stamp that showed them (a restart breaks the line: its stamps start over)."""
    stamps = data.grid_stamps_ns if data.grid_stamps_ns is not None else data.stamps_ns
    stamps = np.asarray(stamps, np.int64)
    dt = data.control_dt_ns
    kinds, _ = classify_stamps(stamps, dt) if len(stamps) else (np.array([], np.int8), None)
    gaps_ticks = np.diff(stamps) / dt
    t = seconds(stamps[1:])
    missing = _missing_ticks(stamps, dt)
    # each missing tick at its own sim time, at the height of the step that went past it
    past = np.searchsorted(np.maximum.accumulate(stamps), missing * dt, side="right")
    marks = {"dropped": int(len(missing)), "duplicated": int((kinds == DUPLICATE).sum()),
             "reordered": int((kinds == REORDERED).sum()), "restarts": int((kinds == RESTART).sum())}
    failed = result is not None and result.status == "fail"
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.add_subplot()
    line = gaps_ticks.astype(np.float64).copy()
    line[kinds[1:] == RESTART] = np.nan  # no line back across a restart
    ax.plot(t, line, "-", color="#1565c0", lw=0.8, label="stamp step [ticks]")
    ax.axhline(1.0, color="0.4", ls="--", lw=1, label="one control tick")
    if len(missing):
        rows = np.clip(past - 1, 0, max(len(gaps_ticks) - 1, 0))
        ax.plot(missing * dt / NS_PER_S, gaps_ticks[rows], "v", color=FAIL_RGB, ms=6,
                label=f"dropped tick ({len(missing)})")
    for label, rows, color, marker in (("duplicate", np.flatnonzero(kinds == DUPLICATE), "#ef6c00", "s"),
                                       ("reordered", np.flatnonzero(kinds == REORDERED), "#6a1b9a", "D"),
                                       ("sim restart", np.flatnonzero(kinds == RESTART), "0.2", "x")):
        rows = rows[rows > 0]
        if len(rows):
            ax.plot(t[rows - 1], gaps_ticks[rows - 1], marker, color=color, ms=6, label=f"{label} ({len(rows)})")
    ax.set_xlabel("sim time of the stamp [s] (messages in arrival order)")
    ax.set_ylabel(f"stamp step / control dt ({dt / 1e6:g} ms)")
    ax.legend(fontsize=7, loc="best")
    summary = ", ".join(f"{k} {v}" for k, v in marks.items())
    span = f" over {stamps.min() / NS_PER_S:.3f}..{stamps.max() / NS_PER_S:.3f} s" if len(stamps) else ""
    fail_title(ax, f"tick grid: {len(stamps)} stamps{span}; {summary}"
               + (f" -- FAIL: {first_message(result)}" if failed else ""), failed)
    path = out / "tick_grid.png"
    save(fig, path)
    marks.update(x_axis=ax.get_xlabel(), xlim_s=[float(v) for v in ax.get_xlim()],
                 dropped_at_s=[float(v) for v in (missing[:20] * dt / NS_PER_S)])
    return FigureInfo("tick_grid", path, "Time between consecutive stamps, in control ticks, over sim time, with "
                      "drops, duplicates and reorders marked", level(failed), marks, checks=("tick_grid",))


def _missing_ticks(stamps: np.ndarray, dt: int) -> np.ndarray:
    """Tick indices between the first and last stamp that never arrived (one run of the sim)."""
    if len(stamps) == 0:
        return np.array([], np.int64)
    ticks = np.unique(np.round(stamps / dt).astype(np.int64))
    return np.setdiff1d(np.arange(ticks[0], ticks[-1] + 1), ticks, assume_unique=True)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def lateness_histogram(diagnostics: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(edges_s, counts) from the diagnostics' ``lateness_histogram``, or None if absent/unreadable."""
    raw = diagnostics.get("lateness_histogram")
    if raw is None:
        return None
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        # null (JSON has no infinity) as the last edge: the bin of everything later
        edges = np.asarray([math.inf if e is None else e for e in value["edges_s"]], np.float64)
        counts = np.asarray(value["counts"], np.float64)
    except (ValueError, KeyError, TypeError):
        return None
    if len(edges) != len(counts) + 1:
        return None
    return edges, counts


def lateness_figure(out: Path, diagnostics: Mapping[str, Any]) -> FigureInfo:
    """The sim's pacing from its diagnostics. No check of the verdict judges lateness (the checks
    prove the data against ground truth, which a late step does not change), so the figure's
    level is never a warning of its own: the late steps are stated, not flagged."""
    late = _number(diagnostics.get("late_steps"))
    worst = _number(diagnostics.get("max_lateness_s"))
    hist = lateness_histogram(diagnostics)
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    ax = fig.add_subplot()
    if hist is not None:
        edges, counts = hist
        labels = [f"{lo * 1e3:g}-{hi * 1e3:g}" if np.isfinite(hi) else f">{lo * 1e3:g}"
                  for lo, hi in zip(edges[:-1], edges[1:])]
        ax.bar(range(len(counts)), np.maximum(counts, 0), color="#1565c0")
        ax.set_xticks(range(len(counts)), labels, fontsize=7, rotation=30)
        ax.set_xlabel("lateness of a physics step after its deadline [ms]")
        ax.set_ylabel("steps")
        ax.set_yscale("symlog")
    else:
        ax.bar(["late steps"], [0 if math.isnan(late) else late], color="#1565c0")
        ax.set_ylabel("steps")
    text = (f"physics lateness: {late:g} late steps (begun more than one physics dt after the deadline), worst "
            f"{worst * 1e3:.3g} ms; the sim's pacing, which no check of the verdict judges")
    ax.set_title(_wrap(text), color="black", fontsize=10)
    path = out / "lateness.png"
    save(fig, path)
    return FigureInfo("lateness", path, "Physics lateness (wall time after each step's deadline) from the "
                      "sim's diagnostics; not judged by the verdict", "ok",
                      {"late_steps": late, "max_lateness_s": worst, "histogram": hist is not None,
                       "title": ax.get_title()})


def contact_sheet(out: Path, frames: Mapping[str, Sequence[tuple[int, np.ndarray]]],
                  result: CheckResult | None, window_ns: tuple[int, int] | None = None) -> FigureInfo:
    """The first, middle and last kept frame of each camera inside the judged window (``window_ns``,
    sim time; None: every kept frame); a frame outside it is not drawn, and a camera with none
    inside says so."""
    inside = {c: [f for f in seq if window_ns is None or window_ns[0] <= f[0] <= window_ns[1]]
              for c, seq in frames.items() if len(seq)}
    cameras = list(inside)
    fig = Figure(figsize=(9, 2.6 * max(len(cameras), 1) + 0.6), layout="constrained")
    shown, stamps, outside = 0, [], sum(len(frames[c]) - len(inside[c]) for c in cameras)
    per_camera: dict[str, list[int]] = {}
    for row, cam in enumerate(cameras):
        seq = inside[cam]
        if not seq:
            ax = fig.add_subplot(len(cameras), 1, row + 1)
            ax.text(0.5, 0.5, f"{cam}: no kept frame inside the judged window", ha="center", va="center")
            ax.axis("off")
            continue
        picks = sorted({0, len(seq) // 2, len(seq) - 1})
        for col, k in enumerate(picks):
            ax = fig.add_subplot(len(cameras), 3, row * 3 + col + 1)
            stamp, rgb = seq[k]
            ax.imshow(np.asarray(rgb))
            ax.set_title(f"{cam} @ {stamp / NS_PER_S:.3f} s", fontsize=8)
            ax.axis("off")
            shown += 1
            stamps.append(int(stamp))
            per_camera.setdefault(cam, []).append(int(stamp))
    failed = result is not None and result.status == "fail"
    where = (f" inside the judged window {window_ns[0] / NS_PER_S:.3f}..{window_ns[1] / NS_PER_S:.3f} s"
             if window_ns is not None else "")
    head = f"camera frames: first, middle, last kept{where}" + (f"\nFAIL: {first_message(result)}" if failed else "")
    fig.suptitle(_wrap(head, 100), color=FAIL_RGB if failed else "black", fontsize=10)
    path = out / "cameras.png"
    save(fig, path)
    drawn = "; ".join(f"{cam} at {', '.join(f'{t / NS_PER_S:.3f}' for t in ts)} s" for cam, ts in per_camera.items())
    return FigureInfo("cameras", path, f"First, middle and last kept frame of each camera{where} (live: of the "
                      f"newest frames within --keep-pixels-mb): {drawn or 'none'}", level(failed),
                      {"cameras": len(cameras), "frames_shown": shown, "stamps_ns": stamps,
                       "window_ns": None if window_ns is None else [int(window_ns[0]), int(window_ns[1])],
                       "kept_outside_window": outside}, checks=("images",))
