"""One FollowJointTrajectory goal watched tick by tick, as ros2_control's JointTrajectoryController
watches it (``update()``): error = desired - actual for the goal's joints, where desired is the
servo target the physics set for that tick (the trajectory sampled at the tick's stamp) and
actual the joint state of the same tick.

- while the trajectory runs (a tick stamped before its last point) and on the first tick:
  ``PATH_TOLERANCE_VIOLATED`` when a joint is further than its path tolerance;
- from the last point's time on: ``SUCCESSFUL`` once every joint is within its goal tolerance;
  ``GOAL_TOLERANCE_VIOLATED`` when it is not yet so more than ``goal_time_tolerance`` after the
  end (never, when that is 0: JTC waits);
- a tick of another episode (the sim was reset, or blew up and reset itself) ends the goal:
  the reset dropped the trajectory.

Pure numpy, no rclpy: robogym_ros.nodes.sim_node.arm_controllers.controllers feeds it ticks and turns an
:class:`Outcome` into the action's result.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robogym_ros.nodes.sim_node.arm_controllers.goal import (
    GOAL_TOLERANCE_VIOLATED,
    INVALID_GOAL,
    PATH_TOLERANCE_VIOLATED,
    SUCCESSFUL,
    JtcGoal,
)

SUCCEEDED, ABORTED, CANCELED = "succeeded", "aborted", "canceled"


@dataclass(frozen=True)
class Outcome:
    """How a goal ended: the goal status, the result's code and error_string, whether the
    controller then holds the joints where they are (JTC's set_hold_position), and, for a
    CANCELED one, whether a client asked for it (else the controller preempted it)."""
    status: str
    code: int
    message: str
    hold: bool = False
    cancel_requested: bool = False


class GoalMonitor:
    """Judges each tick of one goal; :meth:`update` returns an Outcome once the goal is over."""

    def __init__(self, goal: JtcGoal, take_up_ns: int, episode: int, units: tuple[str, ...]):
        """``take_up_ns``: start of the tick that took the trajectory up (the physics says);
        ``episode``: the episode it runs in; ``units`` per goal joint."""
        self.goal = goal
        self.names = goal.joint_names
        self.units = units
        self.take_up_ns = take_up_ns
        self.episode = episode
        self.start_ns = start_ns = goal.command.start_ns or take_up_ns  # header.stamp 0: when taken up
        self.points_ns = start_ns + np.asarray(goal.command.times_ns, dtype=np.int64)
        self.end_ns = int(self.points_ns[-1])
        self.sampled = False
        self.last_error: np.ndarray | None = None

    def owns(self, stamp_ns: int) -> bool:
        """The tick is one this goal ran in (its trajectory was taken up before it)."""
        return stamp_ns > self.take_up_ns

    def index(self, stamp_ns: int) -> int:
        """The point the trajectory is heading for at ``stamp_ns`` (the last one once past it)."""
        return min(int(np.searchsorted(self.points_ns, stamp_ns, side="left")), len(self.points_ns) - 1)

    def update(self, stamp_ns: int, episode: int, desired: np.ndarray, actual: np.ndarray,
               velocity: np.ndarray) -> Outcome | None:
        """A tick of the goal's joints (call only for ticks it :meth:`owns`)."""
        if episode != self.episode:
            return Outcome(ABORTED, INVALID_GOAL, f"the sim was reset at {stamp_ns * 1e-9:.3f} s sim time "
                                                  f"(episode {episode}): the trajectory was dropped")
        error = desired - actual
        self.last_error = error
        first, self.sampled = not self.sampled, True
        g = self.goal
        if stamp_ns < self.end_ns or first:
            bad = _first_over(error, g.path_position)
            if bad is not None:
                k = self.index(stamp_ns)
                where = f"between point {k - 1} and point {k}" if k else "on the way to point 0"
                return Outcome(ABORTED, PATH_TOLERANCE_VIOLATED,
                               f"path tolerance violated at {stamp_ns * 1e-9:.3f} s sim time, {where}: "
                               f"{self._off(bad, error, 'its desired position')} (path tolerance "
                               f"{g.path_position[bad]:g} {self.units[bad]})", hold=True)
        if stamp_ns < self.end_ns:
            return None
        late_s = (stamp_ns - self.end_ns) * 1e-9
        bad = _first_over(error, g.goal_position)
        what = f"{self._off(bad, error, 'the last point')} (goal tolerance {g.goal_position[bad]:g} " \
               f"{self.units[bad]})" if bad is not None else ""
        if bad is None:
            fast = _first_over(velocity, g.goal_velocity)
            if fast is not None:
                what = (f"'{self.names[fast]}' still moves at {velocity[fast]:+.4g} {self.units[fast]}/s "
                        f"(goal velocity tolerance {g.goal_velocity[fast]:g})")
        if not what:
            return Outcome(SUCCEEDED, SUCCESSFUL,
                           f"reached point {len(self.points_ns) - 1} at {stamp_ns * 1e-9:.3f} s sim time, "
                           f"{late_s:.3f} s after the trajectory's end (it started at {self.start_ns * 1e-9:.3f} s); "
                           f"final error: {self.final_error()}")
        if g.goal_time_ns and stamp_ns - self.end_ns > g.goal_time_ns:
            return Outcome(ABORTED, GOAL_TOLERANCE_VIOLATED,
                           f"goal tolerance violated {late_s:.3f} s after the trajectory's end (goal_time_tolerance "
                           f"{g.goal_time_ns * 1e-9:g} s): {what}", hold=True)
        return None

    def final_error(self) -> str:
        if self.last_error is None:
            return "(no tick yet)"
        return ", ".join(f"{n} {e:+.4f} {u}" for n, e, u in zip(self.names, self.last_error, self.units))

    def _off(self, i: int, error: np.ndarray, what: str) -> str:
        return f"'{self.names[i]}' is {abs(error[i]):.4g} {self.units[i]} from {what}"


def _first_over(values: np.ndarray, tolerance: np.ndarray) -> int | None:
    """Index of the first joint over its tolerance (0 = not enforced), or None."""
    over = np.flatnonzero((tolerance > 0) & (np.abs(values) > tolerance))
    return int(over[0]) if len(over) else None
