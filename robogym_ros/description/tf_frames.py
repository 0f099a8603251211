"""The transforms only the sim knows, as plain data: what it publishes on /tf and /tf_static.

- ``world`` -> each free body (block, tray): from a tick's object poses, stamped with the tick;
- ``<camera>_optical_frame`` on the camera's body link (``world`` for a camera on no body):
  fixed, from the model; REP 103's optical convention, z forward, x right, y down.

The arm links are robot_state_publisher's, from joint_states and the URDF
(:mod:`robogym_ros.description.urdf`), whose link frames are MuJoCo's body frames: the camera
transforms here hang off those links.

MuJoCo's camera looks along its -z with y up; the optical frame is that frame turned half
a turn about x. :data:`MJ_CAMERA_FROM_OPTICAL` is that convention, stated once for the sim
and the renderer. mujoco + numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from robogym_ros.contract import POSE_LAYOUT, WORLD_FRAME, optical_frame

# Columns: the optical x, y, z axes in MuJoCo's camera frame (x right, y up, looking along -z).
MJ_CAMERA_FROM_OPTICAL = np.diag([1.0, -1.0, -1.0])
# The same rotation as a quaternion (w, x, y, z): half a turn about x.
_OPTICAL_IN_MJ_CAMERA_WXYZ = np.array([0.0, 1.0, 0.0, 0.0])
_POSE = {name: i for i, name in enumerate(POSE_LAYOUT)}


@dataclass(frozen=True)
class Transform:
    """``child``'s pose in ``parent``: p_parent = R(rotation) @ p_child + translation."""
    parent: str
    child: str
    translation: tuple[float, float, float]  # m
    rotation_xyzw: tuple[float, float, float, float]  # unit quaternion, ROS's order

    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous transform parent <- child."""
        x, y, z, w = self.rotation_xyzw
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, np.array([w, x, y, z], dtype=np.float64))
        T = np.eye(4)
        T[:3, :3] = rot.reshape(3, 3)
        T[:3, 3] = self.translation
        return T


def _xyzw(quat_wxyz) -> tuple[float, float, float, float]:
    w, x, y, z = (float(v) for v in quat_wxyz)
    return x, y, z, w


def _camera_parent(model: mujoco.MjModel, cam: int) -> str:
    body = int(model.cam_bodyid[cam])
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or f"body{body}"


def camera_names(model: mujoco.MjModel) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, c) or f"camera{c}" for c in range(model.ncam)]


def camera_optical_frames(model: mujoco.MjModel, cameras: Sequence[str] | None = None) -> list[Transform]:
    """Each fixed camera's optical frame on its body's link (all fixed cameras if None).

    A camera that tracks a body moves with the state, not with a link: it gets no fixed
    transform, and is left out. A name the model lacks is a ValueError naming it.
    """
    names = camera_names(model)
    wanted = names if cameras is None else list(cameras)
    frames = []
    for name in wanted:
        if name not in names:
            raise ValueError(f"no camera named {name!r} in the model; cameras: {names}")
        cam = names.index(name)
        if int(model.cam_mode[cam]) != int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED):
            continue
        quat = np.empty(4)
        mujoco.mju_mulQuat(quat, np.asarray(model.cam_quat[cam], dtype=np.float64), _OPTICAL_IN_MJ_CAMERA_WXYZ)
        frames.append(Transform(_camera_parent(model, cam), optical_frame(name),
                                tuple(float(v) for v in model.cam_pos[cam]), _xyzw(quat)))
    return frames


def object_transforms(object_poses: np.ndarray, object_names: Sequence[str]) -> list[Transform]:
    """``world`` -> each free body, from one tick's ``object_poses`` (rows in POSE_LAYOUT)."""
    poses = np.asarray(object_poses, dtype=np.float64).reshape(-1, len(POSE_LAYOUT))
    if len(poses) != len(object_names):
        raise ValueError(f"{len(poses)} object poses for {len(object_names)} names")
    out = []
    for name, row in zip(object_names, poses.tolist()):
        translation = (row[_POSE["x"]], row[_POSE["y"]], row[_POSE["z"]])
        rotation = (row[_POSE["qx"]], row[_POSE["qy"]], row[_POSE["qz"]], row[_POSE["qw"]])
        out.append(Transform(WORLD_FRAME, name, translation, rotation))
    return out


def camera_pose_optical(model: mujoco.MjModel, data: mujoco.MjData, cam: int) -> tuple[np.ndarray, np.ndarray]:
    """(R_world_from_optical 3x3, t_world_m 3) of camera ``cam``; needs kinematics done on data.

    A world point p has optical coordinates R.T @ (p - t).
    """
    R_world_from_mj = data.cam_xmat[cam].reshape(3, 3)
    return R_world_from_mj @ MJ_CAMERA_FROM_OPTICAL, data.cam_xpos[cam].copy()


class SceneFrames:
    """What one model's sim publishes: the fixed transforms once, the objects' every tick."""

    def __init__(self, model: mujoco.MjModel, object_names: Sequence[str], cameras: Sequence[str] | None = None):
        self.static = camera_optical_frames(model, cameras)
        self.object_names = tuple(object_names)

    def at(self, object_poses: np.ndarray) -> list[Transform]:
        """The tick's transforms (stamp them with the tick's stamp)."""
        return object_transforms(object_poses, self.object_names)
