"""The handover expert: a phase script over the two arms, with grasp checks that react.

``expert(percept)`` returns the 12 servo targets (rad, ``scene.JOINT_NAMES`` order) for the
latest percept; call ``reset()`` at each new episode. Each phase moves one or both arms from the
targets last sent to a goal found by IK on the scene's MJCF, along a minimum-jerk profile in
joint space, timed by the percept's clock (sim time), so the same script runs in local mode and
over ROS. Checks after each grasp read the gripper angle (jaws stopped by the block, not shut)
and where the block went; a missed table grasp is retried from a fresh plan, a missed handover
grasp likewise, and anything that cannot go on sets ``failure`` (phase and reason) and holds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import mujoco
import numpy as np

from robogym_ros.expert import grasps
from robogym_ros.expert.handover import HandoverPlanner
from robogym_ros.expert.kinematics import ArmKinematics
from robogym_ros.sim import scene
from robogym_ros.sim.physics import default_model_path

GRIPPER_OPEN_RAD = 0.9  # ~50 mm between the tips: room around a 25 mm block
GRIPPER_CLOSED_RAD = -0.17  # past shut: the servo squeezes at its force limit
GRIPPER_RELEASE_RAD = 0.55  # ~31 mm between the tips: a held 25 mm block is free
GRIPPER_HOLDING_MIN_RAD = 0.12  # jaws stopped by a 25 mm block sit at ~0.35; shut is <= 0
GRIPPER_HOLDING_MAX_RAD = 0.6  # above this the jaws are still (or again) open
JAWS_STILL_RAD = 0.005  # the gripper moved less than this in 30 ms: it has stopped
JAWS_STILL_TIMEOUT_S = 0.6
MAX_TABLE_TRIES = 3
MAX_HANDOVER_TRIES = 2
MAX_CARRIES = 2
PLAN_STILL_GOOD_M = 0.015  # the block this close to where the plan put it: the planned far grasp fits
SLOW_CALL_S = 0.015  # a call that planned longer than this (wall time) starts its moves late
CARRY_WAYPOINTS = 5
TURN_WAYPOINTS = 5
RAISED_FOLD_Q = np.array([0.0, -1.0, 0.6, 1.3, 0.0])  # the fold with the elbow opened: gripper up
UNFOLDED_Q = np.array([0.0, -0.6, 0.9, -0.2, 0.0])  # upper arm back, gripper level above the base
CARRY_BUMP_M = 0.03
JOINT_SPEED_RAD_S = 3.0  # the farthest-moving joint's mean pace; phases last at least their minimum
GRIPPER_SPEED_RAD_S = 6.0
CONVERGED_RAD = 0.02
CONVERGE_TIMEOUT_S = 0.5
LIFT_M = 0.07
PLACE_OFF_CENTRE_MAX_M = 0.02  # the block's centre at most this far off a pushed tray's centre
HOVER_M = 0.015  # the block this far above its place before the last look and the last lowering
BLOCK_HELD_MAX_M = 0.035  # block centre this close to the grasp site: it moves with the hand
# Taken end-on, the block can slide toward the far fingertips and still be held (jaws not shut)
BLOCK_IN_FAR_JAWS_MAX_M = 0.06


# The env's goal (robogym_ros.envs.task.goal_from_tray_pose): a lying block's centre resting on
# the tray's floor (4 mm thick) at its centre. test/test_expert.py checks that the two agree.
GOAL_ABOVE_TRAY_M = 0.004 + 0.0125


def goal_of_tray(tray_pose) -> np.ndarray:
    return np.array([tray_pose[0], tray_pose[1], tray_pose[2] + GOAL_ABOVE_TRAY_M], dtype=np.float64)


@dataclass
class Percept:
    """What the expert sees at one tick: exactly what the env observes (no privileged state)."""
    time_s: float
    q: np.ndarray  # 12 joint positions (rad), scene.JOINT_NAMES order
    block_pose: np.ndarray  # x y z qw qx qy qz (world, m)
    tray_pose: np.ndarray


@dataclass(frozen=True)
class ExpertFailure:
    """Where the expert gave up and why."""
    phase: str
    reason: str


@dataclass(frozen=True)
class _Solved:
    q: np.ndarray


@dataclass(eq=False)  # hashed by identity: arms key the goals of a move
class _Arm:
    side: str
    kin: ArmKinematics
    cols: slice = field(init=False)

    def __post_init__(self):
        start = scene.SIDES.index(self.side) * len(scene.ARM_JOINTS)
        self.cols = slice(start, start + len(scene.ARM_JOINTS))


class HandoverExpert:
    """Scripted handover: near arm picks, both meet, far arm takes, near lets go, far places."""

    def __init__(self, model_path: str | None = None, *, speed_scale: float = 1.0):
        self.model = mujoco.MjModel.from_xml_path(model_path or default_model_path())
        self.arms = {s: _Arm(s, ArmKinematics(self.model, s)) for s in scene.SIDES}
        self.planner = HandoverPlanner(self.model, {s: a.kin for s, a in self.arms.items()})
        self.speed_scale = float(speed_scale)
        self._lo = self.model.actuator_ctrlrange[:, 0].copy()
        self._hi = self.model.actuator_ctrlrange[:, 1].copy()
        self._is_gripper = np.array([n.endswith("gripper") for n in scene.JOINT_NAMES])
        self.reset()

    # --- public --------------------------------------------------------------------------
    def reset(self) -> None:
        self.phase = "start"
        self.failure: ExpertFailure | None = None
        self.events: list[str] = []  # retries and what caused them
        self._gen = None
        self._cmd = None
        self._p: Percept | None = None
        self._segments: dict[int, tuple] = {}  # column -> (start, goal, t0_s or None, duration_s)
        self._created: list[int] = []
        self._queued: list[tuple] = []  # (sim time s, goals): background moves that start later

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def __call__(self, percept: Percept) -> np.ndarray:
        self._p = percept
        if self._cmd is None:
            self._cmd = np.array(percept.q, dtype=np.float64)
            self._gen = self._script()
        for c, (a, b, t0, duration) in self._segments.items():
            if t0 is None:  # planned by a slow call: starts now, not back then
                self._segments[c] = (a, b, percept.time_s, duration)
        self._created = []
        for item in [q for q in self._queued if percept.time_s >= q[0]]:  # background moves due now
            self._queued.remove(item)
            for _ in self._move("", item[1], wait=False):
                pass
        started = time.perf_counter()
        try:
            next(self._gen)
        except StopIteration:
            pass
        if time.perf_counter() - started > SLOW_CALL_S:
            # Over ROS the sim ran on while this call planned: the moves it began start at the
            # next percept, so that none of them jumps ahead by the planning time.
            for c in self._created:
                a, b, _, duration = self._segments[c]
                self._segments[c] = (a, b, None, duration)
        self._interpolate()
        return self._cmd.copy()

    # --- helpers -------------------------------------------------------------------------
    def _fail(self, phase: str, reason: str):
        self.failure = ExpertFailure(phase, reason)
        self.phase = "failed"
        while True:
            yield

    def _block(self):
        return np.array(self._p.block_pose[:3]), grasps.rotation_of_quat(self._p.block_pose[3:])

    def _q5(self, arm: _Arm) -> np.ndarray:
        return np.array(self._p.q[arm.cols][:5])

    def _grip(self, arm: _Arm) -> float:
        return float(self._p.q[arm.cols][5])

    def _site(self, arm: _Arm):
        return arm.kin.fk(self._q5(arm))

    def _move(self, phase: str, goals: dict, min_s: float = 0.3, settle_s: float = 0.0, wait: bool = True,
              converge: bool = True):
        """Min-jerk from the targets last sent to ``goals`` {arm: (q5 or None, gripper or None)}.

        Each arm keeps its own timeline: with ``wait=False`` the move runs on while later
        phases move the other arm (the phase name is not changed then)."""
        now = self._p.time_s
        cols, values = [], []
        for arm, (q5, grip) in goals.items():
            if q5 is not None:
                cols += range(arm.cols.start, arm.cols.start + 5)
                values += list(q5)
            if grip is not None:
                cols.append(arm.cols.stop - 1)
                values.append(grip)
        cols = np.array(cols, dtype=np.int64)
        goal = np.clip(np.array(values, dtype=np.float64), self._lo[cols], self._hi[cols])
        start = self._cmd[cols]
        speed = np.where(self._is_gripper[cols], GRIPPER_SPEED_RAD_S, JOINT_SPEED_RAD_S)
        duration = max(min_s, float(np.max(np.abs(goal - start) / speed))) / self.speed_scale
        for c, a, b in zip(cols, start, goal):
            self._segments[int(c)] = (a, b, now, duration)
        self._created += [int(c) for c in cols]
        if not wait:
            return
        self.phase = phase
        yield  # the segments' start is fixed after this call (see __call__)
        t0 = self._segments[int(cols[0])][2]
        end = (t0 if t0 is not None else self._p.time_s) + duration + settle_s / self.speed_scale
        while self._p.time_s < end - 1e-9:
            yield
        # The servos lag a fast move: wait (bounded) until the arm joints are where they were sent.
        arm_cols = cols[~self._is_gripper[cols]] if converge else cols[:0]
        deadline = self._p.time_s + CONVERGE_TIMEOUT_S
        while (arm_cols.size and self._p.time_s < deadline
               and np.max(np.abs(self._p.q[arm_cols] - self._cmd[arm_cols])) > CONVERGED_RAD):
            yield

    def _wait_for(self, arm: _Arm, phase: str):
        """Until ``arm``'s running moves have ended and its joints caught up (bounded)."""
        self.phase = phase
        ends = [(t0 if t0 is not None else self._p.time_s) + d for c, (_, _, t0, d) in self._segments.items()
                if arm.cols.start <= c < arm.cols.stop]
        while ends and self._p.time_s < max(ends) - 1e-9:
            yield
        cols = np.arange(arm.cols.start, arm.cols.stop - 1)
        deadline = self._p.time_s + CONVERGE_TIMEOUT_S
        while self._p.time_s < deadline and np.max(np.abs(self._p.q[cols] - self._cmd[cols])) > CONVERGED_RAD:
            yield

    def _interpolate(self) -> None:
        t = self._p.time_s
        for c, (a, b, t0, duration) in self._segments.items():
            if t0 is None:
                continue  # starts at the next percept
            s = min(1.0, (t - t0) / duration) if duration > 0 else 1.0
            self._cmd[c] = a + (b - a) * (s * s * s * (10 - 15 * s + 6 * s * s))

    def _seeds(self, arm: _Arm, point):
        pan = arm.kin.pan_towards(point)
        return [self._q5(arm), [pan, 0.0, 0.6, 1.0, 0.0], [pan, -0.3, 1.2, 0.8, 1.5],
                [pan, 0.3, 0.3, 1.2, -1.5]]

    # --- the script ----------------------------------------------------------------------
    def _script(self):
        near = self.arms["left" if self._p.block_pose[1] > 0 else "right"]
        far = self.arms["right" if near.side == "left" else "left"]
        self._start_tray = np.array(self._p.tray_pose, dtype=np.float64)  # the goal's tray
        # The far arm lifts its gripper out of the fold now: from the fold (gripper down in front
        # of the base), one joint-space move to a pose with the wrist turned the other way
        # sweeps the gripper through the table.
        # First the elbow opens (the gripper rises where it hangs), then the wrist turns up: turned
        # first, the gripper's tips sweep low in front of the base, where the tray can stand.
        yield from self._move("far_unfold", {far: (RAISED_FOLD_Q, None)}, min_s=0.25, wait=False)
        self._queued.append((self._p.time_s + 0.3, {far: (UNFOLDED_Q, None)}))
        plan = None
        for attempt in range(MAX_CARRIES):
            plan = yield from self._pick_and_carry(near, far)
            if not isinstance(plan, str):
                break
            self.events.append(f"carry {attempt + 1}: {plan}")
        else:
            yield from self._fail("to_handover", f"{MAX_CARRIES} tries: {'; '.join(self.events[-MAX_CARRIES:])}")
        for attempt in range(MAX_HANDOVER_TRIES):
            ok = yield from self._far_take(near, far, plan)
            if ok is True:
                break
            self.events.append(f"handover grasp {attempt + 1}: {ok}")
        else:
            yield from self._fail("far_grasp", f"{MAX_HANDOVER_TRIES} tries: {'; '.join(self.events[-2:])}")
        # the far jaws hold: the near hand lets go and backs out along its own jaws
        yield from self._move("near_release", {near: (None, GRIPPER_OPEN_RAD)}, min_s=0.25)
        pos, rot = self._site(near)
        back = near.kin.solve(pos - 0.06 * rot[:, 0], plan.near_axes, q0=self._q5(near))
        yield from self._move("near_retract", {near: (back.q, None)}, min_s=0.4)
        if not self._held(far):
            yield from self._fail("near_retract", "the block left the far gripper when the near one let go")
        far_pos, far_rot = self._site(far)
        in_far = grasps.InHand.measure(far_pos, far_rot, *self._block())
        lift = far.kin.solve(far_pos + 0.05 * grasps.UP, [(0, far_rot[:, 0]), (1, far_rot[:, 1])], q0=self._q5(far))
        park = np.array([scene.folded_pose()[f"{near.side}_{j}"] for j in scene.ARM_JOINTS[:5]])
        yield from self._move("near_park", {near: (park, 0.0)}, wait=False)
        yield from self._move("far_lift", {far: (lift.q, None)}, min_s=0.3)
        place = self.planner.place(far.side, self._place_pose(), in_far, self._q5(far))
        if place is None:
            yield from self._fail("place_plan", "no place pose over the tray")
        # Through IK waypoints that turn the jaws down a little at a time while the hand moves over
        # the tray: one joint-space move that swings and turns at once can fling the block out.
        for q in self._turn_path(far, place.pre_q):
            yield from self._move("to_tray", {far: (q, None)}, min_s=0.15, converge=False)
        yield from self._wait_for(far, "to_tray")
        if not self._held(far, max_off_m=BLOCK_IN_FAR_JAWS_MAX_M):
            yield from self._fail("to_tray", "the block fell on the way to the tray")
        # The block may have shifted (or still swing) in the jaws: aim at where it is now, twice,
        # the second time just above the floor, with the hand still.
        for hover_m in (HOVER_M, 0.0):
            in_far = grasps.InHand.measure(*self._site(far), *self._block())
            place = self.planner.place(far.side, self._place_pose(), in_far, self._q5(far)) or place
            q = place.q
            if hover_m:
                pos, rot = far.kin.fk(place.q)
                hover = far.kin.solve(pos + hover_m * grasps.UP, [(0, rot[:, 0])], q0=place.q)
                q = hover.q if hover.ok() else place.q
            yield from self._move("far_lower", {far: (q, None)}, min_s=0.3, settle_s=0.1)
        # Let go gently: jaws opened just clear of the block (not swung into the tray's wall or
        # against a block standing upright, which could topple it over the wall), then straight up.
        yield from self._move("far_release", {far: (None, GRIPPER_RELEASE_RAD)}, min_s=0.25, settle_s=0.1)
        yield from self._move("far_retreat", {far: (place.pre_q, None)}, min_s=0.5)
        self.phase = "done"
        while True:
            yield

    def _pick_and_carry(self, near: _Arm, far: _Arm):
        """Pick the block from the table and hold it out at the handover: the plan, or why the
        block is not in the near jaws there (it did not come up, or fell on the way)."""
        picked = None
        for attempt in range(MAX_TABLE_TRIES):
            picked = yield from self._pick(near)
            if isinstance(picked, grasps.InHand):
                break
            self.events.append(f"table grasp {attempt + 1}: {picked}")
        else:
            yield from self._fail("near_grasp", f"{MAX_TABLE_TRIES} tries: {'; '.join(self.events)}")
        pos = self._site(near)[0]
        lift_q = near.kin.solve(pos + grasps.UP * LIFT_M, [(0, grasps.DOWN)], q0=self._q5(near)).q
        yield from self._move("near_lift", {near: (lift_q, None)}, min_s=0.4)
        if not self._held(near, min_rise_m=0.03):
            yield from self._move("near_regrasp", {near: (None, GRIPPER_OPEN_RAD)}, min_s=0.25)
            return "the block did not come up with the near gripper"
        # the block's pose in the hand as it hangs now (it can turn a little as it leaves the table)
        site_pos, site_rot = self._site(near)
        picked = grasps.InHand.measure(site_pos, site_rot, *self._block())
        plan = self.planner.plan(near.side, far.side, self._q5(near), site_rot, picked, self._q5(far))
        if plan is None:
            why = ", ".join(f"{k} x{n}" for k, n in self.planner.rejections.most_common(3))
            yield from self._fail("handover_plan", f"no handover pose both arms reach ({why})")
        yield from self._move("far_ready", {far: (plan.far_pre_q, GRIPPER_OPEN_RAD)}, wait=False)
        # A straight line to the carry pose, through IK waypoints whose jaw axis turns from the
        # grasp's to the handover's: one joint-space move between a hand pointing down and one
        # held level can dip the block to the table and scrape it out of the jaws.
        for q in self._carry_path(near, plan):
            yield from self._move("to_handover", {near: (q, None)}, min_s=0.12, converge=False)
        yield from self._wait_for(far, "far_ready")  # its jaws must be up before the block slides in
        yield from self._move("slide_in", {near: (plan.near_q, None)}, min_s=0.35, settle_s=0.1)
        if not self._held(near):
            return "the block left the near gripper on the way"
        return plan

    def _carry_path(self, near: _Arm, plan) -> list:
        if plan.case == "across":
            return [plan.near_carry_q]  # pointing down at both ends: one joint-space move keeps it so
        q = self._q5(near)
        start, rot = near.kin.fk(q)
        end = near.kin.fk(plan.near_carry_q)[0]
        y0, y1 = rot[:, 1], plan.near_axes[0][1]
        path = []
        for t in np.linspace(0.2, 1.0, CARRY_WAYPOINTS):
            y = (1 - t) * y0 + t * y1
            if np.linalg.norm(y) < 1e-6:
                y = y1
            pos = start + t * (end - start) + grasps.UP * CARRY_BUMP_M * np.sin(np.pi * t)
            r = near.kin.solve(pos, [(1, y)], q0=q)
            if not r.ok(0.01, 0.1):
                return [plan.near_carry_q]  # no smooth way found: go straight
            q = r.q
            path.append(q)
        path[-1] = plan.near_carry_q
        return path

    def _turn_path(self, arm: _Arm, goal_q) -> list:
        q = self._q5(arm)
        start, rot = arm.kin.fk(q)
        end, end_rot = arm.kin.fk(goal_q)
        path = []
        for t in np.linspace(0.2, 0.8, TURN_WAYPOINTS - 1):
            x = (1 - t) * rot[:, 0] + t * end_rot[:, 0]
            pos = start + t * (end - start) + grasps.UP * CARRY_BUMP_M * np.sin(np.pi * t)
            r = arm.kin.solve(pos, [(0, x / np.linalg.norm(x))], q0=q)
            if not r.ok(0.01, 0.1):
                return [goal_q]  # no smooth way found: go straight
            q = r.q
            path.append(q)
        return path + [goal_q]

    def _place_pose(self) -> np.ndarray:
        """Where to lay the block: the goal (the tray as the episode began), unless the tray has
        been pushed since; then as near the goal as keeps the block well inside the walls."""
        tray = np.array(self._p.tray_pose, dtype=np.float64)
        shift = self._start_tray[:2] - tray[:2]
        norm = float(np.linalg.norm(shift))
        tray[:2] += shift * min(1.0, PLACE_OFF_CENTRE_MAX_M / norm) if norm > 0 else 0.0
        return tray

    def _jaws_still(self, arm: _Arm):
        """Until the jaws have stopped (on the block, or shut) and are no longer open: over ROS
        the close command can arrive late, and an open gripper must not pass for a holding one."""
        deadline = self._p.time_s + JAWS_STILL_TIMEOUT_S
        last_t, last = self._p.time_s, self._grip(arm)
        while self._p.time_s < deadline:
            yield
            if self._p.time_s - last_t >= 0.03:
                still = abs(self._grip(arm) - last) < JAWS_STILL_RAD
                if still and self._grip(arm) < GRIPPER_HOLDING_MAX_RAD:
                    return
                last_t, last = self._p.time_s, self._grip(arm)

    def _held(self, arm: _Arm, min_rise_m: float = 0.0, max_off_m: float = BLOCK_HELD_MAX_M) -> bool:
        pos, _ = self._site(arm)
        block, _ = self._block()
        grip_ok = GRIPPER_HOLDING_MIN_RAD < self._grip(arm) < GRIPPER_HOLDING_MAX_RAD
        return grip_ok and np.linalg.norm(block - pos) < max_off_m and block[2] > min_rise_m

    def _pick(self, near: _Arm):
        """One table grasp: returns the block's pose in the hand, or why it missed."""
        block_pos, block_rot = self._block()
        best = None
        for g in grasps.table_grasps(block_pos, block_rot):
            pre = near.kin.solve_best(g.pregrasp_m, [g.axes], self._seeds(near, block_pos))
            if not pre.ok():
                continue
            at = near.kin.solve(g.site_m, g.axes, q0=pre.q)
            if not at.ok():
                continue
            cost = float(np.max(np.abs(pre.q - self._q5(near))))
            if best is None or cost < best[0]:
                best = (cost, pre, at)
        if best is None:
            yield from self._fail("near_grasp", "no table grasp the near arm reaches")
        _, pre, at = best
        yield from self._move("near_pregrasp", {near: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.6)
        yield from self._move("near_descend", {near: (at.q, None)}, min_s=0.4, settle_s=0.05)
        yield from self._move("near_close", {near: (None, GRIPPER_CLOSED_RAD)}, min_s=0.3, settle_s=0.1)
        yield from self._jaws_still(near)
        if self._grip(near) <= GRIPPER_HOLDING_MIN_RAD:
            reason = f"jaws shut on nothing ({self._grip(near):.2f} rad)"
            yield from self._move("near_regrasp", {near: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.3)
            return reason
        pos, rot = self._site(near)
        return grasps.InHand.measure(pos, rot, *self._block())

    def _far_take(self, near: _Arm, far: _Arm, plan):
        """The far arm closes on the held-out block, re-planned from where the block really is."""
        block_pos, block_rot = self._block()
        near_pos, near_rot = self._site(near)
        g, pre, at = self.planner.far_grasp(far.side, plan.case, block_pos, block_rot, near_rot, near_pos,
                                            q0=plan.far_q, near_q=self._q5(near), prefer=plan.grasp)
        if at is None and np.linalg.norm(block_pos - plan.block_m) < PLAN_STILL_GOOD_M:
            pre, at = _Solved(plan.far_approach_q), _Solved(plan.far_q)  # the plan's own grasp still fits
        if at is None:
            return "no far grasp reaches the block"
        yield from self._move("far_pregrasp", {far: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.2)
        yield from self._move("far_descend", {far: (at.q, None)}, min_s=0.4, settle_s=0.05)
        yield from self._move("far_close", {far: (None, GRIPPER_CLOSED_RAD)}, min_s=0.3, settle_s=0.1)
        yield from self._jaws_still(far)
        if self._grip(far) <= GRIPPER_HOLDING_MIN_RAD:
            reason = f"far jaws shut on nothing ({self._grip(far):.2f} rad)"
            yield from self._move("far_regrasp", {far: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.3)
            return reason
        return True

