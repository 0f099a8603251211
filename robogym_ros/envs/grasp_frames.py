"""The grippers' grasp frames from the joint positions: the forward kinematics a real arm computes
from its own encoders, offered to a state policy beside the objects' poses.

A state policy that sees joint angles and the block's pose must learn the arms' kinematics to
tell how far its jaws are from the block, to the millimetre a handover leaves. Each arm's grasp
site (``left_grasp``, ``right_grasp``: the point between the jaw tips) in the world frame makes
that a difference of two inputs: its position (m), then the first two columns of its rotation
matrix (the continuous 6-number rotation of Zhou et al. 2019; a quaternion flips sign). Computed
from the observed joint positions alone (``mj_kinematics`` on a private ``MjData``): the same
numbers for a dataset's frame and for the env's observation of the same state, whatever the
physics' own data holds.
"""
from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from robogym_ros.task.scene import default_model_path

GRASP_SITES = ("left_grasp", "right_grasp")
# per site: position, then the rotation matrix's first column, then its second
GRASP_FRAME_LAYOUT = ("x", "y", "z", "xx", "xy", "xz", "yx", "yy", "yz")
GRASP_FRAME_SIZE = len(GRASP_FRAME_LAYOUT) * len(GRASP_SITES)


def grasp_frame_names() -> list[str]:
    """``left_grasp.x`` ... ``right_grasp.yz``: the names of :class:`GraspFrames`' numbers, in order."""
    return [f"{site}.{c}" for site in GRASP_SITES for c in GRASP_FRAME_LAYOUT]


class GraspFrames:
    """``frames(joint_positions)`` -> the grasp sites' frames (GRASP_FRAME_SIZE floats, float64)."""

    def __init__(self, joint_names: Sequence[str], model_path: str | None = None):
        self._model = mujoco.MjModel.from_xml_path(model_path or default_model_path())
        self._data = mujoco.MjData(self._model)
        try:
            self._qpos = np.array([self._model.jnt_qposadr[self._model.joint(n).id] for n in joint_names])
            self._sites = [self._model.site(s).id for s in GRASP_SITES]
        except KeyError as err:
            raise ValueError(f"grasp frames need the joints {list(joint_names)} and the sites {GRASP_SITES} "
                             f"in the scene's MJCF: {err}") from None
        self._n = len(self._qpos)

    def __call__(self, joint_positions) -> np.ndarray:
        q = np.asarray(joint_positions, np.float64).reshape(-1)
        if q.shape != (self._n,):
            raise ValueError(f"grasp frames take {self._n} joint positions, got shape {np.shape(joint_positions)}")
        self._data.qpos[self._qpos] = q
        mujoco.mj_kinematics(self._model, self._data)
        out = np.empty(GRASP_FRAME_SIZE)
        for k, s in enumerate(self._sites):
            rot = self._data.site_xmat[s].reshape(3, 3)
            out[9 * k: 9 * k + 3] = self._data.site_xpos[s]
            out[9 * k + 3: 9 * k + 9] = rot[:, :2].T.reshape(-1)  # column x, then column y
        return out
