"""Encoding what the sim publishes, as bytes: rclpy's serialization (zero padding) as a new
``bytes`` object per call. ``Publisher.publish(bytes)`` sends it as is, without a Python message
object, and DDS copies it, so nothing a subscriber receives shares memory with anything here.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from robogym_ros.wire.cdr import AFTER_STAMP, ENCAPSULATION, F64, U32, CdrWriter, align, time_bytes


def encode_time(stamp_ns: int) -> bytes:
    """A message that is one builtin_interfaces/Time (rosgraph_msgs/Clock)."""
    return ENCAPSULATION + time_bytes(stamp_ns)



class JointStateEncoder:
    """Serialized sensor_msgs/JointState of fixed names and frame_id: everything but the stamp
    and the numbers is encoded once, here. ``encode(stamp_ns, position, velocity, effort)``
    takes float64 arrays of n_joints values each (velocity and effort may be empty)."""

    def __init__(self, names: Sequence[str], frame_id: str = ""):
        self.names = tuple(names)
        self.n_joints = len(self.names)
        w = CdrWriter(AFTER_STAMP).string(frame_id).strings(self.names).pad_to(4)
        self._prefix, self._fields_at = w.bytes(), w.offset  # up to the position count

    def encode(self, stamp_ns: int, position: np.ndarray, velocity: np.ndarray,
               effort: np.ndarray) -> bytes:
        parts = [ENCAPSULATION, time_bytes(stamp_ns), self._prefix]
        offset = self._fields_at
        for values in (position, velocity, effort):
            count = len(values)
            if count not in (self.n_joints, 0):
                raise ValueError(f"{count} values for {self.n_joints} joint names")
            parts.append(U32.pack(count))
            offset += 4
            if count:
                parts.append(b"\x00" * (align(offset, 8) - offset))
                offset = align(offset, 8) + 8 * count
                parts.append(np.asarray(values, dtype=F64).tobytes())
        return b"".join(parts)


class PoseArrayEncoder:
    """Serialized geometry_msgs/PoseArray of a fixed frame_id; ``encode(stamp_ns, poses)``
    takes poses (k, 7) in ``contract.POSE_LAYOUT`` order (x y z qw qx qy qz)."""

    _LAYOUT_TO_POSE = np.array([0, 1, 2, 4, 5, 6, 3])  # -> x y z qx qy qz qw

    def __init__(self, frame_id: str):
        w = CdrWriter(AFTER_STAMP).string(frame_id).pad_to(4)
        self._prefix = w.bytes()
        self._pad = b"\x00" * (align(w.offset + 4, 8) - w.offset - 4)  # a Pose begins with a double

    def encode(self, stamp_ns: int, poses: np.ndarray) -> bytes:
        poses = np.asarray(poses, dtype=F64)
        if poses.ndim != 2 or poses.shape[1] != 7:
            raise ValueError(f"poses must be (k, 7), got {poses.shape}")
        k = len(poses)
        return b"".join((ENCAPSULATION, time_bytes(stamp_ns), self._prefix, U32.pack(k),
                         self._pad if k else b"", poses[:, self._LAYOUT_TO_POSE].tobytes()))


class ImageEncoder:
    """Serialized sensor_msgs/Image of a fixed frame_id, size and encoding: ``encode(stamp_ns,
    pixels)`` copies the pixels (any C-contiguous buffer of height x step bytes) once, into
    the new message bytes."""

    def __init__(self, frame_id: str, height: int, width: int, encoding: str, step: int,
                 is_bigendian: int = 0):
        self.nbytes = height * step
        w = (CdrWriter(AFTER_STAMP).string(frame_id).u32(height).u32(width).string(encoding)
             .u8(is_bigendian).u32(step).u32(self.nbytes))
        self._prefix = w.bytes()

    def encode(self, stamp_ns: int, pixels) -> bytes:
        data = memoryview(pixels)
        if data.nbytes != self.nbytes or not data.c_contiguous:
            raise ValueError(f"pixels must be {self.nbytes} contiguous bytes, got {data.nbytes}")
        return b"".join((ENCAPSULATION, time_bytes(stamp_ns), self._prefix,
                         data.cast("B") if data.nbytes else b""))


class CameraInfoEncoder:
    """Serialized sensor_msgs/CameraInfo: everything but the stamp fixed, encoded once
    (binning 0 and an empty region of interest: the full, unbinned image)."""

    def __init__(self, frame_id: str, height: int, width: int, distortion_model: str, d, k, r, p):
        w = (CdrWriter(AFTER_STAMP).string(frame_id).u32(height).u32(width).string(distortion_model)
             .doubles(d).doubles(k, fixed=True).doubles(r, fixed=True).doubles(p, fixed=True)
             .u32(0).u32(0)  # binning_x, binning_y
             .u32(0).u32(0).u32(0).u32(0).u8(0))  # roi: x_offset, y_offset, height, width, do_rectify
        self._prefix = w.bytes()

    def encode(self, stamp_ns: int) -> bytes:
        return b"".join((ENCAPSULATION, time_bytes(stamp_ns), self._prefix))
