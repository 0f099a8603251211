"""The handover expert: a phase script over the two arms, with grasp checks that react.

``expert(percept)`` returns the 12 servo targets (rad, ``scene.JOINT_NAMES`` order) for the
latest percept; call ``reset()`` at each new episode. Each phase moves one or both arms from the
targets last sent to a goal found by IK on the scene's MJCF, along a minimum-jerk profile in
joint space (robogym_ros.expert.motion), timed by the percept's clock (sim time) alone, so the
same script runs in local mode and over ROS and a local rollout is the same whatever the load.
Checks after each grasp read the gripper angle and MuJoCo's contacts of the observed scene
(robogym_ros.expert.holding): a missed table grasp is retried from a fresh plan, a missed
handover grasp likewise, a block that slid in the jaws is placed from where it now is, one that
fell where only the far arm reaches is picked by the far arm, and anything that cannot go on
sets ``failure`` (phase and a reason that says what the physics shows) and holds. The moves and
waits the phases are written in: robogym_ros.expert.phases.
"""
from __future__ import annotations

import mujoco
import numpy as np

from robogym_ros.expert import grasps
from robogym_ros.expert.holding import GRIPPER_HOLDING_MIN_RAD, HoldChecks
from robogym_ros.expert.kinematics import ArmKinematics
from robogym_ros.expert.motion import Timeline
from robogym_ros.expert.paths import carry_path, turn_path
from robogym_ros.expert.percept import ExpertFailure, Percept
from robogym_ros.expert.phases import Arm, ArmPhases, Solved
from robogym_ros.expert.planner import HandoverPlanner
from robogym_ros.task import scene
from robogym_ros.task.scene import default_model_path

GRIPPER_OPEN_RAD = 0.9  # ~50 mm between the tips: room around a 25 mm block
GRIPPER_CLOSED_RAD = -0.17  # past shut: the servo squeezes at its force limit
GRIPPER_RELEASE_RAD = 0.55  # ~31 mm between the tips: a held 25 mm block is free
MAX_TABLE_TRIES = 3
MAX_HANDOVER_TRIES = 2
MAX_CARRIES = 2
PLAN_STILL_GOOD_M = 0.015  # the block this close to where the plan put it: the planned far grasp fits
REPLAN_MOVED_M = 0.004  # the block moved this far while the far arm came in: its grasp is planned again
RAISED_FOLD_Q = np.array([0.0, -1.0, 0.6, 1.3, 0.0])  # the fold with the elbow opened: gripper up
UNFOLDED_Q = np.array([0.0, -0.6, 0.9, -0.2, 0.0])  # upper arm back, gripper level above the base
LIFT_M = 0.07
PLACE_OFF_CENTRE_MAX_M = 0.02  # the block's centre at most this far off a pushed tray's centre
HOVER_M = 0.015  # the block this far above its place before the last look and the last lowering
OUT_OF_REACH = "no table grasp the arm reaches"
# The phases in which an arm touches, grips or carries the block, or a grasp of it by the other arm
# needs it still, by the arm's role: a perturbation of its targets there moves the block itself.
# Outside them the arm moves in free space (robogym_ros.export.rollouts perturbs only such arms).
NEAR_BUSY_PHASES = frozenset({
    "near_descend", "near_close", "near_regrasp", "near_lift", "to_handover", "slide_in", "far_pregrasp",
    "far_descend", "far_close", "far_regrasp", "near_release", "near_retract"})
FAR_BUSY_PHASES = frozenset({
    "slide_in", "far_descend", "far_close", "far_regrasp", "near_release", "near_retract", "far_lift", "to_tray",
    "far_lower", "far_release", "far_table_descend", "far_table_close", "far_table_regrasp"})


