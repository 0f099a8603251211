"""What an export needs from a bag beyond the checks' reading (robogym_ros.recorder.offline):
the image pixels, streamed in bag order, and the targets the sim applied at each tick.

``read_bag`` drops pixels (a long recording of them does not fit in memory); here they are
yielded one message at a time, so an exporter holds only the frames it is assembling.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import get_typestore

from robogym_ros.checks import clip
from robogym_ros.recorder.bag.format import IMAGE, JOINT_STATE, TYPESTORE, BagError
from robogym_ros.recorder.bag.reader import storage_target
from robogym_ros.recorder.bag.series import JointSeries, camera_name, ends_with, header_stamp_ns, joint_series, reorder

# The targets the sim applied during each control tick, stamped with the tick (see
# robogym_ros.export.episodes); a JointState whose ``position`` holds the targets.
TARGETS_SUFFIX = ("ground_truth", "joint_targets")


def _open(path: str | Path) -> tuple[Path, Reader]:
    target = storage_target(Path(path))
    reader = Reader(target)
    try:
        reader.open()
    except Exception as err:  # noqa: BLE001 - rosbags, sqlite, zstd: one clear line for the user
        raise BagError(f"cannot read bag {clip(path)}: {type(err).__name__}: {clip(err, 200)}", err) from None
    return target, reader


def image_topics(path: str | Path) -> dict[str, str]:
    """camera name -> its image topic (``.../<camera>/image_raw`` of type sensor_msgs/Image)."""
    _, reader = _open(path)
    try:
        return {camera_name(c.topic): c.topic for c in reader.connections if c.msgtype == IMAGE}
    finally:
        reader.close()


def iter_images(path: str | Path, cameras: Sequence[str]) -> Iterator[tuple[str, int, np.ndarray]]:
    """(camera, stamp_ns, (h, w, 3) uint8 image) for each rgb8 image of ``cameras``, in bag order.

    Each image is a new array (nothing aliases the reader's buffers). Another encoding, or a
    size that does not match its width, height and step, is a BagError naming the message.
    """
    typestore = get_typestore(TYPESTORE)
    _, reader = _open(path)
    try:
        by_topic = {c.topic: camera_name(c.topic) for c in reader.connections
                    if c.msgtype == IMAGE and camera_name(c.topic) in cameras}
        conns = [c for c in reader.connections if c.topic in by_topic]
        for conn, _, raw in reader.messages(connections=conns):
            msg = typestore.deserialize_cdr(raw, conn.msgtype)
            yield by_topic[conn.topic], header_stamp_ns(msg.header), _pixels(conn.topic, msg)
    finally:
        reader.close()


def _pixels(topic: str, msg: Any) -> np.ndarray:
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if msg.encoding != "rgb8":
        raise BagError(f"{topic} at {header_stamp_ns(msg.header)} ns: encoding {clip(msg.encoding, 40)!r}, want rgb8")
    data = np.asarray(msg.data, dtype=np.uint8)
    if step < 3 * w or len(data) != h * step:
        raise BagError(f"{topic} at {header_stamp_ns(msg.header)} ns: {len(data)} bytes for {w}x{h} with step {step}")
    return data.reshape(h, step)[:, :3 * w].reshape(h, w, 3).copy()


def read_targets(path: str | Path, joint_names: Sequence[str]) -> JointSeries | None:
    """The per-tick targets topic (``.../ground_truth/joint_targets``), columns in ``joint_names``
    order; None when the bag does not hold it."""
    typestore = get_typestore(TYPESTORE)
    _, reader = _open(path)
    try:
        conns = [c for c in reader.connections if c.msgtype == JOINT_STATE and ends_with(c.topic, TARGETS_SUFFIX)]
        topics = sorted({c.topic for c in conns})
        if not topics:
            return None
        if len(topics) > 1:
            raise BagError(f"{clip(path)}: {len(topics)} targets topics ({', '.join(topics)}); record one sim")
        msgs = [(log_ns, typestore.deserialize_cdr(raw, conn.msgtype))
                for conn, log_ns, raw in reader.messages(connections=conns)]
    finally:
        reader.close()
    if not msgs:
        return None
    series = joint_series(topics[0], msgs, Path(path))
    if sorted(series.names) != sorted(joint_names):
        raise BagError(f"{topics[0]} names joints {list(series.names)}, joint_states {list(joint_names)}")
    return reorder(series, tuple(joint_names))
