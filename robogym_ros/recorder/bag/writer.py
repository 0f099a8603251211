"""Writing rosbag2 bags with ``rosbags`` (pure Python: no ROS install needed).

Writes CDR with the message definitions and RIHS01 hashes of the ROS 2 Kilted typestore
(the same hashes as Jazzy and as the installed Kilted wheels for these types), so that
``ros2 bag info`` / ``ros2 bag play`` read our bags.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore

from robogym_ros.checks import BYTES_PER_PIXEL
from robogym_ros.contract import POSE_SIZE, Spec, split_stamp
from robogym_ros.recorder.bag.format import (
    CAMERA_INFO,
    IMAGE,
    JOINT_STATE,
    POSE_ARRAY,
    STORAGES,
    STRING,
    TYPESTORE,
    BagError,
    recorded_qos,
)


class BagWriter:
    """rosbag2 writer for the sim's message types; ``close()`` finalises and is idempotent.

    ``log_time_ns`` (when the message was "received") defaults to the header stamp: a bag
    written from sim ticks then plays back at sim pace.
    """

    def __init__(self, path: str | Path, storage: str = "mcap"):
        if storage not in STORAGES:
            raise BagError(f"unknown storage {storage!r}: use one of {sorted(STORAGES)}")
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"{self.path} exists already; a bag is never overwritten")
        self.storage = storage
        self.typestore = get_typestore(TYPESTORE)
        self._types = self.typestore.types
        self._writer: Writer | None = Writer(self.path, version=Writer.VERSION_LATEST,
                                             storage_plugin=STORAGES[storage])
        try:
            self._writer.open()
        except Exception as err:
            self._writer = None
            raise BagError(f"cannot create bag {self.path}: {err}", err) from None
        self._connections: dict[str, Any] = {}

    @property
    def closed(self) -> bool:
        return self._writer is None

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        # Finalise even on error: what was recorded up to the error is worth keeping.
        self.close()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception as err:
                raise BagError(f"cannot finalise bag {self.path}: {err}", err) from None

    def write(self, topic: str, msg: Any, log_time_ns: int, *, latched: bool = False) -> None:
        """Write any typestore message; the first write on a topic fixes its type and QoS."""
        self.write_raw(topic, msg.__msgtype__, self.typestore.serialize_cdr(msg, msg.__msgtype__),
                       log_time_ns, latched=latched)

    def declare(self, topic: str, msgtype: str, *, latched: bool = False) -> Any:
        """The topic's connection, added now if new: a topic recorded with no message still shows
        in the bag (e.g. the sim's skipped-frame reports: none is news too)."""
        if self._writer is None:
            raise BagError(f"bag {self.path} is closed")
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=self.typestore,
                                               offered_qos_profiles=[recorded_qos(latched)])
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise BagError(f"topic {topic} carries {conn.msgtype}, cannot write {msgtype} to it")
        return conn

    def write_raw(self, topic: str, msgtype: str, cdr: bytes, log_time_ns: int, *,
                  latched: bool = False) -> None:
        """Write serialized CDR as received (rclpy ``raw=True``): the bag holds the exact bytes."""
        conn = self.declare(topic, msgtype, latched=latched)
        self._writer.write(conn, int(log_time_ns), cdr)

    def _header(self, stamp_ns: int, frame_id: str) -> Any:
        sec, nanosec = split_stamp(stamp_ns)
        return self._types["std_msgs/msg/Header"](self._types["builtin_interfaces/msg/Time"](sec, nanosec), frame_id)

    def write_joint_state(self, topic: str, stamp_ns: int, names: Sequence[str], position: Sequence[float],
                          velocity: Sequence[float] = (), effort: Sequence[float] = (), *, frame_id: str = "",
                          log_time_ns: int | None = None) -> None:
        msg = self._types[JOINT_STATE](self._header(stamp_ns, frame_id), list(names),
                                       np.array(position, np.float64), np.array(velocity, np.float64),
                                       np.array(effort, np.float64))
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_pose_array(self, topic: str, stamp_ns: int, poses: Any, *, frame_id: str = "world",
                         log_time_ns: int | None = None) -> None:
        """``poses`` rows in contract.POSE_LAYOUT order (x y z qw qx qy qz)."""
        t = self._types
        rows = np.asarray(poses, np.float64).reshape(-1, POSE_SIZE)
        msg = t[POSE_ARRAY](self._header(stamp_ns, frame_id), [
            t["geometry_msgs/msg/Pose"](t["geometry_msgs/msg/Point"](x, y, z),
                                        t["geometry_msgs/msg/Quaternion"](qx, qy, qz, qw))
            for x, y, z, qw, qx, qy, qz in rows.tolist()])
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_image(self, topic: str, stamp_ns: int, width: int, height: int, data: Any, *,
                    encoding: str = "rgb8", step: int | None = None, frame_id: str = "",
                    log_time_ns: int | None = None) -> None:
        """Writes what it is given, inconsistent sizes included: a recorder does not fix data."""
        pixels = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else \
            np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        step = width * BYTES_PER_PIXEL.get(encoding, 3) if step is None else step
        msg = self._types[IMAGE](self._header(stamp_ns, frame_id), int(height), int(width), encoding, 0,
                                 int(step), pixels)
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_camera_info(self, topic: str, stamp_ns: int, width: int, height: int, k: Sequence[float], *,
                          d: Sequence[float] = (), distortion_model: str = "equidistant",
                          r: Sequence[float] | None = None, p: Sequence[float] | None = None,
                          frame_id: str = "", log_time_ns: int | None = None) -> None:
        t = self._types
        k_arr = np.asarray(k, np.float64).reshape(9)
        r_arr = np.eye(3).reshape(9) if r is None else np.asarray(r, np.float64).reshape(9)
        p_arr = (np.hstack([k_arr.reshape(3, 3), np.zeros((3, 1))]).reshape(12) if p is None
                 else np.asarray(p, np.float64).reshape(12))
        roi = t["sensor_msgs/msg/RegionOfInterest"](0, 0, 0, 0, False)
        msg = t[CAMERA_INFO](self._header(stamp_ns, frame_id), int(height), int(width), distortion_model,
                             np.asarray(d, np.float64), k_arr, r_arr, p_arr, 0, 0, roi)
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_string(self, topic: str, text: str, *, log_time_ns: int = 0, latched: bool = False) -> None:
        self.write(topic, self._types[STRING](text), log_time_ns, latched=latched)

    def write_spec(self, topic: str, spec: Spec, *, log_time_ns: int = 0) -> None:
        """The sim's spec as latched JSON, as the sim publishes it."""
        self.write_string(topic, spec.to_json(), log_time_ns=log_time_ns, latched=True)
