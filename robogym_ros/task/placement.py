"""Whether the block lies in the tray: the handover's success, judged from the physics.

One definition for every place that says "success" (the env's ``is_success`` and
``terminated``, its ``compute_*`` functions and the batched env's, the expert's reports, the
ROS expert node, every tool that prints a rate). The block is **placed** when

- it lies **inside the tray**: its centre inside the tray's walls (the inner faces, in the
  tray's own frame, whatever its yaw) and no higher above the tray's floor than an upright
  block standing on it (``PLACED_MAX_RISE_M``);
- it **rests on something**: it touches the tray (or the table), so it is not in flight;
- it **touches no arm**: no contact between the block and any geom of either arm, so it is
  released, not held (a block held near the goal is never placed);
- it is **at rest**: its speed below ``REST_SPEED_M_S`` and its turn rate below
  ``REST_TURN_RAD_S``, so a block that bounces, slides or tips over is not placed yet.

Contacts are MuJoCo's own, from ``mj_collision`` on the configuration observed (the 12 joint
positions and the two objects' poses are the whole of ``qpos`` in this scene), so the judge
needs nothing a ROS client lacks. Velocities are the block's mean over the interval between
two observations (its pose then and now): the sim publishes no object velocities, and the same
numbers in local mode and over ROS keep lockstep bit for bit equal to local mode. At a reset
there is no interval yet: not at rest.

Thresholds: a block that lands in the tray and stays is at 0.0 mm/s (to 0.1 mm/s) within 0.1 s
of landing; in the 40 ms steps just after a drop it moves at 17 .. 90 mm/s, and one that tips or
slides as fast. 10 mm/s is 0.4 mm per 40 ms step, far below anything visible, and 0.1 rad/s is
0.23 degrees per step. A held block can be slower than both (the arm stands still), which is why
the contacts, not the speed, tell held from released (test/test_env_success.py holds one still
in the tray: at rest, not placed).

For a goal other than the tray's (a relabelled goal, HER) only the inside-the-tray part moves: a
goal is a place attached to the tray, and the box is centred on it, shifted as the tray has
moved since the reset (``tray_shift``) and turned as the tray is turned now; the contacts and the
speed are the block's own and do not depend on the goal (:func:`placed_at`). For the env's own
goal (the tray's centre at the reset) the box is the tray's interior, where the tray is now,
and the floor is the only thing the block can rest on there: a tray pushed away takes the goal
with it, so a block left where the tray used to stand is never placed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import mujoco
import numpy as np

from robogym_ros.contract import POSE_SIZE
from robogym_ros.task import scene

# models/so101_dual.xml: tray_base 4 mm thick with the body's origin at its underside; walls 2 mm
# thick, their inner faces 46 mm from the centre, their tops 30 mm above the underside.
TRAY_FLOOR_TOP_M = 0.004
TRAY_INNER_HALF_M = 0.046
TRAY_WALL_TOP_M = 0.030
BLOCK_HALF_SHORT_M = 0.0125  # the block: 25 x 25 x 50 mm
BLOCK_HALF_LONG_M = 0.025
# The goal: where a lying block's centre rests at the tray's centre (tray frame, above its origin).
GOAL_ABOVE_TRAY_M = TRAY_FLOOR_TOP_M + BLOCK_HALF_SHORT_M
# Inside the tray: the centre at most this high above the floor's top: an upright block standing on
# the floor (25 mm) with 3 mm for a tilt against a wall; a block lying across the walls' tops
# (>= 38.5 mm) is not inside.
PLACED_MAX_RISE_M = BLOCK_HALF_LONG_M + 0.003
REST_SPEED_M_S = 0.01
REST_TURN_RAD_S = 0.1
ARM_CONTACT_SIDES = scene.SIDES
JAW_GEOMS = ("fixed_jaw", "moving_jaw_finger")
CONTACT_SETS_KEPT = 4096  # distinct lists of contacting geom pairs a judge remembers (an expert episode: ~20 new)
# The rule above in one sentence, from the same thresholds: what agents and reports are told.
SUCCESS_TEXT = (
    f"the block placed in the tray: its centre inside the tray's walls (less than {TRAY_INNER_HALF_M * 1e3:g} mm "
    f"from the tray's centre along each of the tray's own axes) and at most {PLACED_MAX_RISE_M * 1e3:g} mm above "
    f"the tray's floor; resting on the tray; touching neither arm (released); at rest (slower than "
    f"{REST_SPEED_M_S * 1e3:g} mm/s and {REST_TURN_RAD_S:g} rad/s). Judged from the physics; the tray may have "
    f"moved since the reset, the test is where it is now")


def floats7(pose) -> list | tuple:
    """The first 7 numbers of a pose as Python floats (7 floats in a list or tuple, as ``tolist`` and the
    judge give them, as they are)."""
    if type(pose) in (list, tuple) and len(pose) == 7 and type(pose[0]) is float:
        return pose
    return pose[:7].tolist() if isinstance(pose, np.ndarray) else [float(v) for v in pose[:7]]


def _rotate_inverse(qw, qx, qy, qz, vx, vy, vz):
    """R(q)^T v by components: the same operations in the same order on numpy arrays and on
    Python floats, so a batch and a single goal give the same numbers bit for bit."""
    ux, uy, uz = -qx, -qy, -qz  # the conjugate rotates the other way
    tx, ty, tz = 2.0 * (uy * vz - uz * vy), 2.0 * (uz * vx - ux * vz), 2.0 * (ux * vy - uy * vx)
    return (vx + qw * tx + (uy * tz - uz * ty), vy + qw * ty + (uz * tx - ux * tz), vz + qw * tz + (ux * ty - uy * tx))


def quat_rotate_inverse(quat, v) -> np.ndarray:
    """``v`` (..., 3) in the frame of unit quaternions ``quat`` (..., 4, w x y z): R(q)^T v."""
    q = np.asarray(quat, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    return np.stack(_rotate_inverse(q[..., 0], q[..., 1], q[..., 2], q[..., 3], v[..., 0], v[..., 1], v[..., 2]),
                    axis=-1)


def goal_of_tray(tray_pose) -> np.ndarray:
    """The goal for a tray pose (x y z qw qx qy qz): its origin plus GOAL_ABOVE_TRAY_M along the
    tray's up axis (straight up for a tray on the table); a new (3,) float64 array, (..., 3) for
    poses (..., 7)."""
    p = np.asarray(tray_pose, dtype=np.float64)
    qw, qx, qy, qz = (p[..., i] for i in range(3, 7))
    up = np.stack([2 * (qx * qz + qw * qy), 2 * (qy * qz - qw * qx), 1 - 2 * (qx * qx + qy * qy)], axis=-1)
    return p[..., :3] + GOAL_ABOVE_TRAY_M * up


def goal_of_tray_one(tray_pose) -> tuple[float, float, float]:
    """:func:`goal_of_tray` of one pose in Python floats: the same numbers bit for bit (the same
    operations in the same order), without numpy's per-call cost."""
    px, py, pz, qw, qx, qy, qz = floats7(tray_pose)
    up = (2 * (qx * qz + qw * qy), 2 * (qy * qz - qw * qx), 1 - 2 * (qx * qx + qy * qy))
    return (px + GOAL_ABOVE_TRAY_M * up[0], py + GOAL_ABOVE_TRAY_M * up[1], pz + GOAL_ABOVE_TRAY_M * up[2])


