"""Where the grippers go: grasp frames on the block, the handover, and the place in the tray.

Geometry of the gripper (models/so101_dual.xml), in its own frame: x along the jaws (from the
palm to the tips), y the closing direction (the fixed jaw's inner face on y = 0, the moving jaw
on -y), z across the jaws' 20 mm width. The grasp site sits 12.5 mm off the fixed jaw on -y, the
fingertips 18 mm past it on x and the palm 50 mm behind it: the block fits between the jaws with
its centre at the site.

A 5-DoF arm points its jaws inside its own vertical plane, so the one grasp that works for any
block yaw is top-down (x straight down, y across the block, chosen by the wrist roll). The
handover must leave the far arm a pair of faces the near arm's jaws do not cover: the far arm
closes along the block's other short axis, so the two pairs of jaws never cross.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

UP = np.array([0.0, 0.0, 1.0])
DOWN = -UP
BLOCK_HALF_M = np.array([0.0125, 0.0125, 0.025])  # models/so101_dual.xml: geom "block"
FINGERTIP_PAST_SITE_M = 0.018
JAW_CLEARANCE_M = 0.003  # fixed jaw this far off the block's face on the way in; closing takes it up
TABLE_CLEARANCE_M = 0.004  # fingertips above the table at a table grasp
PREGRASP_RISE_M = 0.06
# Over the held-out block the far jaws start lower: straight down reaches only so high, and
# the open jaws (45 mm apart at the tips) take the block's end between them on the way down.
HANDOVER_RISE_M = 0.035
UPRIGHT_SITE_ABOVE_CENTRE_M = 0.015
LYING_SHIFT_M = 0.012
FAR_ALONG_SHIFT_M = 0.015
FAR_LEVEL_SHIFT_M = 0.005  # the far site this far toward the block's free end: fingertips 13 mm past the centre
LEVEL_RISE_M = 0.045  # the far jaws start past the block's free end
FAR_SITE_ABOVE_CENTRE_M = 0.010


def rotation_of_quat(wxyz) -> np.ndarray:
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(wxyz, dtype=np.float64))
    return rot.reshape(3, 3)


@dataclass(frozen=True)
class GraspTarget:
    """A grasp site position and the gripper axes it needs: [(axis index, world direction)]."""
    site_m: np.ndarray
    axes: tuple
    approach: np.ndarray  # unit vector: the pregrasp is site - rise_m * approach
    rise_m: float = PREGRASP_RISE_M

    @property
    def pregrasp_m(self) -> np.ndarray:
        return self.site_m - self.rise_m * self.approach


def is_upright(block_rot: np.ndarray) -> bool:
    return abs(block_rot[2, 2]) > 0.7


def table_grasps(block_pos: np.ndarray, block_rot: np.ndarray) -> list[GraspTarget]:
    """Top-down grasps of a block resting on the table, one per usable closing direction.

    The near jaws take one end of the block and leave the other free for the far jaws, which
    must not cross them: upright, the site 15 mm above the centre (the bottom 22 mm stick out
    past the fingertips); lying, across the horizontal short axis, 12 mm toward one end along
    the long axis, the site raised so that the fingertips clear the table.
    """
    out = []
    if is_upright(block_rot):
        height = block_pos[2] + UPRIGHT_SITE_ABOVE_CENTRE_M
        for a in (block_rot[:, 0], block_rot[:, 1]):
            a = _horizontal(a)
            for y in (a, -a):
                site = np.array([block_pos[0], block_pos[1], height]) + JAW_CLEARANCE_M * y
                out.append(GraspTarget(site, ((0, DOWN), (1, y)), DOWN))
        return out
    short = block_rot[:, :2]
    a = _horizontal(short[:, int(np.argmin(np.abs(short[2])))])
    height = max(block_pos[2] - BLOCK_HALF_M[0] + FINGERTIP_PAST_SITE_M + TABLE_CLEARANCE_M, block_pos[2])
    for y in (a, -a):
        z = np.cross(DOWN, y)  # the block's free part is on the gripper's +z side
        site = np.array([block_pos[0], block_pos[1], height]) + JAW_CLEARANCE_M * y - LYING_SHIFT_M * z
        out.append(GraspTarget(site, ((0, DOWN), (1, y)), DOWN))
    return out


def _horizontal(v: np.ndarray) -> np.ndarray:
    v = v - v[2] * UP
    return v / np.linalg.norm(v)


def handover_case(near_rot: np.ndarray, block_rot: np.ndarray) -> str:
    """"along": the block's long axis lies along the near jaws (an upright block taken from
    above); "across": it lies across them (a lying block taken from above)."""
    long_in_hand = near_rot.T @ block_rot[:, 2]
    return "along" if abs(long_in_hand[0]) > 0.7 else "across"


def near_handover_axes(case: str, free_end_direction=None) -> list[tuple]:
    """The near arm's hand at the handover. along: jaws level, closing vertically (y up or down),
    the block level past the fingertips with its free part's side faces open to the far jaws
    from above. across: pointing down as it picked, turned so that the block's free end (on the
    gripper's +z side) points along ``free_end_direction`` (toward the far arm)."""
    if case == "along":
        return [((1, UP),), ((1, DOWN),)]
    return [((0, DOWN), (2, free_end_direction))]


