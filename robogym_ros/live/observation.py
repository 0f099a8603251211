"""What a client of a running sim observes: a tick's joints and the camera frames of that very
tick, joined by stamp as the recorder judges them (an image's stamp is on the tick grid and is
the stamp of a joint_states tick received: robogym_ros.checks.images).

Joint ticks arrive every control tick, frames every camera period (a few ticks later, once
rendered): the buffer keeps the last ticks by stamp, so the newest complete frame set finds
its tick's joints. Thread-safe: the ROS callbacks add, tool calls and viewers read and wait.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robogym_ros.live.frames import Frame, FrameSet, FrameSets


@dataclass(frozen=True)
class JointTick:
    """One joint_states message, in the order of the buffer's joint names."""

    stamp_ns: int
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray  # N*m, the servo's load as its joint_states reports it; NaN where none was published


@dataclass(frozen=True)
class Observation:
    """Joints, and optionally frames and object poses, all of the tick stamped ``stamp_ns``."""

    stamp_ns: int
    joints: JointTick
    frames: FrameSet | None  # None: taken without images
    object_poses: np.ndarray | None  # (k, 7) ground truth of that tick, when asked for and at hand
    targets: np.ndarray | None  # the servo targets in force during that tick (joint order), when at hand
    newest_stamp_ns: int  # the newest joint tick at hand when it was taken


