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
