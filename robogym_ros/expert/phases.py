"""An arm script's moves and waits: the machinery the handover's phases are written in.

A phase is a generator that yields once per percept (``expert(percept)`` advances it by one);
these helpers move arms on the expert's timeline (robogym_ros.expert.motion), wait on sim time
for moves to end and servos to catch up, and read the hold on the block
(robogym_ros.expert.holding). Everything is timed by the percepts' clock alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robogym_ros.expert import grasps
from robogym_ros.expert.holding import GRIPPER_HOLDING_MAX_RAD
from robogym_ros.expert.kinematics import ArmKinematics
from robogym_ros.expert.percept import ExpertFailure, Percept
from robogym_ros.task import scene

JAWS_STILL_RAD = 0.005  # the gripper moved less than this in 30 ms: it has stopped
JAWS_STILL_TIMEOUT_S = 0.6
BLOCK_STEADY_M = 0.001  # the block moved less than this between two percepts: it has stopped
STEADY_TIMEOUT_S = 0.6
CONVERGED_RAD = 0.02
CONVERGE_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class Solved:
    """Joints found already (the plan's own), where an IK result is expected."""
    q: np.ndarray


@dataclass(eq=False)  # hashed by identity: arms key the goals of a move
class Arm:
    """One arm of the scene: its side, its kinematics, its columns among the 12 targets."""
    side: str
    kin: ArmKinematics
    cols: slice = field(init=False)

    def __post_init__(self):
        start = scene.SIDES.index(self.side) * len(scene.ARM_JOINTS)
        self.cols = slice(start, start + len(scene.ARM_JOINTS))


class ArmPhases:
    """The helpers of a scripted expert; a subclass sets ``timeline``, ``holds``, ``speed_scale``
    and ``_is_gripper``, and advances ``_p`` (the latest percept)."""

    _p: Percept | None = None
    failure: ExpertFailure | None = None
    phase = "start"

    def _fail(self, phase: str, reason: str):
        self.failure = ExpertFailure(phase, reason)
        self.phase = "failed"
        while True:
            yield

    def _block(self):
        return np.array(self._p.block_pose[:3]), grasps.rotation_of_quat(self._p.block_pose[3:])

    def _q5(self, arm: Arm) -> np.ndarray:
        return np.array(self._p.q[arm.cols][:5])

    def _grip(self, arm: Arm) -> float:
        return float(self._p.q[arm.cols][5])

    def _site(self, arm: Arm):
        return arm.kin.fk(self._q5(arm))

    def _hold(self, arm: Arm):
        """The arm's hold on the block now, from the contacts of what the expert sees."""
        return self.holds.hold(self._p, arm.side)

    def _move(self, phase: str, goals: dict, min_s: float = 0.3, settle_s: float = 0.0, wait: bool = True,
              converge: bool = True):
        """Min-jerk from the targets last sent to ``goals`` {arm: (q5 or None, gripper or None)}.

        Each arm keeps its own timeline: with ``wait=False`` the move runs on while later
        phases move the other arm (the phase name is not changed then)."""
        cols, values = [], []
        for arm, (q5, grip) in goals.items():
            if q5 is not None:
                cols += range(arm.cols.start, arm.cols.start + 5)
                values += list(q5)
            if grip is not None:
                cols.append(arm.cols.stop - 1)
                values.append(grip)
        cols = np.array(cols, dtype=np.int64)
        duration = self.timeline.add(cols, values, self._p.time_s, min_s)
        if not wait:
            return
        self.phase = phase
        yield  # a deferred move starts at the next percept
        end = self.timeline.start_of(int(cols[0]), self._p.time_s) + duration + settle_s / self.speed_scale
        while self._p.time_s < end - 1e-9:
            yield
        # The servos lag a fast move: wait (bounded) until the arm joints are where they were sent.
        arm_cols = cols[~self._is_gripper[cols]] if converge else cols[:0]
        deadline = self._p.time_s + CONVERGE_TIMEOUT_S
        cmd = self.timeline.cmd
        while (arm_cols.size and self._p.time_s < deadline
               and np.max(np.abs(self._p.q[arm_cols] - cmd[arm_cols])) > CONVERGED_RAD):
            yield

    def _move_path(self, phase: str, arm: Arm, qs, min_s: float):
        """Through the waypoints ``qs`` (the arm's 5 joints each) without stopping at them: one
        chain of min-jerk pieces (robogym_ros.expert.motion), until its end."""
        cols = np.arange(arm.cols.start, arm.cols.start + 5)
        duration = self.timeline.add(cols, np.asarray(qs, dtype=np.float64), self._p.time_s, min_s)
        self.phase = phase
        yield  # a deferred move starts at the next percept
        end = self.timeline.start_of(int(cols[0]), self._p.time_s) + duration
        while self._p.time_s < end - 1e-9:
            yield

    def _wait_for(self, arm: Arm, phase: str):
        """Until ``arm``'s running moves have ended and its joints caught up (bounded)."""
        self.phase = phase
        end = self.timeline.end_of(range(arm.cols.start, arm.cols.stop), self._p.time_s)
        while end is not None and self._p.time_s < end - 1e-9:
            yield
        cols = np.arange(arm.cols.start, arm.cols.stop - 1)
        deadline = self._p.time_s + CONVERGE_TIMEOUT_S
        cmd = self.timeline.cmd
        while self._p.time_s < deadline and np.max(np.abs(self._p.q[cols] - cmd[cols])) > CONVERGED_RAD:
            yield

    def _seeds(self, arm: Arm, point):
        pan = arm.kin.pan_towards(point)
        return [self._q5(arm), [pan, 0.0, 0.6, 1.0, 0.0], [pan, -0.3, 1.2, 0.8, 1.5],
                [pan, 0.3, 0.3, 1.2, -1.5]]

    # --- the script ----------------------------------------------------------------------
    def _jaws_still(self, arm: Arm):
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

    def _steady(self, arm: Arm | None):
        """Until the block has stopped and ``arm`` (if any) has caught up with its targets
        (bounded): a far arm waiting in the way can hold the near hand back, which then sinks to
        its place once the far arm moves on; a block let go falls and comes to rest."""
        cols = np.arange(arm.cols.start, arm.cols.stop - 1) if arm is not None else np.arange(0)
        deadline = self._p.time_s + STEADY_TIMEOUT_S
        last = self._block()[0]
        while self._p.time_s < deadline:
            yield
            now = self._block()[0]
            caught_up = not cols.size or np.max(np.abs(self._p.q[cols] - self.timeline.cmd[cols])) <= CONVERGED_RAD
            if caught_up and np.linalg.norm(now - last) < BLOCK_STEADY_M:
                return
            last = now

