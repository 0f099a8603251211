"""Planning the meeting of the two arms and the place in the tray (IK + collision checks).

The handover pose is searched once per episode over a few candidate points, low: for a block
held out level ("along") on the far arm's side (the far arm reaches straight down only near
itself), for a block held pointing down ("across") on the near arm's side (now the near arm
reaches down and the far arm reaches out level). The first point whose near hand pose, far
grasp, far pregrasp and waiting pose all solve, and where no arm link touches the other arm,
the table or (for the far arm) the held block, wins; the point that won last time is tried first.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass

import mujoco
import numpy as np

from robogym_ros.expert import grasps
from robogym_ros.expert.kinematics import ArmKinematics
from robogym_ros.task import scene

# Near grasp-site candidates (x, |y| toward the far arm's side, z), m; y's sign is the far side's.
_HANDOVER_POINTS_M = [(x, y, z) for z in (0.05, 0.065, 0.08) for x in (0.14, 0.10, 0.18) for y in (0.05, 0.02, 0.08)]
# Block centres for the level handover (across): the near hand points down there, so they lie
# on the near arm's side of the middle (y < 0 toward the near arm), where it reaches straight down.
_LEVEL_POINTS_M = [(x, y, z) for z in (0.08, 0.06, 0.10) for x in (0.13, 0.10, 0.16) for y in (-0.02, -0.05, 0.01)]
_PENETRATION_M = 0.0005
_PLACE_CLEARANCE_M = 0.002  # the block's underside this far above the tray floor when let go
_TRAY_FLOOR_TOP_M = 0.004  # models/so101_dual.xml: tray_base is 4 mm thick, origin at its bottom
_TRAY_WALL_TOP_M = 0.030  # models/so101_dual.xml: the walls' top above the tray's underside
_FINGER_FLOOR_CLEARANCE_M = 0.003
CARRY_BACK_M = 0.05
CARRY_UP_M = 0.04
READY_BACK_M = 0.06
_HOLDING_RAD = 0.35  # near jaws on the block
_OPEN_RAD = 0.9  # far jaws on the way in (policy.GRIPPER_OPEN_RAD)


@dataclass(frozen=True)
class HandoverPlan:
    """Where the two arms meet: the near hand's joints and axes, the far arm's grasp and waits."""
    case: str
    near_q: np.ndarray
    near_axes: tuple
    far_pre_q: np.ndarray
    far_q: np.ndarray
    grasp: grasps.GraspTarget  # the far grasp planned; the re-plan at the handover tries it first
    near_carry_q: np.ndarray  # the near hand back along its jaws and up: it slides in from there
    far_approach_q: np.ndarray  # the far pregrasp (the far arm waits at far_pre_q, further back)
    block_m: np.ndarray  # where the block's centre should be at the handover


@dataclass(frozen=True)
class PlacePlan:
    """The far arm over the tray (pre) and with the block just above the tray's floor."""
    pre_q: np.ndarray
    q: np.ndarray


