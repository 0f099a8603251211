"""A recording cut into episodes of camera frames, each with the state and action of its own tick.

Pure numpy: the alignment a LeRobot export (robogym_ros.export) needs, testable without it.

- **Episodes** start at each reset (or blow-up). A reset is a tick of its own: the sim publishes
  the new scene under the next stamp, then the run state, stamped with that reset tick (the last
  tick published before the state message, ``RunState.stamp_ns``). So a reset stamped ``r``
  starts the new episode with tick ``r``, and the old one ends at ``r - control_dt``.
- **State** of a frame: the joint positions of the tick whose stamp equals the frame's stamp
  (a stamp names its tick exactly). Never the nearest: a frame whose tick is missing is an
  :class:`AlignmentError` naming the stamp.
- **Action** of a frame: the targets the sim applied on the next control tick, i.e. the
  targets stamped ``frame + control_dt`` (a target message stamped ``s`` holds what the
  servos were driven to during the tick that ended at ``s``; what an agent sends after
  seeing a frame can act from the next tick on). The last frame of an episode, whose next
  tick is another episode's (a reset) or was not recorded at all, has no action and is left
  out; which episode a tick belongs to is told by the resets, so a frame whose next tick's
  targets are recorded keeps its action even where the joint stream ended a tick earlier.
- **Frames** of an episode must be evenly spaced at the camera period (LeRobot's timeline is
  ``frame_index / fps``): a missing frame (skipped by the sim or lost) is an AlignmentError. The
  sim's very first frame (on its first tick, off the period's grid) is left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


class AlignmentError(ValueError):
    """Frames that cannot be given the state or action of their own tick; the message says which."""


@dataclass(frozen=True)
class Episode:
    """One episode's frames: stamps, and per frame the state and action of its tick."""

    index: int  # episode number within the recording (0 = the first one seen)
    frame_stamps_ns: np.ndarray  # (n,) int64, evenly spaced by the camera period
    state: np.ndarray  # (n, n_joints) float64: joint positions at the frame's tick
    action: np.ndarray  # (n, n_joints) float64: targets applied on the tick after the frame
    first_tick_ns: int  # the episode's first tick (its reset tick, or the recording's first)
    last_tick_ns: int  # its last tick in the recording
    complete_start: bool  # True when the episode's start (a reset, or the sim's first tick) is recorded

    def __len__(self) -> int:
        return len(self.frame_stamps_ns)


def _rows(stamps_ns: np.ndarray, wanted_ns: np.ndarray) -> np.ndarray:
    """Row of each wanted stamp in ``stamps_ns`` (sorted, unique); -1 where absent. Exact match only."""
    if len(stamps_ns) == 0:
        return np.full(len(wanted_ns), -1, np.int64)
    idx = np.minimum(np.searchsorted(stamps_ns, wanted_ns), len(stamps_ns) - 1)
    return np.where(stamps_ns[idx] == wanted_ns, idx, -1)


def _series(name: str, stamps_ns, values) -> tuple[np.ndarray, np.ndarray]:
    stamps = np.asarray(stamps_ns, dtype=np.int64).ravel()
    vals = np.asarray(values, dtype=np.float64)
    if vals.ndim != 2 or len(vals) != len(stamps):
        raise ValueError(f"{name}: {len(stamps)} stamps but values of shape {vals.shape}; want (n_stamps, n_joints)")
    order = np.argsort(stamps, kind="stable")
    stamps, vals = stamps[order], vals[order]
    dup = stamps[1:] == stamps[:-1]
    if dup.any():
        # Duplicates of one tick must agree, or which one is "the" value of that tick is a guess.
        same = np.all((vals[1:] == vals[:-1]) | (np.isnan(vals[1:]) & np.isnan(vals[:-1])), axis=1)
        if not same[dup].all():
            bad = stamps[1:][dup & ~same][0]
            raise AlignmentError(f"{name}: two messages stamped {int(bad)} ns disagree")
        keep = np.concatenate([[True], ~dup])
        stamps, vals = stamps[keep], vals[keep]
    return stamps, vals


def episode_starts(tick_stamps_ns: np.ndarray, reset_stamps_ns: Sequence[int]) -> np.ndarray:
    """Episode number of each tick: a reset stamped ``r`` (its own tick, the new scene) starts a
    new episode with tick ``r``."""
    resets = np.unique(np.asarray(list(reset_stamps_ns), dtype=np.int64))
    return np.searchsorted(resets, np.asarray(tick_stamps_ns, np.int64), side="right")


