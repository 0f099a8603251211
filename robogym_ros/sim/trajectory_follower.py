"""Following a joint trajectory on the control tick: a validated trajectory in, targets out.

The semantics are those of ros2_control's JointTrajectoryController topic interface:

- the trajectory starts at ``start_ns`` (sim time; 0 = now, the first control tick after the
  physics process takes it), and its points are at ``start + time_from_start``;
- from the start to the first point, the joints move from the targets they held when the
  trajectory was taken up (velocity 0) to the first point; before the start they hold;
- between points: **linear** interpolation, or **cubic Hermite** where both points of a
  segment carry velocities (positions and velocities both met at each end); after the last
  point, the last positions are held;
- like the controller, a tick's target is the trajectory sampled at the *end* of that tick
  (its start + control dt): the target a joint should have reached when the tick's state is
  published, so the state stamped ``start + time_from_start`` was commanded to that point;
- targets are clipped to each joint's range (a cubic may overshoot between points).

Pure: numpy only, no MuJoCo; the physics (robogym_ros.sim.physics) applies what this returns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrajectoryCommand:
    """A trajectory that passed validation (robogym_ros.sim.commands.validate_trajectory).

    ``velocities`` has a row per point, NaN for a point that carries none.
    """
    joint_names: tuple[str, ...]
    start_ns: int  # sim time of time_from_start = 0; 0 = when the physics takes it up
    times_ns: np.ndarray  # (n_points,) int64, time_from_start, strictly increasing, >= 0
    positions: np.ndarray  # (n_points, n_joints)
    velocities: np.ndarray  # (n_points, n_joints); NaN rows: no velocity at that point
    lower: np.ndarray  # (n_joints,) each joint's target range
    upper: np.ndarray
    # Who sent it: "" = the joint_trajectory topic, else an arm controller's name. A newer
    # trajectory replaces the one of the same controller and takes its joints from the others.
    controller: str = ""

    def has_velocity(self, point: int) -> bool:
        return not np.isnan(self.velocities[point]).any()


class TrajectoryFollower:
    """One running trajectory: targets at any sim time, for the joints it still drives.

    A later position command for some joints ends the trajectory for those joints only
    (:meth:`release`); the others follow it on.
    """

    def __init__(self, command: TrajectoryCommand, taken_ns: int, held: np.ndarray):
        """``taken_ns``: sim time of the tick that takes it up; ``held``: the targets of its
        joints at that moment (same order as ``command.joint_names``)."""
        self.command = command
        self.joint_names = command.joint_names
        self.active = np.ones(len(command.joint_names), dtype=bool)
        start = command.start_ns if command.start_ns > 0 else taken_ns
        times = start + np.asarray(command.times_ns, dtype=np.int64)
        positions = np.asarray(command.positions, dtype=np.float64)
        velocities = np.asarray(command.velocities, dtype=np.float64)
        # The segment into the first point starts where the joints are held, at the later of
        # the start and the take-up (a start in the past is joined where it now is).
        anchor_ns = max(start, taken_ns)
        if times[0] > anchor_ns:
            zero = np.zeros((1, positions.shape[1]))
            v0 = zero if command.has_velocity(0) else np.full_like(zero, np.nan)
            times = np.concatenate([[anchor_ns], times])
            positions = np.concatenate([np.asarray(held, dtype=np.float64)[None], positions])
            velocities = np.concatenate([v0, velocities])
        self.hold_until_ns = anchor_ns
        self.held = np.asarray(held, dtype=np.float64).copy()
        self._times = times
        self._positions = positions
        self._velocities = velocities
        self.end_ns = int(times[-1])

    def release(self, names) -> None:
        """Stop driving these joints (a newer command owns them from now on)."""
        drop = set(names)
        self.active &= np.array([n not in drop for n in self.joint_names])

    @property
    def done_driving(self) -> bool:
        return not self.active.any()

    def finished(self, t_ns: int) -> bool:
        """True once ``t_ns`` is past the last point: the last targets then simply hold."""
        return t_ns >= self.end_ns

    def sample(self, t_ns: int) -> np.ndarray:
        """Targets of all its joints at sim time ``t_ns`` (clipped to the joints' ranges)."""
        times, q, v = self._times, self._positions, self._velocities
        if t_ns < self.hold_until_ns or t_ns < times[0]:
            out = self.held
        elif t_ns >= times[-1]:
            out = q[-1]
        else:
            k = int(np.searchsorted(times, t_ns, side="right")) - 1
            out = _interpolate(times[k], q[k], v[k], times[k + 1], q[k + 1], v[k + 1], t_ns)
        return np.clip(out, self.command.lower, self.command.upper)


class FollowerSet:
    """The running trajectories, one per controller (TrajectoryCommand.controller), so that two
    arms follow two trajectories at once. Each joint has one owner: the newest command naming it.
    """

    def __init__(self):
        self._running: dict[str, tuple[TrajectoryFollower, np.ndarray]] = {}

    def __bool__(self) -> bool:
        """Whether any trajectory is running."""
        return bool(self._running)

    def clear(self) -> None:
        self._running.clear()

    def take(self, command: TrajectoryCommand, actuators: np.ndarray, taken_ns: int, held: np.ndarray) -> None:
        """Start ``command`` (its joints drive ``actuators``), replacing its controller's trajectory."""
        self.release(command.joint_names)
        self._running[command.controller] = (TrajectoryFollower(command, taken_ns, held), actuators)

    def release(self, names) -> None:
        """A newer command owns these joints: every running trajectory lets go of them."""
        names = tuple(names)
        for follower, _ in self._running.values():
            follower.release(names)

    def targets(self, t_ns: int):
        """(actuators, targets) of each running trajectory at ``t_ns``, its released joints left
        out; a trajectory past its last point (its last targets hold) or with no joints left ends."""
        for controller, (f, actuators) in list(self._running.items()):
            values = f.sample(t_ns)
            yield actuators[f.active], values[f.active]
            if f.finished(t_ns) or f.done_driving:
                del self._running[controller]


def _interpolate(t0: int, q0: np.ndarray, v0: np.ndarray, t1: int, q1: np.ndarray, v1: np.ndarray,
                 t: int) -> np.ndarray:
    """Linear, or cubic Hermite where both ends carry velocities."""
    h = (t1 - t0) * 1e-9
    s = (t - t0) / (t1 - t0)
    if np.isnan(v0).any() or np.isnan(v1).any():
        return q0 + s * (q1 - q0)
    s2, s3 = s * s, s * s * s
    return ((2 * s3 - 3 * s2 + 1) * q0 + (s3 - 2 * s2 + s) * h * v0
            + (-2 * s3 + 3 * s2) * q1 + (s3 - s2) * h * v1)