class HandoverPlanner:
    """IK and collision checks for the handover and the place, on a scratch MjData."""

    def __init__(self, model: mujoco.MjModel, kinematics: dict[str, ArmKinematics]):
        self.model = model
        self.kin = kinematics
        self._check = mujoco.MjData(model)
        self._last_point: dict[tuple, int] = {}
        bodies = {s: {b for b in range(model.nbody) if model.body(b).name.startswith(s + "_")
                      and not model.body(b).name.endswith("_base")} for s in scene.SIDES}
        self._arm_of_body = np.full(model.nbody, -1)
        for i, s in enumerate(scene.SIDES):
            for b in bodies[s]:
                self._arm_of_body[b] = i
        self._object_bodies = {model.body(b).id for b in scene.OBJECT_BODIES}
        self._tray = model.body("tray").id
        self._block_adr = int(model.jnt_qposadr[model.body("block").jntadr[0]])
        self._jaws = {s: [model.geom(f"{s}_{g}").id for g in ("fixed_jaw", "moving_jaw_finger")]
                      for s in scene.SIDES}

    def reset(self) -> None:
        """Forget the handover point that won last: a new episode plans as the first one does."""
        self._last_point.clear()

    # --- collisions ----------------------------------------------------------------------
    def collides(self, arm_q: dict[str, np.ndarray], grippers_rad: dict[str, float] | None = None,
                 block: tuple | None = None, holder: str | None = None) -> bool:
        """An arm link inside the other arm, the table or a base at these joints; with ``block``
        (pos, rot) also any arm but ``holder`` touching the block (the tray is ignored)."""
        d = self._check
        for side, q in arm_q.items():
            d.qpos[self.kin[side].qpos_adr] = q
            d.qpos[self.model.joint(f"{side}_gripper").qposadr[0]] = (grippers_rad or {}).get(side, 0.0)
        if block is not None:
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, np.asarray(block[1]).ravel())
            d.qpos[self._block_adr:self._block_adr + 3] = block[0]
            d.qpos[self._block_adr + 3:self._block_adr + 7] = quat
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_collision(self.model, d)
        holder_arm = scene.SIDES.index(holder) if holder else -2
        for c in d.contact[:d.ncon]:
            if c.dist > -_PENETRATION_M:
                continue
            b1, b2 = self.model.geom_bodyid[c.geom[0]], self.model.geom_bodyid[c.geom[1]]
            a1, a2 = self._arm_of_body[b1], self._arm_of_body[b2]
            if b1 in self._object_bodies or b2 in self._object_bodies:
                other = a2 if b1 in self._object_bodies else a1
                if block is None or self._tray in (b1, b2) or other < 0 or other == holder_arm:
                    continue
            elif a1 < 0 and a2 < 0:
                continue
            self.last_contact = (self.model.geom(c.geom[0]).name, self.model.geom(c.geom[1]).name)
            return True
        return False

    # --- handover --------------------------------------------------------------------------
    def plan(self, near: str, far: str, near_q, near_rot, in_hand: grasps.InHand, far_q) -> HandoverPlan | None:
        block_rot_now = near_rot @ in_hand.rotation
        case = grasps.handover_case(near_rot, block_rot_now)
        points = _HANDOVER_POINTS_M if case == "along" else _LEVEL_POINTS_M
        sign = 1.0 if far == "left" else -1.0
        order = list(range(len(points)))
        key = (near, case)
        if key in self._last_point:
            order.remove(self._last_point[key])
            order.insert(0, self._last_point[key])
        nk = self.kin[near]
        jaws = {near: _HOLDING_RAD, far: _OPEN_RAD}
        self.rejections = collections.Counter()  # why each candidate failed: for the failure report
        for i in order:
            x, y, z = points[i]
            point = np.array([x, sign * y, z])
            for axes, site in self._near_hand_options(case, near, far, point, in_hand, far_q):
                seeds = [near_q, [nk.pan_towards(site), 0.0, 0.9, -0.9, 1.5],
                         [nk.pan_towards(site), 0.0, 0.9, -0.9, -1.5], [nk.pan_towards(site), -0.5, 1.3, -0.6, 0.0]]
                hand = nk.solve_best(site, [axes], seeds)
                if not hand.ok():
                    self.rejections["near hand out of reach"] += 1
                    continue
                block_pos, block_rot = in_hand.block_pose(hand.position, hand.rotation)
                g, pre, at = self.far_grasp(far, case, block_pos, block_rot, hand.rotation, hand.position,
                                            q0=far_q, near_q=hand.q)
                if at is None:
                    self.rejections["no far grasp"] += 1
                    continue
                back = CARRY_BACK_M * hand.rotation[:, 0] if case == "along" else np.zeros(3)
                for up_m in (CARRY_UP_M, CARRY_UP_M / 2, 0.0):  # straight down reaches only so high
                    carry = nk.solve(site - back + up_m * grasps.UP, axes, q0=hand.q)
                    if carry.ok():
                        break
                if not carry.ok():
                    self.rejections["near carry pose out of reach"] += 1
                    continue
                # the far jaws wait back from their pregrasp while the near hand brings the block in
                ready = self.kin[far].solve(g.pregrasp_m - READY_BACK_M * g.approach, g.axes, q0=pre.q)
                ready_q = ready.q if ready.ok() else pre.q
                held = in_hand.block_pose(*nk.fk(carry.q))
                if (self.collides({near: carry.q, far: ready_q}, jaws, held, near)
                        or self.collides({near: hand.q, far: ready_q}, jaws, (block_pos, block_rot), near)):
                    self.rejections[f"far ready pose touches {self.last_contact}"] += 1
                    continue
                self._last_point[key] = i
                return HandoverPlan(case, hand.q, axes, ready_q, at.q, g, carry.q, pre.q, block_pos)
        return None

    def _near_hand_options(self, case, near, far, point, in_hand, far_q):
        """(near axes, near site target) to try at a point: along, the point is the near site;
        across, the point is the block's centre, turned so that its free end faces the far arm."""
        if case == "along":
            for axes in grasps.near_handover_axes(case):
                yield axes, point
            return
        fk = self.kin[far]
        toward_far = point[:2] - fk.pan_xy
        toward_far = -np.append(toward_far / np.linalg.norm(toward_far), 0.0)  # from the block to the far arm
        for up in (grasps.UP, grasps.DOWN):  # the far jaws close vertically; find where its hand points
            reach = fk.solve_best(point + grasps.FAR_LEVEL_SHIFT_M * toward_far, [((1, up),)],
                                  [far_q, [fk.pan_towards(point), 0.5, 0.0, -0.5, 0.0]])
            if not reach.ok():
                continue
            free_end = -reach.rotation[:, 0]
            free_end[2] = 0.0
            free_end /= np.linalg.norm(free_end)
            axes = grasps.near_handover_axes(case, free_end)[0]
            x, z = grasps.DOWN, free_end
            rot = np.column_stack([x, np.cross(z, x), z])
            yield axes, point - rot @ in_hand.offset
            return

    def far_grasp(self, far: str, case: str, block_pos, block_rot, near_rot, near_site, *, q0, near_q,
                  prefer: grasps.GraspTarget | None = None):
        """(grasp, pregrasp IK, grasp IK) for the far arm, straight down first, tilted second."""
        fk = self.kin[far]
        near = "left" if far == "right" else "right"
        jaws = {near: _HOLDING_RAD, far: _OPEN_RAD}
        seeds = [q0, [fk.pan_towards(block_pos), 0.2, -0.2, 1.5, 1.5],
                 [fk.pan_towards(block_pos), 0.2, -0.2, 1.5, -1.5], [fk.pan_towards(block_pos), 0.0, 0.5, 1.0, 0.0]]
        grasp_ik = {}  # one grasp IK per (site, axes); the ways in share it
        candidates = grasps.far_handover_grasps(case, block_pos, block_rot, near_rot, near_site)
        if prefer is not None:
            candidates.sort(key=lambda g: (float(g.approach @ prefer.approach) < 0.9, len(g.axes) != len(prefer.axes),
                                           float(g.axes[-1][1] @ prefer.axes[-1][1]) < 0.9))
        for g in candidates:
            key = (tuple(np.round(g.site_m, 6)), tuple((i, tuple(d)) for i, d in g.axes))
            if key not in grasp_ik:
                at = fk.solve_best(g.site_m, [g.axes], seeds)
                # the jaws point down (along) or along the block toward the near hand (across)
                pointing = grasps.DOWN if case == "along" else g.approach
                good = at.ok() and at.rotation[:, 0] @ pointing >= 0.5
                grasp_ik[key] = at if good and not self.collides({near: near_q, far: at.q}, jaws) else None
            at = grasp_ik[key]
            if at is None:
                continue
            pre = fk.solve(g.pregrasp_m, g.axes, q0=at.q)
            if not pre.ok() or self.collides({near: near_q, far: pre.q}, jaws, (block_pos, block_rot), near):
                continue
            return g, pre, at
        return None, None, None

    # --- place -----------------------------------------------------------------------------
    def place(self, far: str, tray_pose, in_hand: grasps.InHand, far_q) -> PlacePlan | None:
        """Block centred over the tray, its underside just above the floor, jaws straight down."""
        fk = self.kin[far]
        tray = np.asarray(tray_pose[:3], dtype=np.float64)
        floor_z = tray[2] + _TRAY_FLOOR_TOP_M
        site = tray + np.array([0.0, 0.0, 0.08])
        axes = [(0, grasps.DOWN)]
        seeds = [far_q, [fk.pan_towards(tray), 0.2, -0.2, 1.5, 0.0]]
        result = None
        for _ in range(3):
            result = fk.solve_best(site, [axes], seeds)
            block_pos, block_rot = in_hand.block_pose(result.position, result.rotation)
            lowest = grasps.block_corners(block_pos, block_rot)[:, 2].min()
            fingers = self._lowest_jaw_z(far, result.q)
            drop = min(lowest - (floor_z + _PLACE_CLEARANCE_M), fingers - (floor_z + _FINGER_FLOOR_CLEARANCE_M))
            shift = tray[:2] - block_pos[:2]
            site = site + np.array([shift[0], shift[1], -drop])
            seeds = [result.q]
        result = fk.solve(site, axes, q0=result.q)
        if not result.ok():
            return None
        # Over the tray, the block's underside clear of its walls (coming in lower pushes the tray
        # away from the goal); straight down reaches only so high there, else a tilted hand.
        wall_top_z = tray[2] + _TRAY_WALL_TOP_M + _PLACE_CLEARANCE_M
        fallback = None  # the highest straight-down pose that does reach, walls or not
        for axis_tol_rad in (0.03, 0.35):
            for rise_m in (0.06, 0.05, 0.04, 0.025):
                pre = fk.solve(site + rise_m * grasps.UP, axes, q0=result.q)
                lowest = grasps.block_corners(*in_hand.block_pose(pre.position, pre.rotation))[:, 2].min()
                if pre.ok(axis_tol_rad=axis_tol_rad) and lowest >= wall_top_z:
                    return PlacePlan(pre.q, result.q)
                if fallback is None and pre.ok():
                    fallback = PlacePlan(pre.q, result.q)
        return fallback

    def _lowest_jaw_z(self, side: str, q) -> float:
        d = self._check
        d.qpos[self.kin[side].qpos_adr] = q
        mujoco.mj_kinematics(self.model, d)
        low = np.inf
        for g in self._jaws[side]:
            corners = grasps.block_corners(np.zeros(3), np.eye(3))  # unit signs scaled below
            signs = corners / grasps.BLOCK_HALF_M
            pts = d.geom_xpos[g] + (signs * self.model.geom_size[g]) @ d.geom_xmat[g].reshape(3, 3).T
            low = min(low, float(pts[:, 2].min()))
        return low
