"""Image checks: size, step and data length agree; stamps on the tick grid and on a joint tick;
and every frame due accounted for (received, skipped by the sim, or lost: robogym_ros.checks.camera_frames)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .arguments import as_dt_ns, as_stamps
from .camera_frames import FrameSchedule, account_frames, frames_summary
from .results import BYTES_PER_PIXEL, CheckResult, Finding, ImageMeta, capped, fmt_s


def check_images(images: Sequence[ImageMeta], control_dt_ns: int, *, joint_stamps_ns: Any = None,
                 expected_sizes: Mapping[str, tuple[int, int]] | None = None,
                 periods_ns: Mapping[str, int] | None = None,
                 schedules: Sequence[FrameSchedule] | None = None,
                 received_ns: Mapping[str, Any] | None = None,
                 skipped_ns: Mapping[str, Any] | None = None, skips_reported: bool | None = None,
                 name: str = "images") -> CheckResult:
    """Each image well-formed and on a received tick; every frame due accounted for.

    Reference for the frames: the sim's camera clock (robogym_ros.checks.camera_frames), a frame
    due at the first tick at or after each multiple of the camera period. ``schedules``
    say which stretches to account for (the recorder builds them from the spec, live
    period changes included); without them, ``periods_ns`` (camera -> period) accounts for
    the stretch from each camera's first to its last image. ``skipped_ns`` (camera ->
    stamps the sim reported skipped) tells skipped frames from lost ones; without it a
    missing frame is counted as unattributed, not failed. ``received_ns`` (camera -> every
    frame stamp received) defaults to the images given. ``expected_sizes`` maps camera ->
    (width, height) as the spec gives them.
    """
    dt = as_dt_ns(control_dt_ns)
    if not images:
        return CheckResult(name, "no images", {"n_images": 0}, no_data=True)
    joint_ticks = None if joint_stamps_ns is None else set(as_stamps(joint_stamps_ns, "joint_stamps_ns").tolist())
    findings, counts, per_camera = _validity(images, dt, joint_ticks, expected_sizes)
    if received_ns is None:
        received_ns = per_camera
    if schedules is None and periods_ns:
        schedules = [FrameSchedule(cam, int(periods_ns[cam]), min(st), max(st))
                     for cam, st in per_camera.items() if periods_ns.get(cam)]
    figures: dict[str, Any] = {"n_images": len(images), "per_camera": {c: len(s) for c, s in per_camera.items()},
                               "period_ns": {c: _median_period(s) for c, s in per_camera.items()},
                               **{f"n_{k}": v for k, v in counts.items()}}
    summary = (f"{len(images)} images from {len(per_camera)} cameras; bad step {counts['image_step']}, "
               f"bad length {counts['image_data_len']}, off-grid {counts['image_off_grid']}, no joint tick "
               f"{counts['image_unmatched_tick']}")
    if schedules:
        reported = skipped_ns is not None if skips_reported is None else skips_reported
        frame_figures, frame_findings = account_frames(schedules, received_ns, skipped_ns or {}, dt,
                                                       skips_reported=reported)
        figures.update(frame_figures)
        findings.extend(frame_findings)
        outside = _outside_windows(images, frame_figures["frames_per_camera"])
        figures["n_images_not_judged"] = outside
        summary += "; " + frames_summary(frame_figures)
        if outside:
            summary += f"; {outside} of the {len(images)} images outside the frames judged (not counted above)"
    return CheckResult(name, summary, figures, tuple(findings))


def _outside_windows(images: Sequence[ImageMeta], per_camera: Mapping[str, Mapping[str, Any]]) -> int:
    """Images not in any window whose due frames were accounted for (e.g. before the frames were
    judged from, or of a camera no schedule covers): they are in the image count, not the frames'."""
    outside = 0
    for im in images:
        spans = per_camera.get(im.camera or "?", {}).get("due_ns", ())
        outside += not any(lo <= im.stamp_ns <= hi for lo, hi in spans)
    return outside


def _median_period(stamps: Sequence[int]) -> int | None:
    diffs = np.diff(np.sort(np.array(stamps, np.int64)))
    return int(np.median(diffs)) if len(diffs) else None


def _validity(images, dt, joint_ticks, expected_sizes):
    bad: dict[str, list[tuple[int, str]]] = {k: [] for k in
                                             ("image_step", "image_data_len", "image_size", "image_encoding",
                                              "image_off_grid", "image_unmatched_tick")}
    per_camera: dict[str, list[int]] = {}
    for im in images:
        cam = im.camera or "?"
        per_camera.setdefault(cam, []).append(int(im.stamp_ns))
        bpp = BYTES_PER_PIXEL.get(im.encoding)
        if bpp is None:
            bad["image_encoding"].append((im.stamp_ns, f"{cam}: unknown encoding {im.encoding[:40]!r}"))
        elif im.step != im.width * bpp:
            bad["image_step"].append((im.stamp_ns, f"{cam}: step {im.step} != width*{bpp} = {im.width * bpp} "
                                                   f"({im.encoding})"))
        if im.data_len != im.step * im.height:
            bad["image_data_len"].append((im.stamp_ns, f"{cam}: len(data) {im.data_len} != step*height = "
                                                       f"{im.step * im.height}"))
        want = (expected_sizes or {}).get(im.camera)
        if im.width <= 0 or im.height <= 0 or (want is not None and (im.width, im.height) != tuple(want)):
            bad["image_size"].append((im.stamp_ns, f"{cam}: {im.width}x{im.height}"
                                                   + (f" != {want[0]}x{want[1]}" if want else "")))
        if im.stamp_ns % dt:
            bad["image_off_grid"].append((im.stamp_ns, f"{cam}: stamp {fmt_s(im.stamp_ns)} is off the tick grid "
                                                       f"(control dt {dt / 1e6:g} ms)"))
        elif joint_ticks is not None and im.stamp_ns not in joint_ticks:
            bad["image_unmatched_tick"].append((im.stamp_ns, f"{cam}: stamp {fmt_s(im.stamp_ns)} matches no "
                                                             f"received joint_states tick"))
    findings = []
    for code, items in bad.items():
        if items:
            findings.append(Finding(code, f"{len(items)} of {len(images)} images: {items[0][1]}"
                                    + (f" (and {len(items) - 1} more)" if len(items) > 1 else ""),
                                    {"n_images": len(items), "stamps_ns": capped(s for s, _ in items)}))
    return findings, {k: len(v) for k, v in bad.items()}, per_camera
