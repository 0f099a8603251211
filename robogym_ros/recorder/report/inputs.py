"""What a report is drawn from when it is not handed arrays: a verdict's JSON, and the camera
frames of a bag or of the live recorder's image ring (for the contact sheet). No rclpy."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from robogym_ros.checks import CheckResult
from robogym_ros.contract import NS_PER_S
from robogym_ros.recorder.verdict import Verdict


def verdict_from_dict(d: Mapping[str, Any]) -> Verdict:
    """A Verdict back from its JSON (``Verdict.to_dict``), e.g. the recorder's ``--json`` file."""
    from robogym_ros.checks import Finding
    results = [CheckResult(c["name"], c.get("summary", ""), dict(c.get("figures") or {}),
                           tuple(Finding(f["code"], f["message"], dict(f.get("figures") or {}))
                                 for f in c.get("findings", ())),
                           no_data=c.get("status") == "no_data")
               for c in d.get("checks", ())]
    return Verdict(results, title=d.get("title", "robogym_ros verdict"), usage_error=d.get("usage_error"))


def judged_window_ns(verdict: Verdict) -> tuple[int, int] | None:
    """The sim-time window the verdict judged frames in (the images check's), else the slots' (the
    slot checks' window); None when it judged neither. The contact sheet shows frames inside it."""
    for r in verdict.results:
        if r.name == "images" and r.figures.get("frames_window_ns"):
            lo, hi = r.figures["frames_window_ns"]
            return int(lo), int(hi)
    for r in verdict.results:
        window = r.figures.get("window") if r.name == "slot_error" else None
        if window and window.get("first_stamp_ns") is not None:
            return int(window["first_stamp_ns"]), int(window["last_stamp_ns"])
    return None


def _inside(stamp_ns: int, window_ns: tuple[int, int] | None) -> bool:
    return window_ns is None or window_ns[0] <= stamp_ns <= window_ns[1]


def frames_from_bag(path: str | Path, images, per_camera: int = 3,
                    window_ns: tuple[int, int] | None = None) -> dict[str, list[tuple[int, np.ndarray]]]:
    """The first, middle and last rgb8 frame of each camera in a bag, for the contact sheet.

    ``images``: the bag's image metadata (``BagData.images``), which says which stamps to decode.
    ``window_ns``: pick them inside this sim-time window (:func:`judged_window_ns`); a camera with
    none inside maps to an empty list.
    """
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_typestore

    from robogym_ros.recorder.bag.format import TYPESTORE

    wanted: dict[str, set[int]] = {}
    by_camera: dict[str, list[int]] = {}
    for im in images:
        if im.encoding == "rgb8":
            by_camera.setdefault(im.camera, [])
            if _inside(im.stamp_ns, window_ns):
                by_camera[im.camera].append(im.stamp_ns)
    for cam, stamps in by_camera.items():
        stamps.sort()
        k = len(stamps)
        wanted[cam] = {stamps[i] for i in sorted({0, k // 2, k - 1})[:per_camera]} if k else set()
    out: dict[str, list[tuple[int, np.ndarray]]] = {cam: [] for cam in wanted}
    if not any(wanted.values()):
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


def frames_from_ring(images, per_camera: int = 3,
                     window_ns: tuple[int, int] | None = None) -> dict[str, list[tuple[int, np.ndarray]]]:
    """The first, middle and last rgb8 frame of each camera whose pixels an ImageRing kept
    (robogym_ros.recorder.ring.ImageRing, ``--keep-pixels-mb``), inside ``window_ns`` if given."""
    kept: dict[str, list] = {}
    for meta in images.metas():
        if meta.encoding == "rgb8" and meta.data_len == meta.width * meta.height * 3:
            kept.setdefault(meta.camera, []).append(meta)
    out: dict[str, list[tuple[int, np.ndarray]]] = {}
    for cam, metas in kept.items():
        with_pixels = [(m, px) for m in metas if _inside(m.stamp_ns, window_ns)
                       and (px := images.pixels(m.stamp_ns, cam)) is not None]
        picks = sorted({0, len(with_pixels) // 2, len(with_pixels) - 1})[:per_camera] if with_pixels else []
        out[cam] = [(m.stamp_ns, px.reshape(m.height, m.width, 3)) for m, px in (with_pixels[i] for i in picks)]
    return out