def _inside(ax, ay, az, gx, gy, gz, sx, sy, sz, qw, qx, qy, qz):
    """:func:`inside_tray_at` by components (numpy arrays or Python floats alike)."""
    rx, ry, rz = _rotate_inverse(qw, qx, qy, qz, ax - (gx + sx), ay - (gy + sy), az - (gz + sz))
    rise = rz + (GOAL_ABOVE_TRAY_M - TRAY_FLOOR_TOP_M)  # above the floor's top
    return (abs(rx) < TRAY_INNER_HALF_M) & (abs(ry) < TRAY_INNER_HALF_M) & (rise > 0.0) & (rise <= PLACED_MAX_RISE_M)


def inside_tray_at(achieved, goal, tray_shift, tray_quat) -> np.ndarray:
    """The block's centre ``achieved`` inside the tray box centred on ``goal + tray_shift`` (a tray
    whose floor centre is GOAL_ABOVE_TRAY_M below that point, turned as ``tray_quat``); batched."""
    a, g, s, q = (np.asarray(x, np.float64) for x in (achieved, goal, tray_shift, tray_quat))
    return np.asarray(_inside(*(a[..., i] for i in range(3)), *(g[..., i] for i in range(3)),
                              *(s[..., i] for i in range(3)), *(q[..., i] for i in range(4))))


