"""The expert's moves: per-joint minimum-jerk segments on the percept's clock (sim time).

A move takes some joints from the targets last sent to goals in a duration set by the farthest
joint's pace (and a minimum); each joint keeps its own segment, so one arm's move runs on while
another phase moves the other arm. Everything here is a function of the percepts' times: no
wall clock, so a local rollout is the same whatever the machine's load.

``start_next_percept`` (the ROS node sets it): a move planned during one percept starts at the
next. Over ROS the sim runs on while the expert plans; started at the percept it was planned on,
a move would already be some way along when its first command goes out and its joints would
jump. Deferring every move by one percept is decided by a flag, never by how long the planning
took (which would make the result depend on the machine's load).
"""
from __future__ import annotations

import numpy as np

JOINT_SPEED_RAD_S = 3.0  # the farthest-moving joint's mean pace; moves last at least their minimum
GRIPPER_SPEED_RAD_S = 6.0


def min_jerk(s: float) -> float:
    """The minimum-jerk profile 0 .. 1 over s in 0 .. 1 (zero velocity and acceleration at both ends)."""
    return s * s * s * (10 - 15 * s + 6 * s * s)


class Timeline:
    """The targets being sent and the running moves of each joint.

    A joint's move is a chain of minimum-jerk pieces, each starting where the one before ends
    (a path through waypoints moves on without stopping at them): ``segments[column]`` =
    (t0_s or None: starts at the next percept, ((start, goal, offset_s, duration_s), ...)).
    """

    def __init__(self, lower, upper, is_gripper, *, speed_scale: float = 1.0, start_next_percept: bool = False):
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.is_gripper = np.asarray(is_gripper, dtype=bool)
        self.speed_scale = float(speed_scale)
        self.start_next_percept = bool(start_next_percept)
        self.cmd: np.ndarray | None = None
        self.segments: dict[int, tuple] = {}
        self.queued: list[tuple] = []  # (sim time s, goals) of background moves that start later

    def reset(self) -> None:
        self.cmd = None
        self.segments = {}
        self.queued = []

    def begin(self, q, time_s: float) -> None:
        """A new percept: the first one sets the targets to where the joints are; deferred
        moves start now."""
        if self.cmd is None:
            self.cmd = np.array(q, dtype=np.float64)
        for c, (t0, pieces) in self.segments.items():
            if t0 is None:
                self.segments[c] = (time_s, pieces)

    def due(self, time_s: float) -> list[dict]:
        """The queued background moves due at ``time_s`` (removed from the queue), in order."""
        ready = [item for item in self.queued if time_s >= item[0]]
        for item in ready:
            self.queued.remove(item)
        return [goals for _, goals in ready]

    def add(self, cols, goals, time_s: float, min_s: float) -> float:
        """A move of the columns ``cols`` from the targets last sent through each row of
        ``goals`` in turn (one row: one piece; clipped to the servo ranges), starting now (or at
        the next percept); each piece lasts as the farthest joint's pace asks, at least
        ``min_s``. Returns the whole move's duration (s)."""
        cols = np.asarray(cols, dtype=np.int64)
        rows = np.atleast_2d(np.asarray(goals, dtype=np.float64))
        speed = np.where(self.is_gripper[cols], GRIPPER_SPEED_RAD_S, JOINT_SPEED_RAD_S)
        start = self.cmd[cols]
        offset, pieces = 0.0, []
        for row in rows:
            goal = np.clip(row, self.lower[cols], self.upper[cols])
            duration = max(min_s, float(np.max(np.abs(goal - start) / speed))) / self.speed_scale
            pieces.append((start, goal, offset, duration))
            start, offset = goal, offset + duration
        t0 = None if self.start_next_percept else time_s
        for i, c in enumerate(cols):
            self.segments[int(c)] = (t0, tuple((a[i], b[i], o, d) for a, b, o, d in pieces))
        return offset

    def start_of(self, col: int, now_s: float) -> float:
        """When column ``col``'s move starts (``now_s`` for one that starts at the next percept)."""
        t0 = self.segments[int(col)][0]
        return now_s if t0 is None else t0

    def end_of(self, cols, now_s: float) -> float | None:
        """When the last running move of ``cols`` ends (None: no move)."""
        ends = [self.start_of(c, now_s) + self.segments[c][1][-1][2] + self.segments[c][1][-1][3]
                for c in cols if c in self.segments]
        return max(ends) if ends else None

    @staticmethod
    def _at(pieces, since_s):
        """A chain's target ``since_s`` after its start (numpy arrays or a float alike)."""
        out = None
        for a, b, offset, duration in pieces:
            s = np.clip((since_s - offset) / duration, 0.0, 1.0) if duration > 0 else np.ones_like(since_s)
            value = a + (b - a) * min_jerk(s)
            out = value if out is None else np.where(since_s >= offset, value, out)
        return out

    def preview(self, times_s) -> np.ndarray:
        """The targets at each of ``times_s`` (after the current percept) if no move is added
        meanwhile, (len(times_s), joints): a new array, nothing changes. Moves that start at the
        next percept are held where they start."""
        times = np.asarray(times_s, dtype=np.float64)
        out = np.repeat(self.cmd[None], len(times), axis=0)
        for c, (t0, pieces) in self.segments.items():
            out[:, c] = pieces[0][0] if t0 is None else self._at(pieces, times - t0)
        return out

    def interpolate(self, time_s: float) -> np.ndarray:
        """The targets at ``time_s``: a new array."""
        for c, (t0, pieces) in self.segments.items():
            if t0 is None:
                continue  # starts at the next percept
            since = time_s - t0
            for a, b, offset, duration in reversed(pieces):  # the piece running now: the last begun
                if since >= offset or offset == 0.0:
                    s = min(1.0, max(0.0, (since - offset) / duration)) if duration > 0 else 1.0
                    self.cmd[c] = a + (b - a) * min_jerk(s)
                    break
        return self.cmd.copy()
