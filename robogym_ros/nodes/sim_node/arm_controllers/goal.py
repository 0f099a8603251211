"""A FollowJointTrajectory goal checked as ros2_control's JointTrajectoryController (JTC) checks
it, each fault with its result code and a reason naming the point and the joint.

- ``INVALID_JOINTS``: no joints, a repeated joint, a joint that is not the controller's, or a
  ``multi_dof_trajectory`` (the arms have single-DOF joints only);
- ``INVALID_GOAL``: what robogym_ros.sim.commands.validate_trajectory rejects for the topic (no
  points, wrong lengths, non-finite values, times not strictly increasing, positions outside the
  joint's range), effort given, a last point not at rest (JTC's
  ``allow_nonzero_velocity_at_trajectory_end: false``), and bad tolerances;
- ``OLD_HEADER_TIMESTAMP``: a non-zero ``header.stamp`` whose trajectory ends before the sim's
  time (stamp 0 = start now); a start more than an hour of sim time ahead (a wall-clock stamp:
  robogym_ros.nodes.sim_node.commands.clock_check) is ``INVALID_GOAL``: it would never run.

Tolerances as the action defines them: 0 = the controller's default, -1 = not enforced, > 0 =
enforced; the defaults are JTC's (``constraints`` all 0: nothing enforced, ``goal_time`` 0 =
wait for the goal tolerance without limit). Position tolerances are enforced; a goal velocity
tolerance bounds the joint's speed once the trajectory has ended (its last point is at rest);
path velocity and acceleration tolerances are accepted and not enforced, as in a JTC with a
position command interface. Accelerations are checked and not used: the trajectory is
followed with the topic's interpolation (robogym_ros.sim.trajectory_follower), cubic where
points carry velocities, where JTC would use a quintic.

No rclpy here: the goal is duck-typed (control_msgs/action/FollowJointTrajectory Goal).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from robogym_ros.nodes.sim_node.commands.clock_check import off_clock
from robogym_ros.sim.commands import CommandRejected, quoted, validate_trajectory
from robogym_ros.sim.trajectory_follower import TrajectoryCommand

# control_msgs/action/FollowJointTrajectory Result.error_code (test_follow_joint_trajectory
# checks them against the installed control_msgs).
SUCCESSFUL = 0
INVALID_GOAL = -1
INVALID_JOINTS = -2
OLD_HEADER_TIMESTAMP = -3
PATH_TOLERANCE_VIOLATED = -4
GOAL_TOLERANCE_VIOLATED = -5
CODE_NAMES = {SUCCESSFUL: "SUCCESSFUL", INVALID_GOAL: "INVALID_GOAL", INVALID_JOINTS: "INVALID_JOINTS",
              OLD_HEADER_TIMESTAMP: "OLD_HEADER_TIMESTAMP", PATH_TOLERANCE_VIOLATED: "PATH_TOLERANCE_VIOLATED",
              GOAL_TOLERANCE_VIOLATED: "GOAL_TOLERANCE_VIOLATED"}
ERASE = -1.0  # a tolerance of -1: not enforced, whatever the default


class GoalRejected(ValueError):
    """A goal that is not executed: ``code`` is its result code, the message its error_string."""

    def __init__(self, code: int, reason: str):
        super().__init__(str(CommandRejected(reason)))  # bounded in length, like every reason
        self.code = code


@dataclass(frozen=True)
class JtcGoal:
    """A goal that passed: the trajectory for the physics and the tolerances of its joints
    (0 = not enforced; same order as ``command.joint_names``)."""
    command: TrajectoryCommand
    path_position: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    goal_time_ns: int  # 0: wait for the goal tolerance without limit

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.command.joint_names


@dataclass(frozen=True)
class _Point:
    """A trajectory point as validate_trajectory takes it: accelerations checked and dropped."""
    positions: Sequence[float]
    velocities: Sequence[float]
    time_from_start: object
    accelerations: tuple = ()
    effort: tuple = ()


def _ns(sec: int, nanosec: int) -> int:
    return int(sec) * 1_000_000_000 + int(nanosec)


def validate_goal(goal, controller: str, joints: Sequence[str], ranges: Mapping[str, tuple[float, float]],
                  now_ns: int) -> JtcGoal:
    """The goal as a :class:`JtcGoal` for ``controller`` (owning ``joints``), or GoalRejected.

    ``now_ns``: the sim's time (the latest tick); a goal may name a subset of ``joints`` (the
    others hold), as JTC with ``allow_partial_joints_goal``.
    """
    trajectory = goal.trajectory
    names = list(trajectory.joint_names)
    _check_joints(names, controller, joints, goal.multi_dof_trajectory)
    points = []
    for k, p in enumerate(trajectory.points):
        _check_unused(k, p, names)
        points.append(_Point(p.positions, p.velocities, p.time_from_start))
    start_ns = _ns(trajectory.header.stamp.sec, trajectory.header.stamp.nanosec)
    if start_ns < 0:
        raise GoalRejected(OLD_HEADER_TIMESTAMP, f"header.stamp is negative ({start_ns * 1e-9:.9g} s); 0 = start now")
    try:
        command = validate_trajectory(names, points, start_ns, {n: ranges[n] for n in names})
    except CommandRejected as exc:
        raise GoalRejected(INVALID_GOAL, str(exc)) from None
    last = len(points) - 1
    if command.has_velocity(last):
        for name, v in zip(names, command.velocities[last]):
            if v != 0.0:
                raise GoalRejected(INVALID_GOAL, f"point {last}: velocity for {quoted(name)} is {v:.6g} at the last "
                                                 "point: a trajectory must end at rest")
    end_ns = start_ns + int(command.times_ns[-1])
    if start_ns > now_ns and (reason := off_clock(start_ns, now_ns, wall_ns=time.time_ns())) is not None:
        raise GoalRejected(INVALID_GOAL, reason + ": it would never run")  # a wall-clock stamp, say
    if start_ns > 0 and end_ns < now_ns:
        raise GoalRejected(OLD_HEADER_TIMESTAMP,
                           f"the trajectory ends at {end_ns * 1e-9:.9g} s (point {last}), before the sim's time "
                           f"{now_ns * 1e-9:.9g} s: header.stamp is in the past (0 = start now)")
    path_position, _, _ = _tolerances(goal.path_tolerance, "path_tolerance", names, controller, joints)
    goal_position, goal_velocity, _ = _tolerances(goal.goal_tolerance, "goal_tolerance", names, controller, joints)
    for field in ("component_path_tolerance", "component_goal_tolerance"):
        if len(getattr(goal, field, ())):
            raise GoalRejected(INVALID_GOAL, f"{field} is not supported: use path_tolerance and goal_tolerance")
    gt = goal.goal_time_tolerance
    goal_time_ns = _ns(gt.sec, gt.nanosec)
    if goal_time_ns < 0:
        raise GoalRejected(INVALID_GOAL, f"goal_time_tolerance is negative ({goal_time_ns * 1e-9:.9g} s)")
    return JtcGoal(replace(command, controller=controller), path_position, goal_position, goal_velocity,
                   goal_time_ns)


def _check_joints(names: list[str], controller: str, joints: Sequence[str], multi_dof) -> None:
    if not names:
        raise GoalRejected(INVALID_JOINTS, "the goal's trajectory names no joints")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise GoalRejected(INVALID_JOINTS, f"joint {quoted(name)} appears more than once")
        seen.add(name)
        if name not in joints:
            raise GoalRejected(INVALID_JOINTS, f"joint {quoted(name)} is not a joint of {controller} "
                                               f"(its joints: {', '.join(joints)})")
    if len(multi_dof.joint_names) or len(multi_dof.points):
        first = quoted(multi_dof.joint_names[0]) if len(multi_dof.joint_names) else "(unnamed)"
        raise GoalRejected(INVALID_JOINTS, f"multi_dof_trajectory names joint {first}: {controller} has "
                                           "single-DOF joints only; use trajectory")


def _check_unused(k: int, point, names: list[str]) -> None:
    """Accelerations: length 0 or one per joint, finite (then not used); effort: none."""
    if len(point.effort):
        raise GoalRejected(INVALID_GOAL, f"point {k}: effort is not supported (position servos): "
                                         f"got {len(point.effort)} efforts")
    acc = point.accelerations
    if len(acc) not in (0, len(names)):
        raise GoalRejected(INVALID_GOAL, f"point {k}: len(accelerations) = {len(acc)} but len(joint_names) = "
                                         f"{len(names)}: it must be 0 or {len(names)}")
    for name, a in zip(names, acc):
        if not math.isfinite(a):
            raise GoalRejected(INVALID_GOAL, f"point {k}: acceleration for {quoted(name)} is not finite ({a})")


def _tolerances(entries, field: str, names: list[str], controller: str, joints: Sequence[str]):
    """(position, velocity, acceleration) tolerance per goal joint; 0 = not enforced."""
    out = np.zeros((3, len(names)))
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        name = entry.name
        if name not in joints:
            raise GoalRejected(INVALID_GOAL, f"{field}[{i}] names {quoted(name)}, not a joint of {controller}")
        if name in seen:
            raise GoalRejected(INVALID_GOAL, f"{field}[{i}]: joint {quoted(name)} appears more than once")
        seen.add(name)
        if name not in names:
            continue  # a controller joint this (partial) goal does not move
        for row, kind in enumerate(("position", "velocity", "acceleration")):
            value = float(getattr(entry, kind))
            if not math.isfinite(value) or (value < 0 and value != ERASE):
                raise GoalRejected(INVALID_GOAL, f"{field}[{i}]: {kind} tolerance for {quoted(name)} is {value:.6g}: "
                                                 "it must be > 0, 0 (the default) or -1 (not enforced)")
            out[row, names.index(name)] = max(value, 0.0)  # -1 erases: not enforced
    return out[0], out[1], out[2]