def align_episodes(tick_stamps_ns, positions, target_stamps_ns, targets, frame_stamps_ns, *,
                   reset_stamps_ns: Sequence[int], control_dt_ns: int, frame_period_ns: int,
                   first_sim_tick_ns: int | None = None, min_frames: int = 2,
                   gaps: list[str] | None = None) -> list[Episode]:
    """Cut a recording into episodes of frames with exact state and action (see the module doc).

    ``tick_stamps_ns``/``positions``: the joint stream (one row per tick). ``target_stamps_ns``/
    ``targets``: the targets the sim applied, one row per tick. ``frame_stamps_ns``: the stamps at
    which every exported camera has an image. ``first_sim_tick_ns``: the sim's first tick, if the
    recording holds it (then the first episode's start is known). Episodes with fewer than
    ``min_frames`` frames (a reset right at the end of a recording) are left out. ``gaps``: a list
    to leave episodes with a missing frame out and append why to it; None makes a gap an error.
    """
    dt = int(control_dt_ns)
    period = int(frame_period_ns)
    if dt <= 0 or period <= 0:
        raise ValueError(f"control_dt_ns ({control_dt_ns}) and frame_period_ns ({frame_period_ns}) must be > 0 ns")
    if period % dt:
        raise AlignmentError(f"the camera period {period} ns is not a whole number of control ticks ({dt} ns): "
                             f"frames would not be evenly spaced")
    ticks, q = _series("joint positions", tick_stamps_ns, positions)
    tstamps, tq = _series("targets", target_stamps_ns, targets)
    if q.shape[1] != tq.shape[1]:
        raise ValueError(f"positions have {q.shape[1]} joints, targets {tq.shape[1]}")
    if len(ticks) == 0:
        raise AlignmentError("no joint positions: nothing to align")
    frames = np.unique(np.asarray(frame_stamps_ns, dtype=np.int64).ravel())
    # Off the period's grid is only the sim's first frame (its camera clock puts grid point 0 on
    # the first tick, stamped one control dt): it would break the even spacing, so it is left out.
    frames = frames[(frames >= ticks[0]) & (frames <= ticks[-1]) & (frames % period == 0)]
    resets = np.unique(np.asarray(list(reset_stamps_ns), dtype=np.int64))
    tick_episode = episode_starts(ticks, resets)
    frame_episode = episode_starts(frames, resets)
    state_rows = _rows(ticks, frames)
    if (state_rows < 0).any():
        missing = frames[state_rows < 0]
        raise AlignmentError(f"{len(missing)} camera frames have no joint state at their own stamp (first "
                             f"{int(missing[0])} ns): a frame takes the state of its tick, never the nearest")
    next_rows = _rows(ticks, frames + dt)
    action_rows = _rows(tstamps, frames + dt)
    recorded_next = (next_rows >= 0) | (action_rows >= 0)
    has_next = recorded_next & (episode_starts(frames + dt, resets) == frame_episode)
    lacking = has_next & (action_rows < 0)
    if lacking.any():
        raise AlignmentError(f"{int(lacking.sum())} frames have no targets on the tick after them (first frame "
                             f"{int(frames[lacking][0])} ns, targets wanted at {int(frames[lacking][0] + dt)} ns)")
    episodes = []
    for e in np.unique(tick_episode):
        sel = (frame_episode == e) & has_next
        if sel.sum() < min_frames:
            continue
        stamps = frames[sel]
        holes = np.flatnonzero(np.diff(stamps) != period)
        if len(holes):
            g = holes[0]
            why = (f"episode {int(e)}: frames at {int(stamps[g])} and {int(stamps[g + 1])} ns are "
                   f"{int(stamps[g + 1] - stamps[g])} ns apart, not the camera period {period} ns: a frame is "
                   f"missing (skipped by the sim or lost)")
            if gaps is None:
                raise AlignmentError(f"{why}; LeRobot frames are evenly spaced, so record with real_time_factor 0 "
                                     f"(every_frame), or leave such episodes out")
            gaps.append(why)
            continue
        ep_ticks = ticks[tick_episode == e]
        # Its start is recorded when its first tick is the reset tick (a latched reset run state can
        # come from long before the recording), or for the first episode the sim's first tick.
        start = resets[e - 1] if e > 0 else first_sim_tick_ns
        complete = bool(start is not None and ep_ticks[0] == start)
        episodes.append(Episode(int(e), stamps.copy(), q[state_rows[sel]].copy(), tq[action_rows[sel]].copy(),
                                int(ep_ticks[0]), int(ep_ticks[-1]), complete))
    return episodes