def inside_tray_at_one(achieved, goal, tray_shift, tray_quat) -> bool:
    """:func:`inside_tray_at` of one goal in Python floats: the same answer, ~20x faster."""
    a, g, s, q = achieved, goal, tray_shift, tray_quat  # indexed one by one: no generator per argument
    return bool(_inside(float(a[0]), float(a[1]), float(a[2]), float(g[0]), float(g[1]), float(g[2]),
                        float(s[0]), float(s[1]), float(s[2]), float(q[0]), float(q[1]), float(q[2]), float(q[3])))


def placed_at(achieved, goal, tray_shift, tray_quat, released, at_rest, supported) -> np.ndarray:
    """The success test for any goal: inside the box at ``goal`` (moved by ``tray_shift``, turned
    by ``tray_quat``), touching no arm (``released``), at rest and resting on something (the tray
    or the table); every argument batched alike (bool arrays for the flags)."""
    return (inside_tray_at(achieved, goal, tray_shift, tray_quat) & np.asarray(released, bool)
            & np.asarray(at_rest, bool) & np.asarray(supported, bool))


def tray_shift(tray_pose, goal) -> np.ndarray:
    """How far the tray's goal point has moved from ``goal`` (the goal of the tray at the reset)."""
    return goal_of_tray(tray_pose) - np.asarray(goal, np.float64)


def speeds(pose_before, pose_now, elapsed_s: float) -> tuple[float, float]:
    """The block's mean speed (m/s) and turn rate (rad/s) between two poses ``elapsed_s`` apart
    (inf, inf without a pose before, or no time between)."""
    if pose_before is None or not elapsed_s > 0:
        return math.inf, math.inf
    a, b = floats7(pose_before), floats7(pose_now)
    moved = math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2)
    # the turn between the two orientations: q = a^-1 b, angle 2 atan2(|vec(q)|, |w(q)|)
    aw, ax, ay, az = a[3:]
    bw, bx, by, bz = b[3:]
    w = aw * bw + ax * bx + ay * by + az * bz
    vx = aw * bx - bw * ax - (ay * bz - az * by)
    vy = aw * by - bw * ay - (az * bx - ax * bz)
    vz = aw * bz - bw * az - (ax * by - ay * bx)
    turned = 2.0 * math.atan2(math.sqrt(vx * vx + vy * vy + vz * vz), abs(w))
    return moved / elapsed_s, turned / elapsed_s


@dataclass(frozen=True)
class BlockContacts:
    """What touches the block in one configuration (MuJoCo contacts)."""
    arm: tuple[bool, ...]  # per side (scene.SIDES order): any geom of that arm
    grasp: tuple[bool, ...]  # per side: both of its jaws
    tray: bool
    table: bool  # the table (or anything else of the world body)

    @property
    def any_arm(self) -> bool:
        return any(self.arm)


