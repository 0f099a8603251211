"""The report's streams figure: what each stream delivered over sim time, and where it stopped.

One row per stream the ``streams`` check watched (joint_states, ground truth): a bar from its
first to its last stamp received and, for a stream that stopped, a red span from its last
stamp to where the recording ended in sim time (the check's ``silent_to_ns``: the sim's pause
when it reported one, else the end estimated at the speed the stream ran; without an estimate,
a red marker at the stop and the silence in wall seconds). One row per camera the ``images``
check accounted for: its judged windows, the frames lost (red crosses) and a camera that
stopped (red span). Drawn from the checks' own figures, so it shows what they judged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from robogym_ros.checks import CheckResult
from robogym_ros.contract import NS_PER_S
from robogym_ros.recorder.report.figures import (
    FAIL_RGB,
    FigureInfo,
    fail_title,
    level,
    save,
)

RECEIVED_RGB, PAUSED_RGB = "#1565c0", "0.45"
TIME_FINDINGS = ("stream_stopped", "image_frames_lost", "camera_stopped")  # findings placed in sim time


def streams_figure(out: Path, streams: CheckResult, images: CheckResult | None = None) -> FigureInfo:
    rows: list[str] = []
    spans: list[dict[str, Any]] = []  # the failures drawn, in sim seconds (and pixels, once drawn)
    fig = Figure(figsize=(10, 2.2 + 0.4 * _n_rows(streams, images)), layout="constrained")
    ax = fig.add_subplot()
    per = streams.figures.get("streams", {})
    stops = {f.figures.get("topic"): f for f in streams.findings if f.code == "stream_stopped"}
    lo_s, hi_s = [], []
    for topic, p in per.items():
        y = len(rows)
        rows.append(topic)
        first, last = p.get("first_stamp_ns"), p.get("last_stamp_ns")
        if last is None:
            continue
        first = last if first is None else first
        ax.barh(y, (last - first) / NS_PER_S, left=first / NS_PER_S, height=0.5, color=RECEIVED_RGB,
                label="received" if y == 0 else None)
        lo_s.append(first / NS_PER_S)
        hi_s.append(last / NS_PER_S)
        if p.get("paused"):
            ax.plot(last / NS_PER_S, y, "|", color=PAUSED_RGB, ms=18, mew=3, label="sim paused here")
        stop = stops.get(topic)
        if stop is not None:
            to = stop.figures.get("silent_to_ns")
            silent = stop.figures.get("silent_s", 0.0)
            if to is not None and to > last:
                ax.barh(y, (to - last) / NS_PER_S, left=last / NS_PER_S, height=0.7, color=FAIL_RGB,
                        hatch="//", edgecolor="white",
                        label=f"silent: nothing for the last {silent:.2f} s (wall) of the recording")
                hi_s.append(to / NS_PER_S)
            else:
                ax.plot(last / NS_PER_S, y, ">", color=FAIL_RGB, ms=12,
                        label=f"stopped: nothing for the last {silent:.2f} s (wall) of the recording")
            spans.append({"row": topic, "check": streams.name, "code": stop.code, "from_s": last / NS_PER_S,
                          "to_s": None if to is None else to / NS_PER_S, "y": y})
    if images is not None:
        _camera_rows(ax, images, rows, spans, lo_s, hi_s)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_ylim(len(rows) - 0.4, -0.6)
    if lo_s:
        pad = max(0.02 * (max(hi_s) - min(lo_s)), 0.05)
        ax.set_xlim(min(lo_s) - pad, max(hi_s) + pad)
    ax.set_xlabel("sim time [s]")
    ax.grid(axis="x", color="0.9")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        # below the axes (matplotlib 3.6, Ubuntu noble's, has no "outside" legend placement)
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3),
                  ncol=2)
    failed = streams.status == "fail" or bool(images is not None and _time_findings(images))
    worst = [f for f in (*streams.findings, *(_time_findings(images) if images is not None else ()))]
    head = "streams over sim time: what arrived, and where a stream stopped"
    if failed:
        head += f" -- FAIL: {worst[0].message}" if worst else " -- FAIL"
    fail_title(ax, head, failed)
    path = out / "streams.png"
    save(fig, path)
    _in_pixels(fig, ax, spans)
    caption = ("Each stream over sim time: received from its first to its last stamp; a stream that stopped "
               "before the recording ended is red from its last stamp to the end")
    if images is not None:
        caption += "; each camera's judged frames, the lost ones crossed"
    return FigureInfo("streams", path, caption, level(failed),
                      {"rows": rows, "failures": spans, "x_axis": ax.get_xlabel(),
                       "xlim_s": [float(v) for v in ax.get_xlim()]},
                      checks=(streams.name,) + ((images.name,) if images is not None else ()))


def _n_rows(streams: CheckResult, images: CheckResult | None) -> int:
    cams = images.figures.get("frames_per_camera", {}) if images is not None else {}
    return max(len(streams.figures.get("streams", {})) + len(cams), 1)


def _time_findings(result: CheckResult) -> list:
    return [f for f in result.findings if f.code in TIME_FINDINGS]


def _camera_rows(ax, images: CheckResult, rows: list[str], spans: list, lo_s: list, hi_s: list) -> None:
    lost = {f.figures.get("camera"): f for f in images.findings if f.code == "image_frames_lost"}
    stopped = {f.figures.get("camera"): f for f in images.findings if f.code == "camera_stopped"}
    for cam, c in images.figures.get("frames_per_camera", {}).items():
        y = len(rows)
        rows.append(f"camera {cam}")
        for a, b in c.get("due_ns", ()):
            ax.barh(y, (b - a) / NS_PER_S, left=a / NS_PER_S, height=0.5, color="#90caf9",
                    label="frames judged (due in this window)")
            lo_s.append(a / NS_PER_S)
            hi_s.append(b / NS_PER_S)
        f = lost.get(cam)
        if f is not None:
            t = np.asarray(f.figures.get("stamps_ns", ()), np.float64) / NS_PER_S
            ax.plot(t, np.full(len(t), y), "x", color=FAIL_RGB, ms=8, mew=2,
                    label="frame lost (the first listed)")
            if len(t):
                spans.append({"row": f"camera {cam}", "check": images.name, "code": f.code,
                              "from_s": float(t.min()), "to_s": float(t.max()), "y": y})
        f = stopped.get(cam)
        if f is not None:
            last, end = f.figures.get("last_frame_ns"), f.figures.get("end_ns")
            start = last if last is not None else min((a for a, _ in c.get("due_ns", ())), default=end)
            ax.barh(y, (end - start) / NS_PER_S, left=start / NS_PER_S, height=0.7, color=FAIL_RGB, hatch="//",
                    edgecolor="white", label="camera stopped: no frame while joint_states went on")
            spans.append({"row": f"camera {cam}", "check": images.name, "code": f.code,
                          "from_s": start / NS_PER_S, "to_s": end / NS_PER_S, "y": y})


def _in_pixels(fig: Figure, ax, spans: list[dict[str, Any]]) -> None:
    """Each drawn failure's box in the saved PNG's pixels (x0, y0, x1, y1; origin top left)."""
    height = fig.bbox.height
    for s in spans:
        to = s["to_s"] if s["to_s"] is not None else s["from_s"]
        (x0, y0), (x1, y1) = ax.transData.transform([(s["from_s"], s["y"] + 0.35), (to, s["y"] - 0.35)])
        s["px"] = [int(round(min(x0, x1))), int(round(height - max(y0, y1))),
                   int(round(max(x0, x1))), int(round(height - min(y0, y1)))]
