"""The report's figures, one PNG per question the checks answer (see
:mod:`robogym_ros.recorder.report`), drawn headless with matplotlib's Agg from a
:class:`~robogym_ros.recorder.report_data.ReportData`; a failed check's figure shows where it failed.
The velocity figure is in :mod:`robogym_ros.recorder.report_velocity`.
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
from robogym_ros.recorder.report_data import ReportData

FAIL_RGB, WARN_RGB, OK_RGB = "#c62828", "#ef6c00", "#2e7d32"
MAX_JOINT_PLOTS = 12
DPI = 100


@dataclass(frozen=True)
class FigureInfo:
    """One figure of the report: where it is, what it shows, whether it shows a failure."""
    name: str
    path: Path
    caption: str
    level: str = "ok"  # "ok" | "warn" (e.g. late steps) | "fail" (its check failed)
    marks: Mapping[str, Any] = field(default_factory=dict)  # what the figure marked, counted

    @property
    def failed(self) -> bool:
        return self.level == "fail"


def _level(failed: bool) -> str:
    return "fail" if failed else "ok"


def _seconds(stamps_ns: np.ndarray) -> np.ndarray:
    return np.asarray(stamps_ns, np.float64) / NS_PER_S


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI, format="png")


def _wrap(text: str, width: int = 110) -> str:
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def _fail_title(ax, text: str, failed: bool) -> None:
    ax.set_title(_wrap(text), color=FAIL_RGB if failed else "black", fontsize=10)


def _first_message(result: CheckResult | None) -> str:
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


def _positions(out: Path, data: ReportData, aliasing: CheckResult | None) -> FigureInfo:
    truth, found = data.matched_truth()
    atol = float((aliasing.figures.get("atol") if aliasing else None) or 1e-9)
    aliased = _aliased_slots(data, truth, found, atol)
    failed = aliasing is not None and aliasing.status == "fail"
    n = min(len(data.joint_names), MAX_JOINT_PLOTS)
    cols = 3 if n > 4 else n
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(4.2 * cols, 2.4 * rows + 0.8), layout="constrained")
    t_true, t = _seconds(data.true_stamps_ns), _seconds(data.stamps_ns)
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
        if j == 0:
            ax.legend(fontsize=7, loc="best")
    head = "stored vs true position [rad or m] over sim time [s]; the oldest slot circled"
    if failed:
        head += f"\nFAIL: {_first_message(aliasing)}"
    fig.suptitle(_wrap(head, 150), color=FAIL_RGB if failed else "black", fontsize=10)
    path = out / "positions.png"
    _save(fig, path)
    caption = "Stored vs true positions per joint; the oldest slot is circled"
    if len(aliased):
        caption += f"; {len(aliased)} of {max(int(found.sum()) - 1, 0)} older slots hold the newest value (red)"
    return FigureInfo("positions", path, caption, _level(failed),
                      {"aliased_slots": int(len(aliased)), "older_slots": max(int(found.sum()) - 1, 0),
                       "joints_drawn": n})


def _slot_error(out: Path, data: ReportData, result: CheckResult | None) -> FigureInfo:
    truth, found = data.matched_truth()
    err = np.abs(data.positions - truth).max(axis=1)  # NaN where there is no truth
    atol = float((result.figures.get("atol") if result else None) or 1e-9)
    slots = np.arange(len(err))
    bad = found & (err > atol)
    failed = result is not None and result.status == "fail"
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.add_subplot()
    floor = max(atol * 1e-3, 1e-15)
    ax.semilogy(slots[found], np.maximum(err[found], floor), ".", color="#1565c0", ms=3,
                label="|stored - true|, worst joint")
    if bad.any():
        ax.semilogy(slots[bad], err[bad], ".", color=FAIL_RGB, ms=4, label=f"beyond {atol:g}")
    ax.axhline(atol, color="0.4", ls="--", lw=1, label=f"tolerance {atol:g}")
    if found.any():
        first = int(np.flatnonzero(found)[0])
        ax.annotate(f"oldest slot: {err[first]:.3g}", (first, max(err[first], floor)), xytext=(10, 10),
                    textcoords="offset points", fontsize=8, arrowprops={"arrowstyle": "->"})
    ax.set_xlabel("slot (oldest first)")
    ax.set_ylabel("error")
    ax.legend(fontsize=7, loc="best")
    _fail_title(ax, "error per slot against ground truth" + (f" -- FAIL: {_first_message(result)}"
                                                              if failed else ""), failed)
    path = out / "slot_error.png"
    _save(fig, path)
    return FigureInfo("slot_error", path, "Error of every stored slot against ground truth, oldest first",
                      _level(failed), {"slots_beyond_tolerance": int(bad.sum()),
                                       "slots_without_truth": int((~found).sum())})


def _tick_grid(out: Path, data: ReportData, result: CheckResult | None) -> FigureInfo:
    stamps = data.grid_stamps_ns if data.grid_stamps_ns is not None else data.stamps_ns
    stamps = np.asarray(stamps, np.int64)
    dt = data.control_dt_ns
    kinds, _ = classify_stamps(stamps, dt) if len(stamps) else (np.array([], np.int8), None)
    gaps_ticks = np.diff(stamps) / dt
    index = np.arange(1, len(stamps))
    missing = _missing_ticks(stamps, dt)
    # each missing tick is marked where the stream first went past it
    drops = np.unique(np.searchsorted(np.maximum.accumulate(stamps), missing * dt, side="right"))
    marks = {"dropped": int(len(missing)), "duplicated": int((kinds == DUPLICATE).sum()),
             "reordered": int((kinds == REORDERED).sum()), "restarts": int((kinds == RESTART).sum())}
    failed = result is not None and result.status == "fail"
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(index, gaps_ticks, "-", color="#1565c0", lw=0.8, label="stamp step [ticks]")
    ax.axhline(1.0, color="0.4", ls="--", lw=1, label="one control tick")
    for label, rows, color, marker in (("dropped before", drops, FAIL_RGB, "v"),
                                       ("duplicate", np.flatnonzero(kinds == DUPLICATE), "#ef6c00", "s"),
                                       ("reordered", np.flatnonzero(kinds == REORDERED), "#6a1b9a", "D"),
                                       ("sim restart", np.flatnonzero(kinds == RESTART), "0.2", "x")):
        rows = rows[rows > 0]
        if len(rows):
            ax.plot(rows, gaps_ticks[rows - 1], marker, color=color, ms=6, label=f"{label} ({len(rows)})")
    ax.set_xlabel("message (arrival order)")
    ax.set_ylabel(f"stamp step / control dt ({dt / 1e6:g} ms)")
    ax.legend(fontsize=7, loc="best")
    summary = ", ".join(f"{k} {v}" for k, v in marks.items())
    _fail_title(ax, f"tick grid: {len(stamps)} stamps; {summary}", failed)
    path = out / "tick_grid.png"
    _save(fig, path)
    return FigureInfo("tick_grid", path, "Time between consecutive stamps, in control ticks, with drops, "
                      "duplicates and reorders marked", _level(failed), marks)


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


def _lateness(out: Path, diagnostics: Mapping[str, Any]) -> FigureInfo:
    late = _number(diagnostics.get("late_steps"))
    worst = _number(diagnostics.get("max_lateness_s"))
    hist = lateness_histogram(diagnostics)
    warn = late > 0  # the sim's diagnostics warn of late steps; no check fails on them
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
        ax.bar(["late steps"], [0 if math.isnan(late) else late], color=WARN_RGB if warn else "#1565c0")
        ax.set_ylabel("steps")
    text = f"physics lateness: {late:g} late steps, worst {worst * 1e3:.3g} ms"
    ax.set_title(_wrap(text + (" -- WARN: steps began more than one physics dt late" if warn else "")),
                 color=WARN_RGB if warn else "black", fontsize=10)
    path = out / "lateness.png"
    _save(fig, path)
    return FigureInfo("lateness", path, "Physics lateness (wall time after each step's deadline) from the "
                      "sim's diagnostics", "warn" if warn else "ok", {"late_steps": late, "max_lateness_s": worst,
                                                    "histogram": hist is not None})


def _contact_sheet(out: Path, frames: Mapping[str, Sequence[tuple[int, np.ndarray]]],
                   result: CheckResult | None) -> FigureInfo:
    cameras = [c for c, f in frames.items() if len(f)]
    fig = Figure(figsize=(9, 2.6 * len(cameras) + 0.6), layout="constrained")
    shown = 0
    for row, cam in enumerate(cameras):
        seq = list(frames[cam])
        picks = sorted({0, len(seq) // 2, len(seq) - 1})
        for col, k in enumerate(picks):
            ax = fig.add_subplot(len(cameras), 3, row * 3 + col + 1)
            stamp, rgb = seq[k]
            ax.imshow(np.asarray(rgb))
            ax.set_title(f"{cam} @ {stamp / NS_PER_S:.3f} s", fontsize=8)
            ax.axis("off")
            shown += 1
    failed = result is not None and result.status == "fail"
    head = "camera frames: first, middle, last" + (f"\nFAIL: {_first_message(result)}" if failed else "")
    fig.suptitle(_wrap(head, 100),
                 color=FAIL_RGB if failed else "black", fontsize=10)
    path = out / "cameras.png"
    _save(fig, path)
    return FigureInfo("cameras", path, "First, middle and last frame of each camera whose pixels were kept "
                      "(live: the newest frames within --keep-pixels-mb)", _level(failed),
                      {"cameras": len(cameras), "frames_shown": shown})