class Placement(NamedTuple):
    """The judge's findings for one observation (a NamedTuple: made on every env step)."""
    contacts: BlockContacts
    speed_m_s: float
    turn_rad_s: float
    block_pose: tuple  # the block's and the tray's poses judged (x y z qw qx qy qz)
    tray_pose: tuple

    @property
    def inside(self) -> bool:
        """Inside the tray's walls (the tray where it is now)."""
        return inside_tray_at_one(self.block_pose, goal_of_tray(self.tray_pose), (0.0, 0.0, 0.0), self.tray_pose[3:7])

    @property
    def at_rest(self) -> bool:
        return self.speed_m_s < REST_SPEED_M_S and self.turn_rad_s < REST_TURN_RAD_S

    @property
    def supported(self) -> bool:
        return self.contacts.tray or self.contacts.table

    @property
    def placed(self) -> bool:
        """The block lies in the tray: inside, resting (inside the tray only its floor or walls can
        bear it), touching no arm, at rest."""
        return self.inside and self.supported and not self.contacts.any_arm and self.at_rest

    def placed_at_goal(self, block_xyz, goal, tray_pose) -> bool:
        """:func:`placed_at` for these findings (the env's ``task.success`` on its info, exactly),
        for ``goal`` (the tray's goal at the reset) and the tray where it is now."""
        c = self.contacts
        return (inside_tray_at_one(block_xyz, goal, tray_shift(tray_pose, goal), tray_pose[3:7])
                and not c.any_arm and self.at_rest and self.supported)

    def describe(self) -> str:
        held = [s for s, t in zip(ARM_CONTACT_SIDES, self.contacts.arm) if t]
        where = "inside the tray" if self.inside else "outside the tray"
        on = "on the tray" if self.contacts.tray else ("on the table" if self.contacts.table else "touching neither "
                                                                                                  "tray nor table")
        arm = f"touching the {' and '.join(held)} arm" if held else "touching no arm"
        return f"{where}, {on}, {arm}, {self.speed_m_s * 1e3:.1f} mm/s, {self.turn_rad_s:.2f} rad/s"


