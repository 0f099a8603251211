"""The handover task: observation layout, goal, reward and success (numpy only, pure functions).

The goal is where the block would rest, lying, at the centre of the tray as the reset placed
it: the reset draws the tray's side and yaw, so the goal comes from the same seeded draw as
the scene and from nothing else. Success is the block's centre within ``distance_threshold_m``
of that point.

Every function here takes batches: ``achieved_goal`` and ``desired_goal`` of shape (..., 3),
and returns an array of the leading shape (a 0-d array for one goal), as
``gymnasium_robotics.core.GoalEnv`` asks, so a HER relabeller can call them on a whole batch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE

REWARD_TYPES = ("sparse", "dense")
GOAL_SIZE = 3  # x, y, z of the block's centre, world frame, m

# Block (25 x 25 x 50 mm) lying flat: its centre is one half of its short side above what it
# rests on; the tray's floor is 4 mm thick (models/so101_dual.xml: tray_base).
TRAY_FLOOR_TOP_M = 0.004
BLOCK_HALF_SHORT_M = 0.0125
GOAL_HEIGHT_M = TRAY_FLOOR_TOP_M + BLOCK_HALF_SHORT_M
# 30 mm: a lying block's centre that close to the tray's centre is inside the tray's walls
# (inner half-width 46 mm minus the block's 12.5 mm half-width leaves 33.5 mm), and an
# upright one (centre 12.5 mm higher) still counts within 27 mm horizontally.
DEFAULT_DISTANCE_THRESHOLD_M = 0.03


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
    return np.concatenate((position, velocity, np.reshape(object_poses, -1),
                           np.take(effort, layout.gripper_index)), dtype=np.float64)


def goal_from_tray_pose(tray_pose: np.ndarray) -> np.ndarray:
    """Where a lying block's centre rests at the tray's centre: a new (3,) array."""
    goal = np.array(tray_pose[:3], dtype=np.float64)
    goal[2] = tray_pose[2] + GOAL_HEIGHT_M
    return goal


def goal_distance(achieved_goal, desired_goal) -> np.ndarray:
    """Euclidean distance (m) over the last axis; the arithmetic of ``np.linalg.norm(axis=-1)``."""
    a = np.asarray(achieved_goal, dtype=np.float64)
    d = np.asarray(desired_goal, dtype=np.float64)
    if a.shape[-1:] != (GOAL_SIZE,) or d.shape[-1:] != (GOAL_SIZE,):
        raise ValueError(f"goals must have {GOAL_SIZE} numbers in their last axis, "
                         f"got achieved {a.shape} and desired {d.shape}")
    diff = a - d
    return np.sqrt(np.add.reduce(diff * diff, axis=-1))


def scalar_distance(achieved_goal, desired_goal) -> float:
    """:func:`goal_distance` of one pair, in Python floats: the same value, bit for bit (the
    same products, summed in the same order, and a correctly rounded square root), ~5x faster."""
    x, y, z = achieved_goal[0] - desired_goal[0], achieved_goal[1] - desired_goal[1], achieved_goal[2] - desired_goal[2]
    return math.sqrt(float(x) * float(x) + float(y) * float(y) + float(z) * float(z))


def success_of_distance(distance, distance_threshold_m: float) -> np.ndarray:
    return np.asarray(distance <= distance_threshold_m)


def reward_of_distance(distance, distance_threshold_m: float, reward_type: str) -> np.ndarray:
    """sparse: 0 on success, -1 otherwise; dense: minus the distance in m. float64."""
    if reward_type == "sparse":
        return np.where(np.asarray(distance) > distance_threshold_m, -1.0, 0.0)
    if reward_type == "dense":
        return np.negative(np.asarray(distance, dtype=np.float64))
    raise ValueError(f"reward_type must be one of {REWARD_TYPES}, got {reward_type!r}")


def scalar_reward(distance: float, distance_threshold_m: float, reward_type: str) -> float:
    """:func:`reward_of_distance` for one distance, in Python floats: the same value, bit for bit."""
    if reward_type == "sparse":
        return -1.0 if distance > distance_threshold_m else 0.0
    return -distance


def is_success(achieved_goal, desired_goal, distance_threshold_m: float) -> np.ndarray:
    return success_of_distance(goal_distance(achieved_goal, desired_goal), distance_threshold_m)


def reward(achieved_goal, desired_goal, distance_threshold_m: float, reward_type: str) -> np.ndarray:
    return reward_of_distance(goal_distance(achieved_goal, desired_goal), distance_threshold_m, reward_type)
