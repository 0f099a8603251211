"""A lockstep step request (contract.STEP_REQUEST_TOPIC), serialized here as CDR bytes.

A trajectory_msgs/JointTrajectory: header.stamp = the tick stepped from, joint_names, and one
point with the targets in ``positions`` and the step's length in ``time_from_start``. The
joint names never change for an env, so everything up to the positions is encoded once;
rclpy's conversion of the message object cost a third of the env's time per step
(bench/bench_env.py). test/envs/test_env_ros_robust.py checks the bytes against rclpy's own
deserialisation.
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

from robogym_ros.contract import NS_PER_S
from robogym_ros.wire.cdr import ENCAPSULATION, CdrWriter

_TIME = struct.Struct("<iI")
_AFTER_STAMP = 4 + 8  # the encapsulation header, then header.stamp
_TAIL = struct.Struct("<IIIiI")  # velocities, accelerations, effort (0 each), time_from_start


class StepRequestEncoder:
    """``encode(start_ns, positions, duration_ns)`` for fixed joint names (in that order)."""

    def __init__(self, joint_names: Sequence[str]):
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        # frame_id "", the names, one point, the positions' count; then the doubles, 8-aligned.
        w = CdrWriter(_AFTER_STAMP).string("").strings(self.joint_names).u32(1).u32(n)
        if n:
            w.pad_to(8)
        self._prefix = w.bytes()
        self._n = n

    def encode(self, start_ns: int, positions: np.ndarray, duration_ns: int) -> bytes:
        values = np.asarray(positions, dtype="<f8")
        if values.shape != (self._n,):
            raise ValueError(f"{values.shape} positions for {self._n} joint names")
        sec, nanosec = divmod(int(duration_ns), NS_PER_S)
        return b"".join((ENCAPSULATION, _TIME.pack(*divmod(int(start_ns), NS_PER_S)), self._prefix,
                         values.tobytes(), _TAIL.pack(0, 0, 0, sec, nanosec)))