class PlacementJudge:
    """Contacts and placement of the block from observed configurations, on a scratch MjData of
    the scene's model (never the physics' own)."""

    def __init__(self, model_path: str, joint_names, object_names):
        self.model = mujoco.MjModel.from_xml_path(model_path)
        m = self.model
        self.data = mujoco.MjData(m)
        self._joint_adr = np.array([m.jnt_qposadr[m.joint(n).id] for n in joint_names], dtype=np.int64)
        free = {}
        for j in range(m.njnt):
            if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
                free[m.body(int(m.jnt_bodyid[j])).name] = int(m.jnt_qposadr[j])
        missing = [o for o in object_names if o not in free]
        if missing or "block" not in free or "tray" not in free:
            raise ValueError(f"the scene lacks free bodies {missing or ['block', 'tray']}: no placement to judge")
        covered = len(self._joint_adr) + POSE_SIZE * len(object_names)
        if covered != m.nq:
            raise ValueError(f"the joints and object poses observed fill {covered} of the model's {m.nq} qpos "
                             f"numbers: the configuration cannot be rebuilt from an observation")
        self._pose_adr = (np.array([free[o] for o in object_names])[:, None] + np.arange(POSE_SIZE)).ravel()
        self.block = m.body("block").id
        self.tray_body = m.body("tray").id
        self._block_index = list(object_names).index("block")
        self._tray_index = list(object_names).index("tray")
        # what each geom is, for the block's contacts: 0 world, 1 tray, 2 + k arm k; jaws separately
        root = m.body_rootid
        self._kind = np.zeros(m.ngeom, dtype=np.int64)
        for g in range(m.ngeom):
            b = int(m.geom_bodyid[g])
            name = m.body(int(root[b])).name
            if b == self.tray_body:
                self._kind[g] = 1
            for k, side in enumerate(ARM_CONTACT_SIDES):
                if name.startswith(f"{side}_"):
                    self._kind[g] = 2 + k
        self._jaw = {m.geom(f"{side}_{j}").id: (k, i) for k, side in enumerate(ARM_CONTACT_SIDES)
                     for i, j in enumerate(JAW_GEOMS)}
        self._body = m.geom_bodyid.tolist()
        self._kinds = self._kind.tolist()
        self._no_grasp = (False,) * len(ARM_CONTACT_SIDES)
        self._classified: dict[bytes, BlockContacts] = {}
        self._collide_with_block_only()

    def _collide_with_block_only(self) -> None:
        """Only the block's contacts are read: in this private model, every pair without the
        block stops colliding (each pair with it collides exactly as in the scene), so
        ``mj_collision`` tests a few pairs instead of all of the arms' and the table's."""
        m = self.model
        mine = m.geom_bodyid == self.block
        contype, conaffinity = m.geom_contype.copy(), m.geom_conaffinity.copy()
        if m.npair or m.nexclude or len({(int(a), int(b)) for a, b in zip(contype[mine], conaffinity[mine])}) != 1:
            return  # explicit pairs or mixed masks: keep the scene's filter as it is
        block_type, block_affinity = int(contype[mine][0]), int(conaffinity[mine][0])
        meets_block = ((block_type & conaffinity) != 0) | ((contype & block_affinity) != 0)
        m.geom_contype[:] = np.where(mine, 1, 0)
        m.geom_conaffinity[:] = np.where(~mine & meets_block, 1, 0)

    def contacts(self, position, object_poses) -> BlockContacts:
        """The block's contacts with joints at ``position`` and objects at ``object_poses``."""
        d = self.data
        d.qpos[self._joint_adr] = position
        d.qpos[self._pose_adr] = np.asarray(object_poses, np.float64).ravel()
        return self._scan()

    def contacts_of_qpos(self, qpos) -> BlockContacts:
        """:meth:`contacts` from the scene's whole ``qpos`` (a model of the same file: the same layout)."""
        self.data.qpos[:] = qpos
        return self._scan()

    def _scan(self) -> BlockContacts:
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        # The same geom pairs always mean the same contacts: classified once, then looked up.
        pairs = d.contact.geom[:d.ncon].tobytes()
        found = self._classified.get(pairs)
        if found is None:
            found = self._classify(d.contact.geom[:d.ncon].tolist())
            if len(self._classified) < CONTACT_SETS_KEPT:
                self._classified[pairs] = found
        return found

    def _classify(self, pairs: list) -> BlockContacts:
        arm, jaws = [False] * len(ARM_CONTACT_SIDES), set()
        tray = table = False
        body, kind, block = self._body, self._kinds, self.block
        for g1, g2 in pairs:
            if body[g1] == block:
                other = g2
            elif body[g2] == block:
                other = g1
            else:
                continue
            k = kind[other]
            if k == 0:
                table = True
            elif k == 1:
                tray = True
            else:
                arm[k - 2] = True
                if other in self._jaw:
                    jaws.add(self._jaw[other])
        grasp = tuple(all((k, i) in jaws for i in range(len(JAW_GEOMS))) for k in range(len(ARM_CONTACT_SIDES))) \
            if jaws else self._no_grasp
        return BlockContacts(tuple(arm), grasp, tray, table)

    def judge(self, position, object_poses, block_pose_before=None, elapsed_s: float = 0.0) -> Placement:
        """The placement of the observed configuration; ``block_pose_before``: the block's pose at the
        previous observation, ``elapsed_s`` before (None at a reset: not at rest)."""
        poses = np.asarray(object_poses, np.float64).reshape(-1, POSE_SIZE)
        rows = poses.tolist()
        block, tray = rows[self._block_index], rows[self._tray_index]
        speed, turn = speeds(block_pose_before, block, elapsed_s)
        return Placement(self.contacts(position, poses), speed, turn, tuple(block), tuple(tray))
