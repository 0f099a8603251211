"""Command stamps against sim time: a stamp far from the sim's clock is a clock mix-up.

The sim's interfaces run on sim time (/clock), which starts at 0 when the sim starts. A node
without ``use_sim_time`` (or ``ros2 topic pub ... "{header: auto}"``) stamps with the wall clock,
~1.7e9 s: decades ahead of any sim time. A trajectory stamped so starts decades from now and
never runs, silently; so a trajectory whose start is more than MAX_OFF_S ahead of sim time is
refused (counted, logged, in diagnostics' last_rejection). A joint command's stamp schedules
nothing (targets apply at the next tick), so such a command still applies, with a warning
(throttled) and a count: the sender's clock is wrong for everything else it stamps.

MAX_OFF_S = 1 hour of sim time. A wall-clock stamp is off by decades, a stamp of another
sim's run by as long as that run: any bound between minutes and years tells them apart. One
hour leaves room for a trajectory deliberately scheduled ahead (JointTrajectoryController
semantics allow a future start; minutes is what one plausibly plans) and for senders whose
sim time lags by latency, at any real_time_factor (at 100, an hour of sim time is 36 s of wall).
Stamp 0 means "now" and is never checked.
"""
from __future__ import annotations

import time
from typing import Callable

MAX_OFF_S = 3600.0
WALL_CLOCK_WITHIN_S = 86400.0  # a stamp this close to the wall clock is named as a wall-clock stamp
NOW_CACHE_S = 0.5  # commands may come at kHz: sim time is read from the physics process at most this often
WARN_EVERY_S = 10.0


def _s(ns: int) -> str:
    return f"{ns * 1e-9:.3f} s"


def _span(ns: int) -> str:
    days = ns / 86400e9
    return _s(ns) + (f" (~{days / 365.25:.1f} years)" if days > 365.25 else f" (~{days:.1f} days)" if days > 1 else "")


def off_clock(stamp_ns: int, now_ns: int, *, wall_ns: int | None = None,
              max_off_s: float = MAX_OFF_S) -> str | None:
    """Why ``stamp_ns`` cannot be sim time ``now_ns`` (both times in the text), or None if it can.

    ``wall_ns`` (time.time_ns()): when the stamp is within a day of it, the text says it is a
    wall-clock stamp.
    """
    if stamp_ns == 0:
        return None
    off_ns = stamp_ns - now_ns
    if abs(off_ns) <= max_off_s * 1e9:
        return None
    text = (f"header.stamp {_s(stamp_ns)} is {_span(abs(off_ns))} {'ahead of' if off_ns > 0 else 'behind'} "
            f"the sim's time {_s(now_ns)} (more than {max_off_s:g} s)")
    if wall_ns is not None and abs(stamp_ns - wall_ns) <= WALL_CLOCK_WITHIN_S * 1e9:
        text += (f"; it is the wall clock ({_s(wall_ns)}): `header: auto` or a node without "
                 f"use_sim_time")
    return text + "; stamp with sim time (/clock), or 0 for now"


class SimClockCheck:
    """Stamps of incoming trajectories and commands against the sim's time."""

    def __init__(self, node, now_ns: Callable[[], int | None], counts, *, max_off_s: float = MAX_OFF_S):
        """``now_ns``: the sim time of the latest tick (None: unknown, nothing is checked);
        ``counts``: a CommandCounts, whose stamp warnings diagnostics show."""
        self.node, self._now_ns, self.counts, self.max_off_s = node, now_ns, counts, max_off_s
        self._cached: tuple[float, int | None] | None = None
        self._warned_at = -float("inf")

    def trajectory_refusal(self, stamp_ns: int, now_ns: int | None) -> str | None:
        """Why a trajectory stamped ``stamp_ns`` is refused: its start is too far ahead of sim time.
        A start in the past is judged by the trajectory's end (robogym_ros.sim.commands)."""
        if now_ns is None or stamp_ns <= now_ns:
            return None
        return off_clock(stamp_ns, now_ns, wall_ns=time.time_ns(), max_off_s=self.max_off_s)

    def warn_command(self, stamp_ns: int) -> None:
        """Count and log (at most every WARN_EVERY_S) a command stamped far from sim time."""
        if stamp_ns == 0:
            return
        now_ns = self._cached_now_ns()
        reason = None if now_ns is None else off_clock(stamp_ns, now_ns, wall_ns=time.time_ns(),
                                                       max_off_s=self.max_off_s)
        if reason is None:
            return
        self.counts.stamps_off_clock += 1
        self.counts.last_stamp_warning = "joint_commands: " + reason
        if time.monotonic() - self._warned_at >= WARN_EVERY_S:
            self._warned_at = time.monotonic()
            self.node.get_logger().warning(
                f"joint command applied, but {reason} ({self.counts.stamps_off_clock} such so far; "
                f"next warning in {WARN_EVERY_S:g} s at the earliest)")

    def _cached_now_ns(self) -> int | None:
        wall = time.monotonic()
        if self._cached is None or wall - self._cached[0] > NOW_CACHE_S:
            self._cached = (wall, self._now_ns())
        return self._cached[1]
