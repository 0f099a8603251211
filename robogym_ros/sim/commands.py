"""Validation of joint commands and joint trajectories: a message is accepted whole or
rejected whole, with a reason."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from robogym_ros.sim.trajectory_follower import TrajectoryCommand

MAX_NAME_CHARS = 64  # of a joint name quoted in a reason: a 5 MB name must not become a 5 MB log line
MAX_REASON_CHARS = 400


class CommandRejected(ValueError):
    """The reason says what was wrong; nothing was changed. Bounded in length, whatever came in."""

    def __init__(self, reason: str):
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[:MAX_REASON_CHARS - 15] + " ... (cut short)"
        super().__init__(reason)


def quoted(name: str) -> str:
    """A joint name as a reason quotes it: at most MAX_NAME_CHARS characters, never unbounded."""
    name = str(name)
    if len(name) > MAX_NAME_CHARS:
        return f"'{name[:MAX_NAME_CHARS]}...' ({len(name)} characters)"
    return f"'{name}'"


def validate_command(
    names: Sequence[str],
    positions: Sequence[float],
    velocities: Sequence[float],
    efforts: Sequence[float],
    ranges: Mapping[str, tuple[float, float]],
) -> dict[str, float]:
    """Targets from a JointState command, or CommandRejected naming the first fault found.

    ``ranges`` maps each commandable joint to its (lower, upper) target range.
    """
    if len(velocities) or len(efforts):
        raise CommandRejected(
            "velocity and effort commands are not supported: send positions only "
            f"(got {len(velocities)} velocities, {len(efforts)} efforts)")
    if len(positions) != len(names):
        raise CommandRejected(
            f"len(position) = {len(positions)} but len(name) = {len(names)}: they must match")
    _names_ok(names, ranges, "command")
    targets = {}
    for name, value in zip(names, positions):
        value = float(value)
        if not math.isfinite(value):
            raise CommandRejected(f"target for {quoted(name)} is not finite ({value})")
        lower, upper = ranges[name]
        if not lower <= value <= upper:
            raise CommandRejected(
                f"target for {quoted(name)} is {value:.6g}, outside its range "
                f"[{lower:.6g}, {upper:.6g}]")
        targets[name] = value
    return targets


def _names_ok(names: Sequence[str], ranges: Mapping[str, tuple[float, float]], what: str) -> None:
    if not names:
        raise CommandRejected(f"the {what} names no joints")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CommandRejected(f"joint {quoted(name)} appears more than once")
        seen.add(name)
        if name not in ranges:
            raise CommandRejected(f"unknown joint {quoted(name)}; known joints: {', '.join(ranges)}")


def _seconds(ns: int) -> str:
    return f"{ns * 1e-9:.9g} s"


def validate_trajectory(
    joint_names: Sequence[str],
    points: Sequence,
    start_ns: int,
    ranges: Mapping[str, tuple[float, float]],
    *,
    now_ns: int | None = None,
) -> TrajectoryCommand:
    """A JointTrajectory's content as a :class:`TrajectoryCommand`, or CommandRejected naming
    the first fault found (and its point): the whole message is rejected, nothing changes.

    ``points`` are duck-typed trajectory_msgs/JointTrajectoryPoint: ``positions``,
    ``velocities``, ``accelerations``, ``effort``, ``time_from_start.sec/.nanosec``.
    ``start_ns`` is header.stamp (0 = now); with ``now_ns`` (the sim's current time), a
    trajectory stamped to end before now is rejected, as the controller does.
    """
    _names_ok(joint_names, ranges, "trajectory")
    n = len(joint_names)
    if start_ns < 0:
        raise CommandRejected(f"header.stamp is negative ({_seconds(start_ns)}); 0 = start now")
    if not len(points):
        raise CommandRejected("the trajectory has no points")
    times = np.empty(len(points), dtype=np.int64)
    positions = np.empty((len(points), n))
    velocities = np.full((len(points), n), np.nan)
    for k, point in enumerate(points):
        times[k] = _point_time(k, point, times[k - 1] if k else None)
        positions[k] = _point_values(k, point.positions, joint_names, "positions", required=True)
        if len(point.velocities):
            velocities[k] = _point_values(k, point.velocities, joint_names, "velocities", required=False)
        if len(point.accelerations) or len(point.effort):
            raise CommandRejected(
                f"point {k}: accelerations and effort are not supported: send positions (and velocities) "
                f"(got {len(point.accelerations)} accelerations, {len(point.effort)} efforts)")
        for name, value in zip(joint_names, positions[k]):
            lower, upper = ranges[name]
            if not lower <= value <= upper:
                raise CommandRejected(
                    f"point {k}: position for {quoted(name)} is {value:.6g}, outside its range "
                    f"[{lower:.6g}, {upper:.6g}]")
    if now_ns is not None and start_ns > 0 and start_ns + int(times[-1]) < now_ns:
        raise CommandRejected(
            f"the trajectory ends at {_seconds(start_ns + int(times[-1]))}, before the sim's time "
            f"{_seconds(now_ns)}: header.stamp is in the past (0 = start now)")
    lower, upper = (np.array([ranges[name][i] for name in joint_names]) for i in (0, 1))
    return TrajectoryCommand(tuple(joint_names), int(start_ns), times, positions, velocities, lower, upper)


def _point_time(k: int, point, previous_ns: int | None) -> int:
    t = point.time_from_start
    t_ns = int(t.sec) * 1_000_000_000 + int(t.nanosec)
    if t_ns < 0:
        raise CommandRejected(f"point {k}: time_from_start {_seconds(t_ns)} is negative")
    if previous_ns is not None and t_ns <= previous_ns:
        raise CommandRejected(
            f"point {k}: time_from_start {_seconds(t_ns)} is not after point {k - 1}'s "
            f"{_seconds(previous_ns)}: times must strictly increase")
    return t_ns


def _point_values(k: int, values: Sequence[float], names: Sequence[str], field: str, *,
                  required: bool) -> np.ndarray:
    if len(values) != len(names):
        allowed = f"{len(names)}" if required else f"0 or {len(names)}"
        raise CommandRejected(
            f"point {k}: len({field}) = {len(values)} but len(joint_names) = {len(names)}: "
            f"it must be {allowed}")
    arr = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        i = int(bad[0])
        singular = {"positions": "position", "velocities": "velocity"}[field]
        raise CommandRejected(f"point {k}: {singular} for {quoted(names[i])} is not finite ({arr[i]})")
    return arr
