"""One control tick of the simulation: the record that crosses from the physics process.

This is the narrow interface between the real-time loop and everything else. A tick is
packed into one flat float64 buffer so that crossing the process boundary costs one
``send_bytes`` and no pickling of nested objects.

Sim time is an integer count of nanoseconds, ``index * control_dt_ns``: it never drifts,
never goes backwards (a reset starts a new episode, not a new clock), and a stamp names
its tick exactly (``index = stamp_ns // control_dt_ns``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from robogym_ros.contract import POSE_SIZE

# index, stamp_ns, episode, blew_up, n_joints, n_objects, n_state
_HEADER = 7


class Tick(NamedTuple):
    """One control tick as the physics process saw it; packed flat to cross the process boundary.
    Immutable: a NamedTuple, made for every env step and ~4x cheaper to make than a frozen dataclass."""

    index: int
    stamp_ns: int
    episode: int
    position: np.ndarray  # rad (or m for slide joints), one per joint
    velocity: np.ndarray  # rad/s
    effort: np.ndarray  # N*m, actuator force on the joint
    object_poses: np.ndarray  # (n_objects, 7): world pose of each free object
    state: np.ndarray  # mjSTATE_INTEGRATION vector, for rendering this exact instant
    blew_up: bool = False  # the scene blew up in this tick: it was reset, and the loop paused

    def to_bytes(self) -> bytes:
        n, k, s = len(self.position), len(self.object_poses), len(self.state)
        # float64 holds integers exactly up to 2**53 ns (104 days of sim time).
        header = np.array([self.index, self.stamp_ns, self.episode, self.blew_up, n, k, s], dtype=np.float64)
        return np.concatenate(
            [header, self.position, self.velocity, self.effort, self.object_poses.ravel(), self.state]
        ).tobytes()

    @staticmethod
    def from_bytes(data: bytes) -> "Tick":
        # np.frombuffer over immutable bytes is read-only; copy so each field owns its memory.
        flat = np.frombuffer(data, dtype=np.float64).copy()
        index, stamp_ns, episode, blew_up, n, k, s = map(int, flat[:_HEADER].tolist())
        off = _HEADER
        parts = []
        for size in (n, n, n, k * POSE_SIZE, s):
            parts.append(flat[off:off + size])
            off += size
        if off != len(flat):
            raise ValueError(f"tick record has {len(flat)} numbers, header says {off}")
        position, velocity, effort, poses, state = parts
        return Tick(index, stamp_ns, episode, position, velocity, effort,
                    poses.reshape(k, POSE_SIZE), state, bool(blew_up))
