"""Forward and inverse kinematics of one SO-101 arm of the scene, on its own MjData.

IK is damped least squares on MuJoCo's site Jacobian (``mj_jacSite``) of the arm's grasp site:
the site's position, plus any number of "this gripper axis points along that world direction"
constraints. A 5-DoF arm cannot take every 6-D pose, so a plan names only the axes it needs
(a top-down grasp: x down and y across the block; a handover: y or z vertical).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from robogym_ros.task import scene

ARM_JOINTS = scene.ARM_JOINTS[:5]  # the gripper joint is not part of the kinematic chain
_DAMPING = 1e-5
_ORIENTATION_WEIGHT_M = 0.1  # one radian of axis error counts as 0.1 m of position error


@dataclass(frozen=True)
class IkResult:
    """An IK answer and how far it is from the target (position, summed axis errors)."""
    q: np.ndarray  # the 5 arm joints (rad)
    position_error_m: float
    axis_error_rad: float
    rotation: np.ndarray  # the grasp site's frame at q (3x3, columns = gripper x y z in world)
    position: np.ndarray

    def ok(self, position_tol_m: float = 2e-3, axis_tol_rad: float = 0.03) -> bool:
        return self.position_error_m <= position_tol_m and self.axis_error_rad <= axis_tol_rad


class ArmKinematics:
    """Kinematics of the ``side`` arm ("left" or "right") of a model with the dual-arm scene."""

    def __init__(self, model: mujoco.MjModel, side: str):
        if side not in scene.SIDES:
            raise ValueError(f"side must be one of {scene.SIDES}, got {side!r}")
        self.model, self.side = model, side
        self.data = mujoco.MjData(model)
        names = [f"{side}_{j}" for j in ARM_JOINTS]
        ids = [model.joint(n).id for n in names]
        self.qpos_adr = model.jnt_qposadr[ids].copy()
        self.dof_adr = model.jnt_dofadr[ids].copy()
        self.lower, self.upper = model.jnt_range[ids].T.copy()
        self.site = model.site(f"{side}_grasp").id
        self.pan_xy = model.body(f"{side}_base").pos[:2] + model.body(f"{side}_shoulder").pos[:2]
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Grasp-site position (m) and rotation (3x3) at arm joints ``q``."""
        self.data.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def _errors(self, target_m, axes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = self.data.site_xpos[self.site]
        rot = self.data.site_xmat[self.site].reshape(3, 3)
        e_rot = np.zeros(3)
        for i, direction in axes:  # rotating column i toward direction: about their cross product
            e_rot += np.cross(rot[:, i], direction)
        return target_m - pos, e_rot, rot

    def solve(self, target_m, axes: Sequence[tuple[int, np.ndarray]] = (), q0=None,
              iterations: int = 150) -> IkResult:
        """Joints that put the grasp site at ``target_m`` with gripper axis i along each direction."""
        target_m = np.asarray(target_m, dtype=np.float64)
        axes = [(int(i), np.asarray(d, dtype=np.float64) / np.linalg.norm(d)) for i, d in axes]
        q = np.clip(np.asarray(q0 if q0 is not None else np.zeros(5), dtype=np.float64), self.lower, self.upper)
        w = _ORIENTATION_WEIGHT_M
        for _ in range(iterations):
            self.data.qpos[self.qpos_adr] = q
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
            e_pos, e_rot, _ = self._errors(target_m, axes)
            if np.dot(e_pos, e_pos) < 1e-12 and np.dot(e_rot, e_rot) < 1e-9:
                break
            mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self.site)
            jac = np.vstack([self._jacp[:, self.dof_adr], w * self._jacr[:, self.dof_adr]])
            err = np.concatenate([e_pos, w * e_rot])
            step = jac.T @ np.linalg.solve(jac @ jac.T + _DAMPING * np.eye(6), err)
            q = np.clip(q + np.clip(step, -0.3, 0.3), self.lower, self.upper)
        self.data.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, self.data)
        e_pos, e_rot, rot = self._errors(target_m, axes)
        return IkResult(q.copy(), float(np.linalg.norm(e_pos)), float(np.linalg.norm(e_rot)),
                        rot.copy(), self.data.site_xpos[self.site].copy())

    def solve_best(self, target_m, axes_options, seeds) -> IkResult:
        """The best of several axis choices (e.g. y or -y across a block) and starting points."""
        best = None
        for axes in axes_options:
            for q0 in seeds:
                r = self.solve(target_m, axes, q0)
                score = r.position_error_m + 0.02 * r.axis_error_rad
                if best is None or score < best[0]:
                    best = (score, r)
                if r.ok(5e-4, 5e-3):
                    return r
        return best[1]

    def pan_towards(self, point_m) -> float:
        """The pan angle that faces ``point_m`` (a good IK seed)."""
        d = np.asarray(point_m[:2]) - self.pan_xy
        return float(np.clip(np.arctan2(d[1], d[0]), self.lower[0], self.upper[0]))
