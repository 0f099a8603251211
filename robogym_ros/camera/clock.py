"""The camera clock: which ticks become frames. Its own period in sim time, independent of
decimation (changing decimation must leave every time in seconds intact)."""
from __future__ import annotations


class CameraClock:
    """Which ticks become frames: the first tick at or after each multiple of the period."""

    def __init__(self, period_ns: int):
        if period_ns <= 0:
            raise ValueError(f"camera period must be > 0 ns, got {period_ns}")
        self.period_ns = period_ns
        self._next_ns = 0

    def due(self, stamp_ns: int) -> bool:
        if stamp_ns < self._next_ns:
            return False
        # Advance on the fixed grid, not from this stamp: a period that is not a multiple of
        # the control dt jitters by up to one tick but keeps its mean exactly.
        self._next_ns += ((stamp_ns - self._next_ns) // self.period_ns + 1) * self.period_ns
        return True
