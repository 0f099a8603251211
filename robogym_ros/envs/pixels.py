"""Camera images for the env, through the same renderer and lens as the sim node's cameras.

Rendered from a frame's joint positions and object poses alone: they fix every body of the
scene, so the image is the same whether the frame came from local physics or over ROS
(where the full physics state does not travel).
"""
from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from robogym_ros.camera.lens import Lens
from robogym_ros.camera.renderer import CameraRenderer
from robogym_ros.contract import POSE_SIZE
from robogym_ros.sim.physics import STATE_SPEC, discover_joints, discover_objects
from robogym_ros.sim.tick import Tick


class FrameRenderer:
    """Images of ``cameras`` for one frame; create and use it on one thread (one GL context)."""

    def __init__(self, model_path: str, cameras: Sequence[str], lens: Lens):
        model = mujoco.MjModel.from_xml_path(model_path)
        joints, actuators = discover_joints(model)
        names, object_adr = discover_objects(model)
        if model.nq != len(joints) + len(names) * POSE_SIZE:
            raise ValueError("pixels need a model whose pose is fixed by its servo joints and free objects "
                             f"alone; this one has nq = {model.nq}")
        self._qpos_adr = model.jnt_qposadr[model.actuator_trnid[actuators, 0]].copy()
        self._pose_idx = (object_adr[:, None] + np.arange(POSE_SIZE)).ravel()
        self._model = model
        self._data = mujoco.MjData(model)
        self._state = np.empty(mujoco.mj_stateSize(model, STATE_SPEC))
        self.cameras = tuple(cameras)
        self.lens = lens
        self._renderer = CameraRenderer(model, self.cameras, lens)

    def render(self, tick: Tick) -> dict[str, np.ndarray]:
        """A new (h, w, 3) uint8 image per camera."""
        d = self._data
        d.qpos[self._qpos_adr] = tick.position
        d.qpos[self._pose_idx] = np.ravel(tick.object_poses)
        mujoco.mj_getState(self._model, d, self._state, STATE_SPEC)
        return self._renderer.render(self._state)

    def close(self) -> None:
        self._renderer.close()
