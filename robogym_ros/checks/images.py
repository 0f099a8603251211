"""Image checks: size, step and data length agree; stamps on the tick grid and on a joint tick."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .results import BYTES_PER_PIXEL, CheckResult, Finding, ImageMeta, _capped, _stamps, fmt_s


def check_images(images: Sequence[ImageMeta], control_dt_ns: int, *, joint_stamps_ns: Any = None,
                 expected_sizes: Mapping[str, tuple[int, int]] | None = None,
                 periods_ns: Mapping[str, int] | None = None, name: str = "images") -> CheckResult:
    """Size, step and data length agree; stamps on the tick grid and on a received joint tick.

    ``expected_sizes`` maps camera -> (width, height) and ``periods_ns`` camera -> period,
    both as the spec gives them; cameras missing from a mapping skip that part.
    """
    dt = int(control_dt_ns)
    if not images:
        return CheckResult(name, "no images", {"n_images": 0}, no_data=True)
    joint_ticks = None if joint_stamps_ns is None else set(_stamps(joint_stamps_ns, "joint_stamps_ns").tolist())
    bad: dict[str, list[tuple[int, str]]] = {k: [] for k in
                                             ("image_step", "image_data_len", "image_size", "image_encoding",
                                              "image_off_grid", "image_unmatched_tick")}
    per_camera: dict[str, list[int]] = {}
    for im in images:
        cam = im.camera or "?"
        per_camera.setdefault(cam, []).append(int(im.stamp_ns))
        bpp = BYTES_PER_PIXEL.get(im.encoding)
        if bpp is None:
            bad["image_encoding"].append((im.stamp_ns, f"{cam}: unknown encoding {im.encoding!r}"))
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
                                    {"n_images": len(items), "stamps_ns": _capped(s for s, _ in items)}))
    periods = {}
    for cam, stamps in per_camera.items():
        diffs = np.diff(np.sort(np.array(stamps, np.int64)))
        periods[cam] = int(np.median(diffs)) if len(diffs) else None
        want = (periods_ns or {}).get(cam)
        if want is not None and periods[cam] is not None and periods[cam] != int(want):
            findings.append(Finding("image_period", (
                f"{cam}: median image period {periods[cam] / 1e6:g} ms != {int(want) / 1e6:g} ms from the spec"),
                {"camera": cam, "period_ns": periods[cam], "expected_period_ns": int(want)}))
    figures = {"n_images": len(images), "per_camera": {c: len(s) for c, s in per_camera.items()},
               "period_ns": periods, **{f"n_{k}": len(v) for k, v in bad.items()}}
    summary = (f"{len(images)} images from {len(per_camera)} cameras; bad step {len(bad['image_step'])}, "
               f"bad length {len(bad['image_data_len'])}, off-grid {len(bad['image_off_grid'])}, no joint tick "
               f"{len(bad['image_unmatched_tick'])}")
    return CheckResult(name, summary, figures, tuple(findings))
