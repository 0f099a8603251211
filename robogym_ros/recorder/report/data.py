"""The arrays a report is drawn from (:class:`ReportData`), filled by the live recorder (its ring
snapshots) or from a bag read by :func:`~robogym_ros.recorder.bag.reader.read_bag`. No rclpy here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from robogym_ros.contract import Spec


@dataclass(frozen=True)
class ReportData:
    """The arrays a report is drawn from: what was stored (slot order, oldest first) and the
    ground truth, both on the sim's tick stamps. Velocities may be None (not carried)."""
    joint_names: tuple[str, ...]
    control_dt_ns: int
    stamps_ns: np.ndarray  # (n,) int64
    positions: np.ndarray  # (n, n_joints) as stored
    true_stamps_ns: np.ndarray  # (m,) int64
    true_positions: np.ndarray  # (m, n_joints)
    velocities: np.ndarray | None = None  # (n, n_joints) as stored (reported)
    true_velocities: np.ndarray | None = None  # (m, n_joints)
    decimation: int | None = None
    # every stamp received, in arrival order, when the stored slots are only the newest
    grid_stamps_ns: np.ndarray | None = None
    # camera -> [(stamp_ns, rgb (h, w, 3) uint8)], oldest first: the frames whose pixels were kept
    frames: Mapping[str, Sequence[tuple[int, np.ndarray]]] = field(default_factory=dict)

    @classmethod
    def from_snapshots(cls, spec: Spec, joints, truth, *, grid_stamps_ns=None, frames=None) -> "ReportData":
        """From the recorder's ring snapshots (robogym_ros.recorder.ring.RingSnapshot)."""
        return cls(tuple(spec.joint_names), spec.control_dt_ns, joints.stamp_ns, joints.position,
                   truth.stamp_ns, truth.position, joints.velocity, truth.velocity, spec.decimation,
                   None if grid_stamps_ns is None else np.asarray(grid_stamps_ns, np.int64), frames or {})

    @classmethod
    def from_bag(cls, data, spec: Spec, *, frames=None) -> "ReportData":
        """From a bag read by robogym_ros.recorder.bag.reader.read_bag (with its ground truth)."""
        js, gt = data.joint_states, data.ground_truth
        if gt is None:
            raise ValueError(f"{data.path}: no ground truth in the bag: nothing to draw the truth from")
        return cls(tuple(js.names), spec.control_dt_ns, js.stamp_ns, js.position, gt.stamp_ns, gt.position,
                   js.velocity, gt.velocity, spec.decimation, None, frames or {})

    def matched_truth(self) -> tuple[np.ndarray, np.ndarray]:
        """Truth rows for each stored slot (NaN where there is none) and the found mask."""
        order = np.argsort(self.true_stamps_ns, kind="stable")
        sorted_stamps = self.true_stamps_ns[order]
        pos = np.searchsorted(sorted_stamps, self.stamps_ns)
        pos = np.clip(pos, 0, max(len(sorted_stamps) - 1, 0))
        found = (len(sorted_stamps) > 0) & (sorted_stamps[pos] == self.stamps_ns) if len(sorted_stamps) \
            else np.zeros(len(self.stamps_ns), bool)
        rows = np.full(self.positions.shape, np.nan)
        rows[found] = self.true_positions[order[pos[found]]]
        return rows, found
