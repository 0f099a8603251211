"""The sim's topics as arrays: what reading a bag gives (:class:`BagData` and its series), and
the decoding of messages into them (shared by the bag reader and the export's streams).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from robogym_ros.checks import ImageMeta, clip
from robogym_ros.contract import POSE_LAYOUT, Spec, join_stamp
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.recovery import Recovery
from robogym_ros.recorder.decoding import Malformed


@dataclass(frozen=True)
class JointSeries:
    """One JointState topic in bag (arrival) order; NaN where a message had no values."""
    topic: str
    names: tuple[str, ...]
    stamp_ns: np.ndarray  # header stamps, int64
    log_time_ns: np.ndarray  # when recorded
    position: np.ndarray  # (n, n_joints)
    velocity: np.ndarray
    effort: np.ndarray

    def __len__(self) -> int:
        return len(self.stamp_ns)


@dataclass(frozen=True)
class PoseSeries:
    """One PoseArray topic in bag order."""

    topic: str
    stamp_ns: np.ndarray
    log_time_ns: np.ndarray
    poses: np.ndarray  # (n, n_objects, 7) in contract.POSE_LAYOUT order

    def __len__(self) -> int:
        return len(self.stamp_ns)


@dataclass(frozen=True)
class CameraInfoSeries:
    """One camera's CameraInfo topic: stamps, and the intrinsics of its first message."""

    topic: str
    camera: str
    stamp_ns: np.ndarray
    width: int  # from the first message
    height: int
    distortion_model: str
    k: tuple[float, ...]
    d: tuple[float, ...]


@dataclass(frozen=True)
class BagData:
    """What read_bag found: the sim's topics as arrays, the spec, and what was recovered."""

    path: Path
    storage: str  # "mcap" or "sqlite3"
    topics: dict[str, str]  # name -> type
    message_counts: dict[str, int]
    joint_states: JointSeries
    ground_truth: JointSeries | None = None  # columns in joint_states' name order when the names agree
    object_poses: PoseSeries | None = None
    images: tuple[ImageMeta, ...] = ()  # all cameras, bag order
    camera_info: dict[str, CameraInfoSeries] = field(default_factory=dict)
    spec: Spec | None = None  # the newest spec in the bag
    specs: tuple[tuple[int, Spec], ...] = ()  # (log time, spec): every spec, live changes included
    run_states: tuple[tuple[int, str], ...] = ()  # (log time, RunState JSON) from robogym_sim/state
    camera_skips: tuple[tuple[int, str], ...] | list | None = None  # (stamp, cameras); None: topic not recorded
    recorder_notes: tuple[int, str] | None = None  # (log time, JSON) the recorder wrote at its end
    end_log_time_ns: int | None = None  # the newest log time of any message read
    recovery: Recovery | None = None  # set when the bag was truncated and read up to the cut
    malformed: dict[str, Malformed] = field(default_factory=dict)  # topic -> messages that did not deserialize
    decoded: dict[str, int] = field(default_factory=dict)  # joint_states and ground truth topics -> messages read


def _parts(topic: str) -> list[str]:
    return [p for p in topic.split("/") if p]


def ends_with(topic: str, suffix: Sequence[str]) -> bool:
    parts = _parts(topic)
    return parts[-len(suffix):] == list(suffix)


def header_stamp_ns(header: Any) -> int:
    return join_stamp(header.stamp.sec, header.stamp.nanosec)


def _names(names: Sequence[str]) -> str:
    """A list of joint names for a message, bounded in count and length."""
    shown = ", ".join(clip(n, 40) for n in list(names)[:8])
    return f"[{shown}{', ...' if len(names) > 8 else ''}] ({len(names)})"


def joint_series(topic: str, msgs: list[tuple[int, Any]], path: Path) -> JointSeries:
    names = tuple(msgs[0][1].name)
    n = len(names)
    order_of = {name: k for k, name in enumerate(names)}
    stamps = np.empty(len(msgs), np.int64)
    logs = np.empty(len(msgs), np.int64)
    data = np.full((3, len(msgs), n), np.nan)
    for i, (log_ns, m) in enumerate(msgs):
        stamps[i] = header_stamp_ns(m.header)
        logs[i] = log_ns
        cols = None
        if tuple(m.name) != names:
            # Same joints in another order is legal JointState; other joints are not one series.
            if sorted(m.name) != sorted(names):
                raise BagError(f"{clip(path)}: {topic} message {i} names joints {_names(m.name)}, "
                               f"the first message named {_names(names)}")
            cols = [order_of[name] for name in m.name]
        for k, values in enumerate((m.position, m.velocity, m.effort)):
            if len(values) == 0:
                continue
            if len(values) != n:
                raise BagError(f"{clip(path)}: {topic} message {i} has {len(values)} values in a field for {n} "
                               f"joints")
            if cols is None:
                data[k, i] = values
            else:
                data[k, i, cols] = values
    return JointSeries(topic, names, stamps, logs, data[0], data[1], data[2])


def reorder(series: JointSeries, names: tuple[str, ...]) -> JointSeries:
    if series.names == names or sorted(series.names) != sorted(names):
        return series
    cols = [series.names.index(n) for n in names]
    return JointSeries(series.topic, names, series.stamp_ns, series.log_time_ns, series.position[:, cols],
                       series.velocity[:, cols], series.effort[:, cols])


def align_truth(joint_states: JointSeries, ground_truth: JointSeries) -> JointSeries:
    """Ground truth with its columns in joint_states' joint order, matched by name.

    Other joints, or another count, is not something to compare column by column: a
    BagError says which names disagree.
    """
    if ground_truth.names == joint_states.names:
        return ground_truth
    if sorted(ground_truth.names) != sorted(joint_states.names):
        only_js = [n for n in joint_states.names if n not in ground_truth.names]
        only_gt = [n for n in ground_truth.names if n not in joint_states.names]
        raise BagError(
            f"ground truth ({ground_truth.topic}) names other joints than {joint_states.topic}: "
            f"{len(joint_states.names)} joints vs {len(ground_truth.names)}; only in joint_states "
            f"{_names(only_js)}, only in ground truth {_names(only_gt)}. Joints are matched by name, never by "
            f"column: record both topics from the same sim")
    return reorder(ground_truth, joint_states.names)


def camera_name(topic: str) -> str:
    parts = _parts(topic)
    return parts[-2] if len(parts) >= 2 and parts[-1] in ("image_raw", "camera_info") else parts[-1]


def pose_row(pose: Any) -> list[float]:
    """A geometry_msgs/Pose as a row in contract.POSE_LAYOUT order."""
    p, q = pose.position, pose.orientation
    row = {"x": p.x, "y": p.y, "z": p.z, "qw": q.w, "qx": q.x, "qy": q.y, "qz": q.z}
    return [row[k] for k in POSE_LAYOUT]
