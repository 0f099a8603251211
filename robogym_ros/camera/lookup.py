"""Cameras of a model, by name: the one place a name becomes an id or a clear error."""
from __future__ import annotations

from typing import Sequence

import mujoco

from robogym_ros.params import DEFAULT_CAMERAS


def camera_names(model: mujoco.MjModel) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]


def camera_id(model: mujoco.MjModel, name: str) -> int:
    cam_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
    if cam_id < 0:
        raise ValueError(f"no camera named {name!r} in the model; cameras: {camera_names(model)}")
    return cam_id


def select_cameras(requested: Sequence[str], model: mujoco.MjModel) -> list[str]:
    """The cameras to render. The default set quietly shrinks to what another model has; a
    camera asked for by name that the model lacks is a ValueError naming it."""
    requested = [c for c in requested if c]
    have = camera_names(model)
    if tuple(requested) == DEFAULT_CAMERAS:
        return [c for c in requested if c in have]
    for name in requested:
        camera_id(model, name)
    return requested
