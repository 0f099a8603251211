"""The camera clock: which ticks become frames. Its own period in sim time, independent of
decimation (changing decimation must leave every time in seconds intact).

Frames lie on a fixed grid, the multiples of the period: a frame is the first tick at or
after each grid point. The grid does not move when the period changes; the new clock's
first frame is at the first multiple of the new period after the last tick seen, so a
change never adds a frame off the grid (no burst).
"""
from __future__ import annotations


def frame_tick(grid_ns: int, control_dt_ns: int) -> int:
    """The tick that becomes the frame of grid point ``grid_ns``: the first at or after it."""
    return -(-grid_ns // control_dt_ns)


def next_frame_tick(tick_index: int, period_ns: int, control_dt_ns: int) -> int:
    """The tick of the first frame after the frame at ``tick_index`` (always > tick_index)."""
    return frame_tick((tick_index * control_dt_ns // period_ns + 1) * period_ns, control_dt_ns)


class CameraClock:
    """Which ticks become frames: the first tick at or after each multiple of the period."""

    def __init__(self, period_ns: int, after_ns: int = -1):
        """The first frame is due at the first multiple of the period after ``after_ns`` (the
        stamp of the last tick already seen; -1: none, so the first is due at 0)."""
        if period_ns <= 0:
            raise ValueError(f"camera period must be > 0 ns, got {period_ns}")
        self.period_ns = period_ns
        self._next_ns = (after_ns // period_ns + 1) * period_ns

    @property
    def next_ns(self) -> int:
        """The grid point of the next frame: due at the first tick at or after it."""
        return self._next_ns

    def due(self, stamp_ns: int) -> bool:
        if stamp_ns < self._next_ns:
            return False
        # Advance on the fixed grid, not from this stamp: a period that is not a multiple of
        # the control dt jitters by up to one tick but keeps its mean exactly.
        self._next_ns += ((stamp_ns - self._next_ns) // self.period_ns + 1) * self.period_ns
        return True
