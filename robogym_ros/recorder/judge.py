"""The verdict's judgement of a recording, live or from a bag: the checks of a joint_states stream
(and its camera frames) against ground truth, and which slots and frames they judged.

The live recorder (robogym_ros.recorder.recording) and the offline check of a bag
(robogym_ros.recorder.offline) both gather their evidence and hand it here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from robogym_ros import checks
from robogym_ros.checks.camera_frames import frames_summary
from robogym_ros.checks.results import capped
from robogym_ros.contract import Spec
from robogym_ros.recorder.schedules import (
    OFFLINE_SETTLE_PERIODS,
    SpecChange,
    camera_period_ns,
    frame_schedules,
    live_changes_note,
)

SLOT_CHECKS = ("slot_error", "aliasing", "stale_payload", "velocity_fd", "velocity_reported", "buffer_audit")


@dataclass(frozen=True)
class FrameEvidence:
    """Every frame stamp received and reported skipped, per camera, and from where to judge."""
    received_ns: Mapping[str, Sequence[int]]
    skipped_ns: Mapping[str, Sequence[int]]
    skips_reported: bool  # the sim publishes skip reports (else skipped cannot be told from lost)
    judged_from_ns: Mapping[str, int | None]
    history: Sequence[SpecChange]
    speed: float = 1.0  # sim seconds per wall second
    earlier_runs: int = 0  # frames of sim runs before a restart: not judged
    # camera -> figures of a first frame that came late (recording.py: _check_first_frame)
    late_starts: Mapping[str, Mapping] = field(default_factory=dict)


def silence_s(spec: Spec) -> float:
    return checks.silence_threshold_s(spec.control_dt_s, spec.real_time_factor)


def verdict_results(stamps_ns, positions, velocities, true_stamps_ns, true_positions,
                    true_velocities, spec: Spec, *, images=(), grid_stamps_ns=None, truth_grid_stamps_ns=None,
                    frames: FrameEvidence | None = None, with_notes: bool = False):
    """The checks of a joint_states stream (+ images) against ground truth, live or from a bag.

    Slots outside the span of the ground truth received are left out (and counted): the
    first ticks may arrive before the truth subscription is matched, the last before their
    truth does. Within the span, a slot without truth is a finding. ``grid_stamps_ns``
    (every stamp received, when the rings kept only the newest) feeds the tick grid; the
    slot checks say which window they judged; ``truth_grid_stamps_ns`` (every ground-truth stamp
    received, in order) feeds the check of the truth's own stamps. Returns the results (and,
    ``with_notes``, the sentences saying what was judged).
    """
    dt = spec.control_dt_ns
    stamps = np.asarray(stamps_ns, np.int64)
    true_stamps = np.asarray(true_stamps_ns, np.int64)
    all_stamps = stamps if grid_stamps_ns is None else np.asarray(grid_stamps_ns, np.int64)
    if len(true_stamps):
        inside = (stamps >= true_stamps.min()) & (stamps <= true_stamps.max())
    else:
        inside = np.zeros(len(stamps), bool)
    keep = np.flatnonzero(inside)
    vel = np.asarray(velocities)[keep]
    carries_velocity = bool(len(vel) and np.isfinite(vel).any())
    results = checks.audit_stream(
        stamps[keep], np.asarray(positions)[keep], true_stamps, true_positions, dt,
        velocities=vel if carries_velocity else None, true_velocities=true_velocities,
        decimation=spec.decimation, joint_names=spec.joint_names, grid_stamps_ns=all_stamps)
    grid = checks.by_name(results, "tick_grid")
    grid.figures["slots_outside_truth_span"] = int(len(stamps) - len(keep))
    window, note = _window(all_stamps, stamps, keep)
    results = [with_window(r, window) if r.name in SLOT_CHECKS else r for r in results]
    notes = [note]
    if not carries_velocity:
        notes.append("joint_states carry no velocity: velocity_reported not run")
    results.append(truth_stamps_result(true_stamps if truth_grid_stamps_ns is None else truth_grid_stamps_ns, dt))
    if spec.cameras:
        results.append(_image_result(spec, images, all_stamps, frames, notes))
    return (results, notes) if with_notes else results


def truth_stamps_result(stamps_ns, control_dt_ns: int) -> checks.CheckResult:
    """The ground truth's own stamps: one message per tick. A repeated or ahead-of-time stamp is a
    message injected or sent twice (or a second publisher), named as such; the slot checks alone
    would show it, if at all, as an error in some slot. Ticks missing from the truth are the slot
    checks' to judge (a slot without truth), not this check's."""
    stamps = np.asarray(stamps_ns, np.int64)
    if len(stamps) == 0:
        return checks.CheckResult("truth_stamps", "no ground truth received", {"n_received": 0}, no_data=True)
    kinds, _ = checks.classify_stamps(stamps, control_dt_ns)
    dups, early = stamps[kinds == checks.DUPLICATE], stamps[kinds == checks.AHEAD]
    findings = [_truth_finding(name, what, why, key, found) for name, what, why, key, found in (
        ("truth_duplicated", "received again with a stamp already seen:",
         "a message sent twice, or a second publisher?", "n_duplicated", dups),
        ("truth_ahead_of_time", "stamped ahead of time:", "an injected message, or a second publisher?",
         "n_ahead_of_time", early)) if len(found)]
    summary = (f"{len(stamps)} ground-truth messages: duplicated {len(dups)}, ahead of time {len(early)}")
    return checks.CheckResult("truth_stamps", summary, {"n_received": int(len(stamps)), "n_duplicated": int(len(dups)),
                                                        "n_ahead_of_time": int(len(early))}, tuple(findings))


def _window(all_stamps: np.ndarray, stamps: np.ndarray, keep: np.ndarray) -> tuple[dict, str]:
    """Which slots the slot checks judged, as figures and as the verdict's sentence."""
    n_all, n_ring, n_kept = len(all_stamps), len(stamps), len(keep)
    lo = int(stamps[keep].min()) if n_kept else None
    hi = int(stamps[keep].max()) if n_kept else None
    overwritten = n_all - n_ring
    window = {"n_received": n_all, "n_in_ring": n_ring, "n_overwritten": overwritten, "n_judged": n_kept,
              "first_stamp_ns": lo, "last_stamp_ns": hi}
    span = f"{checks.fmt_s(lo)}..{checks.fmt_s(hi)}" if n_kept else "nothing"
    if overwritten > 0:
        text = (f"joint_states: checked the newest {n_ring} of {n_all} received; {overwritten} overwritten by "
                f"the ring (raise --capacity to keep all); slot checks judged {n_kept} slots, {span}")
    else:
        text = f"joint_states: checked all {n_all} received; slot checks judged {n_kept} slots, {span}"
    if n_kept < n_ring:
        text += f" ({n_ring - n_kept} outside the ground truth received)"
    return window, text


