"""The verdict as a web page: ``report.html`` with PNG plots, headless (matplotlib's Agg).

One figure per question the checks answer, each drawn from the recorded arrays, and a
failed check's figure shows where it failed:

- ``positions.png``: per joint, stored vs true position over sim time, the oldest slot
  marked; slots that hold the newest value while their truth differs (aliasing) in red;
- ``slot_error.png``: the error of every slot against ground truth, oldest first, with the
  check's tolerance; slots beyond it in red;
- ``tick_grid.png``: the time between consecutive stamps, message by message, with drops,
  duplicates and reorders marked;
- ``velocity.png``: finite-difference velocity vs true velocity for the joint that moved most,
  with the factor the check found;
- ``lateness.png`` (with diagnostics): the physics lateness histogram and late steps;
- ``cameras.png`` (with kept pixels): the first, middle and last frame of each camera.

The arrays come in a :class:`ReportData`, which the live recorder (its ring snapshots) and
the bag reader (:class:`~robogym_ros.recorder.bagio.BagData`) both fill. No rclpy here.
"""
from __future__ import annotations

import html
import json
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from robogym_ros.checks import DUPLICATE, REORDERED, RESTART, CheckResult, classify_stamps
from robogym_ros.contract import NS_PER_S, Spec
from robogym_ros.recorder.verdict import Verdict

REPORT_HTML = "report.html"
FAIL_RGB, WARN_RGB, OK_RGB = "#c62828", "#ef6c00", "#2e7d32"
MAX_JOINT_PLOTS = 12
DPI = 100


@dataclass(frozen=True)
class ReportData:
    """The arrays a report is drawn from: what was stored (slot order, oldest first) and the
    ground truth, both on the sim's tick stamps. Velocities may be None (not carried)."""
    joint_names: tuple[str, ...]
    control_dt_ns: int
    stamps_ns: np.ndarray  # (n,) int64
    positions: np.ndarray  # (n, n_joints) as stored
    true_stamps_ns: np.ndarray  # (m,) int64
    true_positions: np.ndarray  # (m, n_joints)
    velocities: np.ndarray | None = None  # (n, n_joints) as stored (reported)
    true_velocities: np.ndarray | None = None  # (m, n_joints)
    decimation: int | None = None
    # every stamp received, in arrival order, when the stored slots are only the newest
    grid_stamps_ns: np.ndarray | None = None
    # camera -> [(stamp_ns, rgb (h, w, 3) uint8)], oldest first: the frames whose pixels were kept
    frames: Mapping[str, Sequence[tuple[int, np.ndarray]]] = field(default_factory=dict)

    @classmethod
    def from_snapshots(cls, spec: Spec, joints, truth, *, grid_stamps_ns=None, frames=None) -> "ReportData":
        """From the recorder's ring snapshots (robogym_ros.recorder.ring.RingSnapshot)."""
        return cls(tuple(spec.joint_names), spec.control_dt_ns, joints.stamp_ns, joints.position,
                   truth.stamp_ns, truth.position, joints.velocity, truth.velocity, spec.decimation,
                   None if grid_stamps_ns is None else np.asarray(grid_stamps_ns, np.int64), frames or {})

    @classmethod
    def from_bag(cls, data, spec: Spec, *, frames=None) -> "ReportData":
        """From a bag read by robogym_ros.recorder.bagio.read_bag (with its ground truth)."""
        js, gt = data.joint_states, data.ground_truth
        if gt is None:
            raise ValueError(f"{data.path}: no ground truth in the bag: nothing to draw the truth from")
        return cls(tuple(js.names), spec.control_dt_ns, js.stamp_ns, js.position, gt.stamp_ns, gt.position,
                   js.velocity, gt.velocity, spec.decimation, None, frames or {})

    def matched_truth(self) -> tuple[np.ndarray, np.ndarray]:
        """Truth rows for each stored slot (NaN where there is none) and the found mask."""
        order = np.argsort(self.true_stamps_ns, kind="stable")
        sorted_stamps = self.true_stamps_ns[order]
        pos = np.searchsorted(sorted_stamps, self.stamps_ns)
        pos = np.clip(pos, 0, max(len(sorted_stamps) - 1, 0))
        found = (len(sorted_stamps) > 0) & (sorted_stamps[pos] == self.stamps_ns) if len(sorted_stamps) \
            else np.zeros(len(self.stamps_ns), bool)
        rows = np.full(self.positions.shape, np.nan)
        rows[found] = self.true_positions[order[pos[found]]]
        return rows, found


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


@dataclass(frozen=True)
class Report:
    """The written report: its page and each figure with its level."""

    html: Path
    figures: tuple[FigureInfo, ...]

    def figure(self, name: str) -> FigureInfo:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(f"no figure {name!r}; figures: {[f.name for f in self.figures]}")


