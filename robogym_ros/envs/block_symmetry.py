"""An object's orientation as numbers that read the same for every pose of it that looks the same.

The block is a cuboid with a square cross-section (models/so101_dual.xml: half-sizes 12.5, 12.5,
25 mm): turned a quarter about its long axis, or a half about a short one, it is the same block
and the expert grasps it the same way. Its quaternion is not: the wrist roll the expert picks is a
sawtooth of the block's yaw with four teeth a turn, which a state policy reading the quaternion
(itself two-valued, q and -q) must learn from a few demonstrations per tooth. Measured on the 200
demonstrations of the README's recipe (seeds 0..199, 150 to fit, 50 held out, a small MLP, the
action 14 steps in): the held-out wrist-roll error 0.04-0.11 rad from the quaternion, 0.01-0.02 rad
from these numbers.

Five numbers from the block's axes (the rotation's columns: two short ones ``s``, the long one
``l``), each invariant under the cuboid's symmetries and continuous in the pose:

- ``up2``: l_z², 1 for a block standing on an end, 0 for one lying on a side;
- ``long_c2``, ``long_s2``: l_x² - l_y², 2 l_x l_y, the long axis' horizontal direction at twice its
  angle (a half turn leaves it be);
- ``side_c4``, ``side_s4``: half the sum over both short axes of cos 4φ and sin 4φ of the axis'
  horizontal direction scaled by its horizontal length to the fourth (s_x⁴ - 6 s_x² s_y² + s_y⁴
  and 4 (s_x³ s_y - s_x s_y³)): a quarter turn about the long axis swaps the short axes (one with
  its sign flipped) and leaves the sum be. Standing, cos 4θ and sin 4θ of the block's yaw θ.

The tray is a square box (10 x 10 cm, 3 cm walls): the same numbers, its z axis in the long axis'
place, read it as the same tray a quarter turn round.
"""
from __future__ import annotations

import mujoco
import numpy as np

SYMMETRIC_ORIENTATION = ("up2", "long_c2", "long_s2", "side_c4", "side_s4")
SYMMETRIC_POSE = ("x", "y", "z") + SYMMETRIC_ORIENTATION
SYMMETRIC_POSE_SIZE = len(SYMMETRIC_POSE)


def symmetric_pose(pose) -> np.ndarray:
    """``pose``: x y z qw qx qy qz (contract.POSE_LAYOUT) -> x y z and SYMMETRIC_ORIENTATION (float64)."""
    p = np.asarray(pose, np.float64).reshape(-1)
    if p.shape != (7,) or not np.all(np.isfinite(p)):
        raise ValueError(f"a pose is 7 finite numbers (x y z qw qx qy qz), got {np.shape(pose)}: {p}")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, p[3:] / np.linalg.norm(p[3:]))
    rot = rot.reshape(3, 3)
    lx, ly, lz = rot[:, 2]
    c4 = s4 = 0.0
    for sx, sy in (rot[:2, 0], rot[:2, 1]):
        c4 += sx ** 4 - 6 * sx * sx * sy * sy + sy ** 4
        s4 += 4 * (sx ** 3 * sy - sx * sy ** 3)
    return np.array([p[0], p[1], p[2], lz * lz, lx * lx - ly * ly, 2 * lx * ly, c4 / 2, s4 / 2])