class HandoverExpert(ArmPhases):
    """Scripted handover: near arm picks, both meet, far arm takes, near lets go, far places.

    ``start_moves_next_percept``: each move starts at the percept after the one it was planned
    on (the ROS node sets it: the sim ran on while it planned); local mode starts moves at once.
    """

    def __init__(self, model_path: str | None = None, *, speed_scale: float = 1.0,
                 start_moves_next_percept: bool = False):
        model_path = model_path or default_model_path()
        self.model = mujoco.MjModel.from_xml_path(model_path)
        self.arms = {s: Arm(s, ArmKinematics(self.model, s)) for s in scene.SIDES}
        self.planner = HandoverPlanner(self.model, {s: a.kin for s, a in self.arms.items()})
        self.holds = HoldChecks(model_path)
        self.speed_scale = float(speed_scale)
        is_gripper = np.array([n.endswith("gripper") for n in scene.JOINT_NAMES])
        self._is_gripper = is_gripper
        self.timeline = Timeline(self.model.actuator_ctrlrange[:, 0], self.model.actuator_ctrlrange[:, 1], is_gripper,
                                 speed_scale=self.speed_scale, start_next_percept=start_moves_next_percept)
        self.reset()

    # --- public --------------------------------------------------------------------------
    def reset(self) -> None:
        self.phase = "start"
        self.failure: ExpertFailure | None = None
        self.events: list[str] = []  # retries and what caused them
        self._gen = None
        self._p: Percept | None = None
        self._busy = {side: frozenset() for side in scene.SIDES}  # each side's phases of contact, once known
        self.timeline.reset()
        self.planner.reset()  # an episode never depends on the ones before it

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def __call__(self, percept: Percept) -> np.ndarray:
        self._p = percept
        self.timeline.begin(percept.q, percept.time_s)
        if self._gen is None:
            self._gen = self._script()
        for goals in self.timeline.due(percept.time_s):  # background moves due now
            for _ in self._move("", goals, wait=False):
                pass
        try:
            next(self._gen)
        except StopIteration:
            pass
        return self.timeline.interpolate(percept.time_s)

    def free_joints(self) -> np.ndarray:
        """Which of the 12 joints move in free space in the current phase (bool): an arm's joints
        unless that arm touches, grips or carries the block, or holds it still for the other arm's
        grasp (``NEAR_BUSY_PHASES``, ``FAR_BUSY_PHASES``); the grippers never."""
        free = ~self._is_gripper
        for side, busy in self._busy.items():
            if self.phase in busy:
                free[self.arms[side].cols] = False
        return free

    def preview(self, times_s) -> np.ndarray:
        """The targets the expert will send at each of ``times_s`` (sim time, after the latest
        percept) unless it starts another move: (len, 12), rad. The ROS node sends them ahead as
        a trajectory, so the arms move on smoothly while it plans or its callbacks come late."""
        return self.timeline.preview(times_s)

    def _script(self):
        near = self.arms["left" if self._p.block_pose[1] > 0 else "right"]
        far = self.arms["right" if near.side == "left" else "left"]
        self._busy = {near.side: NEAR_BUSY_PHASES, far.side: FAR_BUSY_PHASES}
        self._start_tray = np.array(self._p.tray_pose, dtype=np.float64)  # the goal's tray
        # The far arm lifts its gripper out of the fold now: from the fold (gripper down in front
        # of the base), one joint-space move to a pose with the wrist turned the other way
        # sweeps the gripper through the table.
        # First the elbow opens (the gripper rises where it hangs), then the wrist turns up: turned
        # first, the gripper's tips sweep low in front of the base, where the tray can stand.
        yield from self._move("far_unfold", {far: (RAISED_FOLD_Q, None)}, min_s=0.25, wait=False)
        self.timeline.queued.append((self._p.time_s + 0.3, {far: (UNFOLDED_Q, None)}))
        plan = None
        for attempt in range(MAX_CARRIES):
            plan = yield from self._pick_and_carry(near, far)
            if not isinstance(plan, str) or plan == OUT_OF_REACH:
                break
            self.events.append(f"carry {attempt + 1}: {plan}")
            if attempt + 1 < MAX_CARRIES:
                yield from self._clear_for_another_pick(near, far)
        else:
            yield from self._fail("to_handover", f"{MAX_CARRIES} tries: {'; '.join(self.events[-MAX_CARRIES:])}")
        if plan == OUT_OF_REACH:  # dropped where only the far arm reaches: it picks the block itself
            self.events.append("the block lies out of the near arm's reach: the far arm picks it")
            yield from self._far_picks(near, far)
        else:
            yield from self._handover(near, far, plan)
        yield from self._place(near, far)

    def _handover(self, near: Arm, far: Arm, plan):
        """The far arm takes the held-out block; the near one lets go and backs out."""
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
        hold = self._hold(far)
        if not hold.held:
            yield from self._fail("near_retract", hold.reason("when the near one let go"))

    def _far_picks(self, near: Arm, far: Arm):
        """The far arm takes the block from the table (the near arm parked out of the way)."""
        park = np.array([scene.folded_pose()[f"{near.side}_{j}"] for j in scene.ARM_JOINTS[:5]])
        yield from self._move("near_park", {near: (park, 0.0)}, wait=False)
        for attempt in range(MAX_TABLE_TRIES):
            picked = yield from self._pick(far, "far_table")
            if isinstance(picked, grasps.InHand):
                return
            self.events.append(f"far table grasp {attempt + 1}: {picked}")
        yield from self._fail("far_table_grasp", f"{MAX_TABLE_TRIES} tries: {'; '.join(self.events[-3:])}")

    def _place(self, near: Arm, far: Arm):
        """The far arm holds the block: up, over the tray, down, let go, back out."""
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
        yield from self._move_path("to_tray", far, turn_path(far.kin, self._q5(far), place.pre_q), min_s=0.15)
        yield from self._wait_for(far, "to_tray")
        hold = self._hold(far)  # still between both jaws, wherever it slid to: it is placed from there
        if hold.state == "fell" and hold.contacts.tray:  # it fell into the tray: let go, back out, done
            self.events.append(hold.reason("on the way to the tray"))
            yield from self._move("far_release", {far: (None, GRIPPER_RELEASE_RAD)}, min_s=0.25, settle_s=0.1)
            self.phase = "done"
            while True:
                yield
        if not hold.held:
            yield from self._fail("to_tray", hold.reason("on the way to the tray"))
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

    def _clear_for_another_pick(self, near: Arm, far: Arm):
        """After a carry that failed: the near jaws open and rise, the far arm backs off, and the
        block gets to come to rest (on the table, where the next table grasp looks for it)."""
        pos, _ = self._site(near)
        up = near.kin.solve(pos + grasps.UP * LIFT_M, [], q0=self._q5(near))
        yield from self._move("near_regrasp", {near: (None, GRIPPER_OPEN_RAD)}, min_s=0.25)
        yield from self._move("near_regrasp", {near: (up.q if up.ok() else None, None),
                                               far: (UNFOLDED_Q, GRIPPER_OPEN_RAD)}, min_s=0.4, converge=False)
        yield from self._steady(None)

    def _pick_and_carry(self, near: Arm, far: Arm):
        """Pick the block from the table and hold it out at the handover: the plan, or why the
        block is not in the near jaws there (it did not come up, or fell on the way)."""
        picked = None
        for attempt in range(MAX_TABLE_TRIES):
            picked = yield from self._pick(near)
            if isinstance(picked, grasps.InHand):
                break
            if picked == OUT_OF_REACH:
                far_reaches = self._table_grasp(far) is not None
                if far_reaches:
                    return OUT_OF_REACH
                yield from self._fail("near_grasp", "no table grasp either arm reaches")
            self.events.append(f"table grasp {attempt + 1}: {picked}")
        else:
            yield from self._fail("near_grasp", f"{MAX_TABLE_TRIES} tries: {'; '.join(self.events)}")
        pos = self._site(near)[0]
        lift_q = near.kin.solve(pos + grasps.UP * LIFT_M, [(0, grasps.DOWN)], q0=self._q5(near)).q
        yield from self._move("near_lift", {near: (lift_q, None)}, min_s=0.4)
        hold = self._hold(near)
        if not hold.held or hold.contacts.table:
            yield from self._move("near_regrasp", {near: (None, GRIPPER_OPEN_RAD)}, min_s=0.25)
            return ("the block did not come up with the near gripper: " +
                    ("it still touches the table" if hold.held else hold.reason("as it lifted")))
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
        yield from self._move_path("to_handover", near, carry_path(near.kin, self._q5(near), plan), min_s=0.12)
        yield from self._wait_for(far, "far_ready")  # its jaws must be up before the block slides in
        yield from self._move("slide_in", {near: (plan.near_q, None)}, min_s=0.35, settle_s=0.1)
        hold = self._hold(near)
        if hold.state == "fell":  # pushed in the near jaws (not fallen), it is taken from where it is now
            return hold.reason("on the way to the handover")
        return plan

    def _place_pose(self) -> np.ndarray:
        """Where to lay the block: the goal (the tray as the episode began), unless the tray has
        been pushed since; then as near the goal as keeps the block well inside the walls."""
        tray = np.array(self._p.tray_pose, dtype=np.float64)
        shift = self._start_tray[:2] - tray[:2]
        norm = float(np.linalg.norm(shift))
        tray[:2] += shift * min(1.0, PLACE_OFF_CENTRE_MAX_M / norm) if norm > 0 else 0.0
        return tray

    def _table_grasp(self, arm: Arm):
        """(cost, pregrasp IK, grasp IK) of the cheapest table grasp ``arm`` reaches, or None."""
        block_pos, block_rot = self._block()
        best = None
        for g in grasps.table_grasps(block_pos, block_rot):
            pre = arm.kin.solve_best(g.pregrasp_m, [g.axes], self._seeds(arm, block_pos))
            if not pre.ok():
                continue
            at = arm.kin.solve(g.site_m, g.axes, q0=pre.q)
            if not at.ok():
                continue
            cost = float(np.max(np.abs(pre.q - self._q5(arm))))
            if best is None or cost < best[0]:
                best = (cost, pre, at)
        return best

    def _pick(self, near: Arm, phase: str = "near"):
        """One table grasp: returns the block's pose in the hand, or why it missed
        (OUT_OF_REACH: no table grasp this arm reaches)."""
        best = self._table_grasp(near)
        if best is None:
            return OUT_OF_REACH
        _, pre, at = best
        yield from self._move(f"{phase}_pregrasp", {near: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.6)
        yield from self._move(f"{phase}_descend", {near: (at.q, None)}, min_s=0.4, settle_s=0.05)
        yield from self._move(f"{phase}_close", {near: (None, GRIPPER_CLOSED_RAD)}, min_s=0.3, settle_s=0.1)
        yield from self._jaws_still(near)
        if self._grip(near) <= GRIPPER_HOLDING_MIN_RAD:
            reason = f"jaws shut on nothing ({self._grip(near):.2f} rad)"
            yield from self._move(f"{phase}_regrasp", {near: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.3)
            return reason
        pos, rot = self._site(near)
        return grasps.InHand.measure(pos, rot, *self._block())

    def _far_grasp(self, near: Arm, far: Arm, plan, prefer):
        """(pregrasp, grasp) IK for the far arm on the block where it is now, or (None, None)."""
        block_pos, block_rot = self._block()
        near_pos, near_rot = self._site(near)
        _, pre, at = self.planner.far_grasp(far.side, plan.case, block_pos, block_rot, near_rot, near_pos,
                                            q0=plan.far_q, near_q=self._q5(near), prefer=prefer)
        if at is None and np.linalg.norm(block_pos - plan.block_m) < PLAN_STILL_GOOD_M:
            pre, at = Solved(plan.far_approach_q), Solved(plan.far_q)  # the plan's own grasp still fits
        return pre, at

    def _far_take(self, near: Arm, far: Arm, plan):
        """The far arm closes on the held-out block, re-planned from where the block really is,
        once more after its pregrasp if the block has moved meanwhile."""
        start = self._block()[0]
        pre, at = self._far_grasp(near, far, plan, plan.grasp)
        if at is None:
            return "no far grasp reaches the block"
        yield from self._move("far_pregrasp", {far: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.2)
        yield from self._steady(near)
        if np.linalg.norm(self._block()[0] - start) > REPLAN_MOVED_M:
            again_pre, again_at = self._far_grasp(near, far, plan, plan.grasp)
            if again_at is not None:
                pre, at = again_pre, again_at
                yield from self._move("far_pregrasp", {far: (pre.q, None)}, min_s=0.2)
        yield from self._move("far_descend", {far: (at.q, None)}, min_s=0.4, settle_s=0.05)
        yield from self._move("far_close", {far: (None, GRIPPER_CLOSED_RAD)}, min_s=0.3, settle_s=0.1)
        yield from self._jaws_still(far)
        if self._grip(far) <= GRIPPER_HOLDING_MIN_RAD:
            reason = f"far jaws shut on nothing ({self._grip(far):.2f} rad)"
            yield from self._move("far_regrasp", {far: (pre.q, GRIPPER_OPEN_RAD)}, min_s=0.3)
            return reason
        return True
