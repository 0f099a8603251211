"""What a state policy's ``environment_state`` holds, by layout: the one definition the dataset
export writes (``observation.environment_state``) and the LeRobot view gives (``environment_state``).

========================  ==============================================================  ======
layout                    numbers, in order                                               size
========================  ==============================================================  ======
``objects``               the block's pose, then the tray's: x y z qw qx qy qz each         14
                          (contract.POSE_LAYOUT; m, unit quaternion, world frame)
``objects_grasp``         ``objects``, then both grippers' grasp frames computed from the   32
                          joint positions (envs.grasp_frames)
``objects_symmetric``     the block's position and its orientation as numbers its            16
                          symmetries leave be (envs.block_symmetry), then the tray's
                          likewise (a square box: its z axis in the block's long axis'
                          place)
========================  ==============================================================  ======
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE
from robogym_ros.envs.block_symmetry import SYMMETRIC_POSE, symmetric_pose
from robogym_ros.envs.grasp_frames import GraspFrames, grasp_frame_names

LAYOUTS = ("objects", "objects_grasp", "objects_symmetric")
OBJECTS = ("block", "tray")  # the objects' poses every layout starts from, in this order


def check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"environment_state must be one of {list(LAYOUTS)}, got {layout!r}")


def environment_state_names(layout: str = "objects") -> list[str]:
    """The layout's numbers by name: ``block.x`` ... ``tray.qz`` (then ``left_grasp.x`` ...
    ``right_grasp.yz``; or ``block.x`` ... ``block.side_s4``, ``tray.x`` ... ``tray.side_s4``)."""
    check_layout(layout)
    pose = SYMMETRIC_POSE if layout == "objects_symmetric" else POSE_LAYOUT
    names = [f"{obj}.{c}" for obj in OBJECTS for c in pose]
    return names + grasp_frame_names() if layout == "objects_grasp" else names


def environment_state_size(layout: str = "objects") -> int:
    return len(environment_state_names(layout))


class EnvironmentState:
    """``state(objects, joint_positions)`` -> the layout's numbers (float64, a new array);
    ``objects``: the block's pose then the tray's (2 x POSE_SIZE numbers)."""

    def __init__(self, layout: str, joint_names: Sequence[str], model_path: str | None = None):
        check_layout(layout)
        self.layout = layout
        self.size = environment_state_size(layout)
        self._grasp = GraspFrames(joint_names, model_path) if layout == "objects_grasp" else None

    def __call__(self, objects, joint_positions) -> np.ndarray:
        poses = np.asarray(objects, np.float64).reshape(-1)
        if poses.shape != (len(OBJECTS) * POSE_SIZE,):
            raise ValueError(f"environment_state is made from {len(OBJECTS)} poses of {POSE_SIZE} numbers "
                             f"({' then '.join(OBJECTS)}), got shape {np.shape(objects)}")
        if self.layout == "objects_symmetric":
            return np.concatenate([symmetric_pose(poses[k:k + POSE_SIZE]) for k in range(0, poses.size, POSE_SIZE)])
        if self._grasp is not None:
            return np.concatenate([poses, self._grasp(joint_positions)])
        return poses.copy()
