"""Which camera frames were due, and what became of each: received, skipped by the sim, or lost.

The sim's camera clock makes a frame due at the first tick at or after each multiple of the
camera period (sim time, independent of decimation). A frame the renderer was too busy for
is skipped by the sim and reported on the skips topic; a frame that was published and did
not arrive is lost on the way. Only lost frames are faults: skipping is documented
behaviour at real_time_factor > 0 ("skip_when_busy"). This module is the pure formula; it
must agree with the sim's CameraClock, which a test checks (the checks tier may not import
the camera tier).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .arguments import as_dt_ns
from .results import Finding, capped, fmt_list, fmt_s


def frame_due_stamps(lo_ns: int, hi_ns: int, period_ns: int, control_dt_ns: int, *,
                     first_tick_ns: int | None = None) -> np.ndarray:
    """Stamps in [lo_ns, hi_ns] at which a frame is due: the first tick at or after each
    multiple of ``period_ns`` on the tick grid ``n * control_dt_ns``.

    ``first_tick_ns`` is where the camera clock started (the sim's first tick, or the
    first tick after a live period change): every multiple before it falls on it.
    """
    dt = as_dt_ns(control_dt_ns)
    period = as_dt_ns(period_ns, "period_ns")
    lo, hi = int(lo_ns), int(hi_ns)
    if hi < lo:
        return np.zeros(0, np.int64)
    m_lo = max(0, (lo - dt) // period)
    m = np.arange(m_lo, hi // period + 1, dtype=np.int64)
    due = -(-(m * period) // dt) * dt  # ceil to the tick grid, in integers
    if first_tick_ns is not None:
        due = np.maximum(due, int(first_tick_ns))
    due = np.unique(due)
    return due[(due >= lo) & (due <= hi)]


@dataclass(frozen=True)
class FrameSchedule:
    """A stretch of one camera's frames to account for: due frames in [start_ns, end_ns].

    ``every_frame``: the sim renders every due frame (real_time_factor 0), so a missing frame
    is lost even without skip reports. ``tail_ns``: frames due this close to ``end_ns`` may
    still have been in flight when the recording ended, and are not judged unless later
    frames of the camera arrived.
    """
    camera: str
    period_ns: int
    start_ns: int
    end_ns: int
    every_frame: bool = False
    tail_ns: int = 0
    first_tick_ns: int | None = None


def account_frames(schedules: Sequence[FrameSchedule], received_ns: Mapping[str, Any],
                   skipped_ns: Mapping[str, Any], control_dt_ns: int, *,
                   skips_reported: bool) -> tuple[dict[str, Any], list[Finding]]:
    """Every due frame of every schedule: received, skipped by the sim, lost, or not judged.

    ``received_ns`` / ``skipped_ns`` map camera -> stamps of frames that arrived / that the
    sim reported skipped. Without skip reports (``skips_reported`` False) a missing frame of
    a skip-when-busy camera cannot be told skipped from lost: it is counted as unattributed,
    not failed. A camera whose frames stop while ``end_ns`` is more than ``tail_ns`` further
    is a fault of its own ("camera_stopped").

    The counts add up: ``n_due`` = received + skipped + lost + unattributed + in flight (due
    after the newest frame received, within ``tail_ns`` of the end: not judged) + after stop
    (due after a stopped camera's last frame). Frames received that were not due are
    ``n_off_schedule``, outside ``n_due``.
    """
    dt = as_dt_ns(control_dt_ns)
    per: dict[str, dict[str, Any]] = {}
    lost_all: dict[str, list[int]] = {}
    off_all: dict[str, list[int]] = {}
    stopped: list[tuple[str, int, int]] = []
    for sch in schedules:
        got = np.unique(np.asarray(received_ns.get(sch.camera, ()), np.int64))
        skipped = np.unique(np.asarray(skipped_ns.get(sch.camera, ()), np.int64))
        c = per.setdefault(sch.camera, {"n_due": 0, "n_received": 0, "n_skipped": 0, "n_lost": 0,
                                        "n_unattributed": 0, "n_off_schedule": 0, "n_in_flight": 0, "n_after_stop": 0,
                                        "period_ns": [], "judged_ns": [], "due_ns": []})
        if sch.period_ns <= 0 or sch.end_ns < sch.start_ns:
            continue
        end = sch.end_ns
        c["due_ns"].append([int(sch.start_ns), int(sch.end_ns)])
        # Frames are published in order, so a frame received proves every earlier one received
        # or reported skipped; a skip report proves nothing about the frames before it (they
        # may still be rendering). After the newest frame received, frames may be in flight.
        newest = int(got.max()) if len(got) else None
        if newest is None or newest < end:
            last = max(newest, sch.start_ns - 1) if newest is not None else sch.start_ns - 1
            tail = frame_due_stamps(last + 1, end, sch.period_ns, dt, first_tick_ns=sch.first_tick_ns)
            unaccounted = np.setdiff1d(tail, skipped)
            if len(unaccounted) and end - last > max(sch.tail_ns, 0):
                stopped.append((sch.camera, newest, end))
                c["n_after_stop"] += len(unaccounted)  # camera_stopped names them
            else:
                c["n_in_flight"] += len(unaccounted)
            c["n_skipped"] += len(tail) - len(unaccounted)
            c["n_due"] += len(tail)
            end = last
        due = frame_due_stamps(sch.start_ns, end, sch.period_ns, dt, first_tick_ns=sch.first_tick_ns)
        in_window = got[(got >= sch.start_ns) & (got <= end)]
        missing = np.setdiff1d(due, np.union1d(in_window, skipped), assume_unique=True)
        c["n_due"] += len(due)
        c["n_received"] += int(np.isin(due, in_window).sum())
        c["n_skipped"] += int(np.isin(due, skipped).sum() - np.isin(due, np.intersect1d(in_window, skipped)).sum())
        c["period_ns"].append(int(sch.period_ns))
        c["judged_ns"].append([int(sch.start_ns), int(end)])
        off = np.setdiff1d(in_window, due, assume_unique=True)
        c["n_off_schedule"] += len(off)
        off_all.setdefault(sch.camera, []).extend(off.tolist())
        if skips_reported or sch.every_frame:
            c["n_lost"] += len(missing)
            lost_all.setdefault(sch.camera, []).extend(missing.tolist())
        else:
            c["n_unattributed"] += len(missing)
    findings: list[Finding] = []
    for cam, lost in lost_all.items():
        if lost:
            c = per[cam]
            why = ("neither received nor reported skipped by the sim (lost on the way)" if skips_reported else
                   "not received, though the sim renders every frame (camera_frames every_frame) and reports "
                   "no skips")
            findings.append(Finding("image_frames_lost", (
                f"{cam}: {len(lost)} of {c['n_due']} frames due were {why}: {fmt_list(lost)}"),
                {"camera": cam, "n_lost": len(lost), "n_due": c["n_due"], "stamps_ns": capped(lost)}))
    for cam, off in off_all.items():
        if off:
            findings.append(Finding("image_off_schedule", (
                f"{cam}: {len(off)} frames at ticks the camera clock does not make due (period "
                f"{per[cam]['period_ns'][0] / 1e6:g} ms from the spec): {fmt_list(off)}"),
                {"camera": cam, "n_frames": len(off), "stamps_ns": capped(off)}))
    for cam, last, end in stopped:
        since = "no frame at all" if last is None else f"no frame after {fmt_s(last)}"
        findings.append(Finding("camera_stopped", (
            f"{cam}: {since} while joint_states went on to {fmt_s(end)}"),
            {"camera": cam, "last_frame_ns": last, "end_ns": end}))
    totals = {k: sum(c[k] for c in per.values()) for k in
              ("n_due", "n_received", "n_skipped", "n_lost", "n_unattributed", "n_off_schedule", "n_in_flight",
               "n_after_stop")}
    spans = [span for c in per.values() for span in c["due_ns"]]
    window = [min(a for a, _ in spans), max(b for _, b in spans)] if spans else None
    return {"frames": totals, "frames_per_camera": per, "frames_window_ns": window,
            "skips_reported": skips_reported}, findings


def frames_summary(figures: Mapping[str, Any]) -> str:
    """One line whose counts add up: due = received + skipped + lost (+ missing, + in flight), over
    the sim-time window the frames were judged in; received frames that were not due are named."""
    t = figures["frames"]
    window = figures.get("frames_window_ns")
    over = f" over {fmt_s(window[0])}..{fmt_s(window[1])}" if window else ""
    text = (f"frames due {t['n_due']}{over}: received {t['n_received']}, skipped by the sim {t['n_skipped']}, "
            f"lost {t['n_lost']}")
    if t["n_unattributed"]:
        text += f", missing {t['n_unattributed']} (no skip reports: skipped cannot be told from lost)"
    if t["n_in_flight"]:
        text += f", in flight at the end {t['n_in_flight']} (not judged: due too close to the end to have arrived)"
    if t["n_after_stop"]:
        text += f", after the camera stopped {t['n_after_stop']} (camera_stopped)"
    if t["n_off_schedule"]:
        text += f"; {t['n_off_schedule']} more received off the camera's schedule"
    return text
