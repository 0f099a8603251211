"""Reset and randomisation of the two-arm SO-101 scene (models/so101_dual.xml).

Only numpy and mujoco here: the physics process imports this, and it must stay free of ROS and
of rendering.

Layout (world frame, table top at z = 0): the shoulder-pan axes stand at (0, +-ARM_Y_M); the
left arm is on +y; both face +x. The block goes in front of one arm and outboard of it, the tray
likewise at the other arm. The block's centre is 0.14 m from the near arm's pan axis and 0.47 m
from the far arm's: whatever the yaw, the far arm's grasp point stays >= 29 mm short of the
block (test/task/test_scene.py searches its joint space to show it), so it must be handed over.
"""
from __future__ import annotations

from importlib import resources

import mujoco
import numpy as np

ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
SIDES = ("left", "right")
JOINT_NAMES = tuple(f"{side}_{joint}" for side in SIDES for joint in ARM_JOINTS)
OBJECT_BODIES = ("block", "tray")

ARM_Y_M = 0.20  # |y| of each shoulder-pan axis; must match the base bodies in the MJCF
# Object centres for an object on the left arm's side; the right side mirrors y.
BLOCK_XY_M = (0.13, 0.255)
TRAY_XY_M = (0.16, 0.29)

# Upper arm tipped back, elbow folded, gripper pointing down in front of the base with its
# lowest point 13 mm above the table: compact, >= 4 mm clear of base and table, and away from
# where the objects go.
_FOLDED_ARM_RAD = {
    "shoulder_pan": 0.0,
    "shoulder_lift": -1.0,
    "elbow_flex": 1.25,
    "wrist_flex": 1.3,
    "wrist_roll": 0.0,
    "gripper": 0.0,
}


def default_model_path() -> str:
    """The scene's MJCF (models/so101_dual.xml). Package data, not the ament index: a pip venv
    has no AMENT_PREFIX_PATH."""
    return str(resources.files("robogym_ros.task") / "models" / "so101_dual.xml")


def folded_pose() -> dict[str, float]:
    return {f"{side}_{joint}": q for side in SIDES for joint, q in _FOLDED_ARM_RAD.items()}


def is_dual_arm_scene(model) -> bool:
    joints_ok = all(
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0 for name in JOINT_NAMES
    )
    bodies_ok = all(
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name) >= 0 for name in OBJECT_BODIES
    )
    return joints_ok and bodies_ok


def _yaw_quat(yaw_rad: float) -> np.ndarray:
    return np.array([np.cos(yaw_rad / 2), 0.0, 0.0, np.sin(yaw_rad / 2)])


# Lying = long axis horizontal: a quarter turn about the block's x axis (its y turns vertical).
_LIE_QUAT = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])


def _set_free_pose(model, data, joint: str, pos_m, quat) -> None:
    adr = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)]
    data.qpos[adr:adr + 3] = pos_m
    data.qpos[adr + 3:adr + 7] = quat


def reset_scene(model, data, rng: np.random.Generator) -> dict:
    """Fold both arms and place block and tray on opposite sides; returns what was drawn."""
    mujoco.mj_resetData(model, data)
    for name, q_rad in folded_pose().items():
        data.joint(name).qpos = q_rad
        data.actuator(name).ctrl = q_rad  # hold the pose: the servos start at their targets

    # Draw in a fixed order so a seed always gives the same scene.
    draw = {
        "block_side": SIDES[int(rng.integers(2))],
        "block_upright": bool(rng.integers(2)),
        "block_yaw": float(rng.uniform(-np.pi, np.pi)),
        "tray_yaw": float(rng.uniform(-np.pi, np.pi)),
    }
    place_objects(model, data, **draw)
    mujoco.mj_forward(model, data)
    return draw


def place_objects(model, data, block_side: str, block_upright: bool,
                  block_yaw: float, tray_yaw: float) -> None:
    """Set block and tray poses (yaws in rad) resting on the table; no mj_forward."""
    # Resting heights come from the geoms so that resizing an object in the MJCF cannot make it
    # start inside the table or in the air.
    block_half_m = model.geom("block").size
    block_z_m = block_half_m[2] if block_upright else block_half_m[1]
    block_quat = _yaw_quat(block_yaw)
    if not block_upright:
        mujoco.mju_mulQuat(block_quat, block_quat.copy(), _LIE_QUAT)

    sign = 1.0 if block_side == "left" else -1.0
    _set_free_pose(model, data, "block_free",
                   (BLOCK_XY_M[0], sign * BLOCK_XY_M[1], block_z_m), block_quat)
    # The tray body's origin is the centre of its underside, so z = 0 rests it on the table.
    _set_free_pose(model, data, "tray_free",
                   (TRAY_XY_M[0], -sign * TRAY_XY_M[1], 0.0), _yaw_quat(tray_yaw))