def write_report(out_dir: str | Path, verdict: Verdict, data: ReportData | None, *,
                 diagnostics: Mapping[str, Any] | None = None, title: str | None = None) -> Report:
    """Write ``report.html`` and its PNGs into ``out_dir`` (created); returns what it wrote.

    ``diagnostics``: the sim's /diagnostics values (strings or numbers), optional:
    ``late_steps``, ``max_lateness_s``, ``steps`` and ``lateness_histogram`` (JSON or a
    mapping ``{"edges_s": [...], "counts": [...]}``, one count per bin between edges; a last
    edge of null is +infinity).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = {r.name: r for r in verdict.results}
    figures: list[FigureInfo] = []
    if data is not None and len(data.stamps_ns):
        figures.append(_positions(out, data, results.get("aliasing")))
        figures.append(_slot_error(out, data, results.get("slot_error")))
        figures.append(_tick_grid(out, data, results.get("tick_grid")))
        if data.true_velocities is not None:
            figures.append(_velocity(out, data, results.get("velocity_fd")))
    if diagnostics:
        figures.append(_lateness(out, diagnostics))
    if data is not None and any(data.frames.values()):
        figures.append(_contact_sheet(out, data.frames, results.get("images")))
    page = out / REPORT_HTML
    page.write_text(_html(verdict, figures, title or verdict.title, diagnostics))
    return Report(page, tuple(figures))


# --- figures -------------------------------------------------------------------------------------
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


def _velocity(out: Path, data: ReportData, result: CheckResult | None) -> FigureInfo:
    truth_v = np.full(data.positions.shape, np.nan)
    order = np.argsort(data.true_stamps_ns, kind="stable")
    sorted_stamps = data.true_stamps_ns[order]
    pos = np.clip(np.searchsorted(sorted_stamps, data.stamps_ns), 0, max(len(sorted_stamps) - 1, 0))
    found = (sorted_stamps[pos] == data.stamps_ns) if len(sorted_stamps) else np.zeros(len(data.stamps_ns), bool)
    truth_v[found] = data.true_velocities[order[pos[found]]]
    dt = data.control_dt_ns
    pairs = np.flatnonzero((np.diff(data.stamps_ns) == dt) & found[1:] & found[:-1])
    fd = (data.positions[pairs + 1] - data.positions[pairs]) / (dt / NS_PER_S)
    ref = 0.5 * (truth_v[pairs] + truth_v[pairs + 1])
    j = int(np.nanargmax(np.nanstd(data.true_positions, axis=0))) if len(data.true_positions) else 0
    factor = result.figures.get("factor") if result is not None else None
    failed = result is not None and result.status == "fail"
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.add_subplot()
    t = _seconds(data.stamps_ns[pairs + 1])
    ax.plot(t, ref[:, j], color="0.55", lw=2.5, label="true (mean over the tick)")
    ax.plot(t, fd[:, j], color="#1565c0", lw=1.0, label="finite difference of stored positions / control dt")
    ax.set_xlabel("sim time [s]")
    ax.set_ylabel(f"{data.joint_names[j]} velocity")
    ax.legend(fontsize=7, loc="best")
    gain = _gain(fd[:, j], ref[:, j])
    text = f"velocity of {data.joint_names[j]}: gain {gain:.2f}"
    if factor is not None:
        text += f"; the check found a factor {factor:.2f}"
    if failed:
        text += f" -- FAIL: {_first_message(result)}"
    _fail_title(ax, text, failed)
    path = out / "velocity.png"
    _save(fig, path)
    return FigureInfo("velocity", path, "Finite-difference velocity vs true velocity for the joint that moved "
                      "most, with the factor the check found", _level(failed),
                      {"joint": data.joint_names[j], "gain": gain, "factor": factor, "pairs": int(len(pairs))})


def _gain(estimate: np.ndarray, reference: np.ndarray) -> float:
    ok = np.isfinite(estimate) & np.isfinite(reference)
    rr = float(np.sum(reference[ok] ** 2))
    return float(np.sum(estimate[ok] * reference[ok]) / rr) if rr > 0 else math.nan


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
    return FigureInfo("cameras", path, "First, middle and last kept frame of each camera", _level(failed),
                      {"cameras": len(cameras), "frames_shown": shown})


# --- the page ------------------------------------------------------------------------------------
def _html(verdict: Verdict, figures: Sequence[FigureInfo], title: str,
          diagnostics: Mapping[str, Any] | None) -> str:
    esc = html.escape
    status = verdict.status
    colour = OK_RGB if status == "pass" else FAIL_RGB
    rows = []
    for r in verdict.results:
        cls = "pass" if r.status == "pass" else "fail"
        rows.append(f'<tr class="{cls}" id="check-{esc(r.name)}"><td>{esc(r.name)}</td>'
                    f'<td class="status">{esc(r.status.upper())}</td><td>{esc(r.summary)}</td></tr>')
    findings = "".join(f'<li class="fail" data-check="{esc(name)}"><b>{esc(name)}</b>: {esc(f.message)}</li>'
                       for name, f in verdict.findings)
    figs = []
    for f in figures:
        cls = "figure" if f.level == "ok" else f"figure {f.level}"
        prefix = "" if f.level == "ok" else f"{f.level.upper()}: "
        figs.append(f'<figure class="{cls}" id="fig-{esc(f.name)}"><img src="{esc(f.path.name)}" '
                    f'alt="{esc(f.caption)}"><figcaption>{prefix}{esc(f.caption)}</figcaption></figure>')
    usage = f'<p class="fail">{esc(verdict.usage_error)}</p>' if verdict.usage_error else ""
    diag = ""
    if diagnostics:
        items = "".join(f"<tr><td>{esc(str(k))}</td><td>{esc(str(v))[:200]}</td></tr>"
                        for k, v in diagnostics.items() if k != "lateness_histogram")
        diag = f"<h2>Sim diagnostics</h2><table>{items}</table>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
h1 .status {{ color: {colour}; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.6em; font-size: 0.9em; vertical-align: top; }}
tr.fail td.status, li.fail b, p.fail, figure.fail figcaption {{ color: {FAIL_RGB}; font-weight: bold; }}
tr.pass td.status {{ color: {OK_RGB}; }}
figure {{ margin: 1em 0 2em; }} figure.fail img {{ outline: 3px solid {FAIL_RGB}; }}
figure.warn figcaption {{ color: {WARN_RGB}; font-weight: bold; }}
img {{ max-width: 100%; }}
</style></head>
<body>
<h1>{esc(title)}: <span class="status" id="verdict-status">{esc(status.upper().replace("_", " "))}</span>
 (exit {verdict.exit_code})</h1>
{usage}
<table><tr><th>check</th><th>status</th><th>figures</th></tr>
{"".join(rows)}
</table>
{"<h2>Findings</h2><ul>" + findings + "</ul>" if findings else ""}
{"".join(figs)}
{diag}
</body></html>
"""


