"""The env's flat ``observation`` vector: where each quantity sits, and how one is built."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE


@dataclass(frozen=True)
class ObservationLayout:
    """Where each quantity sits in the flat ``observation`` vector (float64)."""
    n_joints: int
    n_objects: int
    gripper_index: tuple[int, ...]  # indices of the gripper joints among the joints

    @property
    def positions(self) -> slice:
        return slice(0, self.n_joints)

    @property
    def velocities(self) -> slice:
        return slice(self.n_joints, 2 * self.n_joints)

    @property
    def object_poses(self) -> slice:
        start = 2 * self.n_joints
        return slice(start, start + self.n_objects * POSE_SIZE)

    @property
    def gripper_efforts(self) -> slice:
        start = self.object_poses.stop
        return slice(start, start + len(self.gripper_index))

    @property
    def size(self) -> int:
        return self.gripper_efforts.stop

    def describe(self, joint_names, object_names) -> list[str]:
        """One name per element, e.g. ``q/left_gripper``, ``pose/block/qw``, ``effort/right_gripper``."""
        names = [f"q/{j}" for j in joint_names] + [f"qd/{j}" for j in joint_names]
        names += [f"pose/{o}/{c}" for o in object_names for c in POSE_LAYOUT]
        names += [f"effort/{joint_names[i]}" for i in self.gripper_index]
        return names


def build_observation(layout: ObservationLayout, position: np.ndarray, velocity: np.ndarray,
                      object_poses: np.ndarray, effort: np.ndarray) -> np.ndarray:
    """A new float64 vector (never a view of its inputs)."""
    grippers = [effort[i] for i in layout.gripper_index]  # two numbers: cheaper than numpy's take
    poses = object_poses.ravel() if isinstance(object_poses, np.ndarray) else np.ravel(object_poses)
    return np.concatenate((position, velocity, poses, grippers), dtype=np.float64)