def far_handover_grasps(case: str, block_pos, block_rot, near_rot, near_site) -> list[GraspTarget]:
    """The far arm's grasp of the block the near arm holds out.

    along (the near hand level, the block past its fingertips): from above, across the block's
    horizontal short axis (the near jaws hold the vertical one), 15 mm from the centre away from
    the near jaws and 10 mm up, so the fingertips stay above the block's underside (it is laid
    down in this grasp). across (the near hand pointing down, the block lying level with its
    free end toward the far arm): end-on and level, the far jaws closing on the block's top and
    bottom (the near jaws hold its sides) and reaching in along the block from its free end.
    """
    near_y = near_rot[:, 1]
    shorts = [block_rot[:, 0], block_rot[:, 1]]
    free = shorts[int(np.argmin([abs(np.dot(s, near_y)) for s in shorts]))]
    long_axis = block_rot[:, 2] * np.sign(np.dot(block_rot[:, 2], block_pos - near_site) or 1.0)
    out = []
    if case == "across":
        site = block_pos + FAR_LEVEL_SHIFT_M * long_axis
        for y in (free, -free):
            out.append(GraspTarget(site, ((0, -long_axis), (1, y)), -long_axis, LEVEL_RISE_M))
            out.append(GraspTarget(site, ((1, y),), -long_axis, LEVEL_RISE_M))
        return out
    site = block_pos + FAR_ALONG_SHIFT_M * long_axis + FAR_SITE_ABOVE_CENTRE_M * UP
    # Ways in that never cross the near jaws: from above; or from the block's free end, level
    # or slanting down, where straight down is out of reach.
    side = _unit(-long_axis + (long_axis @ UP) * UP)
    for approach in (DOWN, _unit(DOWN + side), side):
        for y in (free, -free):
            s = site + 0.002 * y
            out.append(GraspTarget(s, ((0, DOWN), (1, y)), approach, HANDOVER_RISE_M))
            out.append(GraspTarget(s, ((1, y),), approach, HANDOVER_RISE_M))  # tilted jaws
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def block_corners(block_pos, block_rot) -> np.ndarray:
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
    return block_pos + (signs * BLOCK_HALF_M) @ block_rot.T


@dataclass(frozen=True)
class InHand:
    """The block's pose in a grasp site's frame, measured once the block is held."""
    offset: np.ndarray  # block centre in the site frame
    rotation: np.ndarray  # block rotation in the site frame

    @classmethod
    def measure(cls, site_pos, site_rot, block_pos, block_rot) -> InHand:
        return cls(site_rot.T @ (block_pos - site_pos), site_rot.T @ block_rot)

    def block_pose(self, site_pos, site_rot) -> tuple[np.ndarray, np.ndarray]:
        return site_pos + site_rot @ self.offset, site_rot @ self.rotation