class ObservationBuffer:
    """The last ``capacity`` joint ticks and object poses by stamp, and the last frame sets."""

    def __init__(self, joint_names: Sequence[str], cameras: Sequence[str] = (), capacity: int = 1000):
        self.joint_names = tuple(joint_names)
        self._capacity = capacity
        self._cv = threading.Condition()
        self._joints: OrderedDict[int, JointTick] = OrderedDict()
        self._objects: OrderedDict[int, np.ndarray] = OrderedDict()
        self._targets: OrderedDict[int, np.ndarray] = OrderedDict()
        self._sets = FrameSets(cameras) if cameras else None
        self._orders: dict[tuple[str, ...], np.ndarray | None] = {}
        self.joint_seq = 0  # joint ticks taken
        self.complete_seq = 0  # complete observations (a frame set and its tick's joints) that became the newest
        self._complete_stamp = -1
        self.joint_arrival_s: float | None = None  # monotonic time of the newest joint tick
        self.restarts = 0  # times sim time went back (a new sim): the buffer started over

    # --- set-up -------------------------------------------------------------------------------
    def reconfigure(self, joint_names: Sequence[str], cameras: Sequence[str]) -> None:
        """A new spec (a new sim, or other cameras): start over with these joints and cameras."""
        with self._cv:
            self.joint_names = tuple(joint_names)
            self._orders.clear()
            self._sets = FrameSets(cameras) if cameras else None
            self._clear()

    @property
    def frame_sets_dropped(self) -> int:
        """Frame sets given up because a camera's image of that tick never came (lost, or the
        set was overtaken): the sim's own skipped frames never start a set."""
        with self._cv:
            return 0 if self._sets is None else self._sets.dropped

    @property
    def cameras(self) -> tuple[str, ...]:
        return self._sets.cameras if self._sets is not None else ()

    def _clear(self) -> None:
        self._joints.clear()
        self._objects.clear()
        self._targets.clear()
        if self._sets is not None:
            self._sets.clear()
        self._complete_stamp = -1
        self._cv.notify_all()

    # --- the ROS side -------------------------------------------------------------------------
    def add_joints(self, stamp_ns: int, names: Sequence[str], position, velocity, effort=()) -> None:
        order = self._order(tuple(names))
        if order is None:
            return  # names that are not this sim's joints: not a tick of it

        def column(values) -> np.ndarray:  # a field the message leaves empty: NaN, not zeros
            return (np.asarray(values, np.float64)[order] if len(values) == len(names)
                    else np.full(len(order), np.nan))
        tick = JointTick(int(stamp_ns), np.asarray(position, np.float64)[order], column(velocity), column(effort))
        with self._cv:
            if self._joints and tick.stamp_ns < next(reversed(self._joints)):
                self.restarts += 1  # sim time never goes back: this is another sim
                self._clear()
            self._joints[tick.stamp_ns] = tick
            while len(self._joints) > self._capacity:
                self._joints.popitem(last=False)
            self.joint_seq += 1
            self.joint_arrival_s = time.monotonic()
            self._note_complete()
            self._cv.notify_all()

    def add_targets(self, stamp_ns: int, names: Sequence[str], position) -> None:
        """The servo targets in force during tick ``stamp_ns`` (the sim's ground_truth/joint_targets)."""
        order = self._order(tuple(names))
        if order is None:
            return
        with self._cv:
            self._targets[int(stamp_ns)] = np.asarray(position, np.float64)[order]
            while len(self._targets) > self._capacity:
                self._targets.popitem(last=False)
            self._cv.notify_all()

    def targets_at(self, stamp_ns: int, timeout_s: float = 0.0) -> np.ndarray | None:
        """The targets of tick ``stamp_ns``, waiting at most ``timeout_s`` for them (they are
        published right after its joints, on a topic of their own); None if they did not come,
        at once if a later tick's came first (these were lost on the way)."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while int(stamp_ns) not in self._targets:
                left = deadline - time.monotonic()
                if left <= 0 or (self._targets and next(reversed(self._targets)) > int(stamp_ns)):
                    return None
                self._cv.wait(left)
            return self._targets[int(stamp_ns)]

    @property
    def has_targets(self) -> bool:
        """Whether this sim's servo targets have come at all (a sim that publishes them publishes
        them every tick)."""
        with self._cv:
            return bool(self._targets)

    def add_objects(self, stamp_ns: int, poses: np.ndarray) -> None:
        with self._cv:
            self._objects[int(stamp_ns)] = np.array(poses, np.float64)
            while len(self._objects) > self._capacity:
                self._objects.popitem(last=False)
            self._cv.notify_all()

    def add_frame(self, frame: Frame) -> FrameSet | None:
        """Take one camera image; returns the frame set it completed, if any."""
        with self._cv:
            if self._sets is None:
                return None
            done = self._sets.add(frame)
            if done is not None:
                self._note_complete()
                self._cv.notify_all()
            return done

    def _order(self, names: tuple[str, ...]) -> np.ndarray | None:
        if not self.joint_names:
            return None  # no spec yet: which joints are the sim's is not known
        if names not in self._orders:
            index = {n: i for i, n in enumerate(names)}
            self._orders[names] = (np.array([index[n] for n in self.joint_names], np.intp)
                                   if all(n in index for n in self.joint_names) else None)
        return self._orders[names]

    def _note_complete(self) -> None:
        """Count a complete observation newer than the last one counted (caller holds the lock)."""
        found = self._newest_set_with_joints()
        if found is not None and found.stamp_ns > self._complete_stamp:
            self._complete_stamp = found.stamp_ns
            self.complete_seq += 1

    def _newest_set_with_joints(self) -> FrameSet | None:
        if self._sets is None:
            return None
        for frame_set in reversed(self._sets.complete):
            if frame_set.stamp_ns in self._joints:
                return frame_set
        return None

    # --- readers ------------------------------------------------------------------------------
    def newest(self, *, images: bool, objects: bool = False) -> Observation | None:
        """The newest tick with everything asked for: with ``images``, the newest complete frame
        set whose tick's joints are at hand; without, the newest joint tick."""
        with self._cv:
            if not self._joints:
                return None
            newest_stamp = next(reversed(self._joints))
            frames = None
            if images and self._sets is not None:
                frames = self._newest_set_with_joints()
                if frames is None:
                    return None
                stamp = frames.stamp_ns
            else:
                stamp = newest_stamp
            poses = self._objects.get(stamp) if objects else None
            return Observation(stamp, self._joints[stamp], frames, poses, self._targets.get(stamp), newest_stamp)

    def wait_objects(self, stamp_ns: int, timeout_s: float) -> bool:
        """Wait until the objects' poses of tick ``stamp_ns`` are at hand (they come on a topic of
        their own, a little after its joints); False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while int(stamp_ns) not in self._objects:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True

    def objects_at(self, stamp_ns: int) -> np.ndarray | None:
        with self._cv:
            return self._objects.get(int(stamp_ns))

    def newest_stamp_ns(self) -> int | None:
        with self._cv:
            return next(reversed(self._joints)) if self._joints else None

    def newest_frames_stamp_ns(self) -> int | None:
        with self._cv:
            newest = self._sets.newest if self._sets is not None else None
            return None if newest is None else newest.stamp_ns

    def seq(self, *, images: bool) -> int:
        with self._cv:
            return self.complete_seq if images and self._sets is not None else self.joint_seq

    def wait_newer(self, seq: int, *, images: bool, timeout_s: float) -> bool:
        """Wait until a complete observation (``images``) or a joint tick newer than ``seq``
        has come; False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while (self.complete_seq if images and self._sets is not None else self.joint_seq) <= seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True