def with_window(result: checks.CheckResult, window: dict | None) -> checks.CheckResult:
    if window is None:
        return result
    result.figures["window"] = window
    if window["n_overwritten"] > 0:
        span = (f"{checks.fmt_s(window['first_stamp_ns'])}..{checks.fmt_s(window['last_stamp_ns'])}"
                if window["n_judged"] else "nothing")
        return replace(result, summary=f"{result.summary} [newest {window['n_in_ring']} of "
                                       f"{window['n_received']} received: {span}]")
    return result


def _image_result(spec: Spec, images, all_stamps: np.ndarray, frames: FrameEvidence | None,
                  notes: list[str]) -> checks.CheckResult:
    dt = spec.control_dt_ns
    runs = checks.classify_stamps(all_stamps, dt)[1] if len(all_stamps) else np.zeros(0, np.int64)
    last_run = all_stamps[runs == runs[-1]] if len(all_stamps) else all_stamps
    lo, hi = (int(last_run.min()), int(last_run.max())) if len(last_run) else (0, -1)
    in_span = [im for im in images if lo <= im.stamp_ns <= hi]
    sizes = {c.name: (c.width, c.height) for c in spec.cameras if c.width}
    if frames is None:
        periods = {c.name: camera_period_ns(spec, c.name) for c in spec.cameras if camera_period_ns(spec, c.name)}
        return checks.check_images(in_span, dt, joint_stamps_ns=all_stamps, expected_sizes=sizes,
                                   periods_ns=periods)
    schedules, extra = frame_schedules(frames.history, lo, hi, judged_from_ns=frames.judged_from_ns,
                                       speed=frames.speed)
    result = checks.check_images(in_span, dt, joint_stamps_ns=all_stamps, expected_sizes=sizes,
                                 schedules=schedules, received_ns=frames.received_ns,
                                 skipped_ns=frames.skipped_ns, skips_reported=frames.skips_reported)
    if not in_span and schedules:  # nothing arrived in the window: still account for what was due
        figures, findings = checks.account_frames(schedules, frames.received_ns, frames.skipped_ns, dt,
                                                  skips_reported=frames.skips_reported)
        result = checks.CheckResult("images", "no images in the window; " + frames_summary(figures),
                                    {"n_images": 0, **figures}, tuple(findings), no_data=not findings)
    result.figures.update(extra, frames_of_earlier_runs=frames.earlier_runs)
    late = [checks.Finding("camera_started_late", (
        f"{cam}: first frame {f['waited_s']:.2f} s (wall) after its topic was live, stamped {f['missed_s']:.2f} s "
        f"(sim) after the joint tick of that moment: the frames due in between were never sent"), dict(f, camera=cam))
        for cam, f in sorted(frames.late_starts.items())]
    if late:
        result = replace(result, findings=result.findings + tuple(late), no_data=False)
    changes = live_changes_note(extra.get("period_change_zones", ()))
    if changes:
        notes.append(changes)
    if not frames.skips_reported and any(not s.every_frame for s in schedules):
        notes.append("the sim reports no skipped frames (no cameras/skipped publisher): a missing frame "
                     "cannot be told skipped from lost, and is counted, not failed")
    return result


def offline_frame_evidence(spec: Spec, images, skips: Sequence[tuple[int, str]] | None) -> FrameEvidence:
    """Frame evidence from a bag: frames judged from OFFLINE_SETTLE_PERIODS after each camera's first."""
    received: dict[str, list[int]] = {c.name: [] for c in spec.cameras}
    for im in images:
        received.setdefault(im.camera, []).append(int(im.stamp_ns))
    skipped: dict[str, list[int]] = {c.name: [] for c in spec.cameras}
    for stamp, names in skips or ():
        for cam in names.split(","):
            if cam.strip() in skipped:
                skipped[cam.strip()].append(int(stamp))
    judged_from = {}
    for cam in spec.cameras:
        got = received.get(cam.name)
        period = camera_period_ns(spec, cam.name)
        judged_from[cam.name] = (min(got) + OFFLINE_SETTLE_PERIODS * period) if got else None
    return FrameEvidence(received, skipped, skips is not None, judged_from, [SpecChange(None, spec)])


def _truth_finding(name: str, what: str, why: str, key: str, found: np.ndarray) -> checks.Finding:
    """One kind of wrong ground-truth stamp: how many, the first, and what it suggests."""
    n = len(found)
    return checks.Finding(name, (
        f"{n} ground-truth message{'s' if n > 1 else ''} {what} {checks.fmt_s(found[0])}"
        + (f" (and {n - 1} more)" if n > 1 else "") + f"; {why}"), {key: int(n), "stamps_ns": capped(found)})