# --- inputs from files ---------------------------------------------------------------------------
def verdict_from_dict(d: Mapping[str, Any]) -> Verdict:
    """A Verdict back from its JSON (``Verdict.to_dict``), e.g. the recorder's ``--json`` file."""
    from robogym_ros.checks import Finding
    results = [CheckResult(c["name"], c.get("summary", ""), dict(c.get("figures") or {}),
                           tuple(Finding(f["code"], f["message"], dict(f.get("figures") or {}))
                                 for f in c.get("findings", ())),
                           no_data=c.get("status") == "no_data")
               for c in d.get("checks", ())]
    return Verdict(results, title=d.get("title", "robogym_ros verdict"), usage_error=d.get("usage_error"))


def frames_from_bag(path: str | Path, images, per_camera: int = 3) -> dict[str, list[tuple[int, np.ndarray]]]:
    """The first, middle and last rgb8 frame of each camera in a bag, for the contact sheet.

    ``images``: the bag's image metadata (``BagData.images``), which says which stamps to decode.
    """
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_typestore

    from robogym_ros.recorder.bagio import TYPESTORE

    wanted: dict[str, set[int]] = {}
    by_camera: dict[str, list[int]] = {}
    for im in images:
        if im.encoding == "rgb8":
            by_camera.setdefault(im.camera, []).append(im.stamp_ns)
    for cam, stamps in by_camera.items():
        k = len(stamps)
        wanted[cam] = {stamps[i] for i in sorted({0, k // 2, k - 1})[:per_camera]}
    out: dict[str, list[tuple[int, np.ndarray]]] = {cam: [] for cam in wanted}
    if not wanted:
        return out
    typestore = get_typestore(TYPESTORE)
    target = Path(path)
    with Reader(target) as reader:
        conns = [c for c in reader.connections if c.msgtype == "sensor_msgs/msg/Image"
                 and c.topic.rstrip("/").split("/")[-2] in wanted]
        for conn, _, raw in reader.messages(connections=conns):
            cam = conn.topic.rstrip("/").split("/")[-2]
            msg = typestore.deserialize_cdr(raw, conn.msgtype)
            stamp = msg.header.stamp.sec * NS_PER_S + msg.header.stamp.nanosec
            if stamp in wanted[cam] and len(msg.data) == msg.height * msg.width * 3:
                rgb = np.asarray(msg.data, np.uint8).reshape(msg.height, msg.width, 3).copy()
                out[cam].append((stamp, rgb))
                wanted[cam].discard(stamp)
    return {cam: sorted(frames, key=lambda f: f[0]) for cam, frames in out.items()}


def frames_from_ring(images, per_camera: int = 3) -> dict[str, list[tuple[int, np.ndarray]]]:
    """The first, middle and last rgb8 frame of each camera whose pixels an ImageRing kept
    (robogym_ros.recorder.ring.ImageRing, ``--keep-pixels-mb``)."""
    kept: dict[str, list] = {}
    for meta in images.metas():
        if meta.encoding == "rgb8" and meta.data_len == meta.width * meta.height * 3:
            kept.setdefault(meta.camera, []).append(meta)
    out: dict[str, list[tuple[int, np.ndarray]]] = {}
    for cam, metas in kept.items():
        with_pixels = [(m, px) for m in metas if (px := images.pixels(m.stamp_ns, cam)) is not None]
        picks = sorted({0, len(with_pixels) // 2, len(with_pixels) - 1})[:per_camera] if with_pixels else []
        out[cam] = [(m.stamp_ns, px.reshape(m.height, m.width, 3)) for m, px in (with_pixels[i] for i in picks)]
    return out
