"""Camera frames joined by tick: a frame set is every camera's image of one and the same tick.

The sim renders all its cameras from the same physics state and stamps each image with that
tick (docs/sim_node.md, "Scene and cameras"), so a set is complete when each camera has an image of one
stamp. Images arrive one camera at a time; a set still partial when a newer one completes is
dropped, never mixed with another tick's images.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

BYTES_PER_PIXEL = {"rgb8": 3, "bgr8": 3}  # what a viewer can show; the sim publishes rgb8


@dataclass(frozen=True)
class Frame:
    """One camera's image of one tick: sensor_msgs/Image's fields, the pixels an own copy."""

    camera: str
    stamp_ns: int
    width: int
    height: int
    encoding: str
    step: int
    data_len: int
    pixels: bytes

    def rgb(self) -> np.ndarray:
        """(height, width, 3) uint8 RGB, a view of the pixels (ValueError naming what is wrong
        for an encoding or layout no viewer can show)."""
        bpp = BYTES_PER_PIXEL.get(self.encoding)
        if bpp is None:
            raise ValueError(f"{self.camera}: encoding {self.encoding[:40]!r} is not one of {sorted(BYTES_PER_PIXEL)}")
        if self.step < self.width * bpp or self.data_len != self.step * self.height \
                or len(self.pixels) != self.data_len:
            raise ValueError(f"{self.camera}: {self.width}x{self.height} {self.encoding} with step {self.step} "
                             f"does not fit {len(self.pixels)} bytes")
        rows = np.frombuffer(self.pixels, np.uint8).reshape(self.height, self.step)
        image = rows[:, :self.width * bpp].reshape(self.height, self.width, bpp)
        return image[..., ::-1] if self.encoding == "bgr8" else image

    def meta(self) -> dict:
        """What the recorder's image checks read of an image (robogym_ros.checks.ImageMeta's fields)."""
        return {"camera": self.camera, "stamp_ns": self.stamp_ns, "width": self.width, "height": self.height,
                "encoding": self.encoding, "step": self.step, "data_len": self.data_len}


@dataclass(frozen=True)
class FrameSet:
    """Every camera's image of the tick stamped ``stamp_ns``, in the order of the cameras."""

    stamp_ns: int
    frames: tuple[Frame, ...]


class FrameSets:
    """Joins frames into sets by stamp. Not thread-safe: its owner holds a lock."""

    def __init__(self, cameras: Sequence[str], keep: int = 4):
        if not cameras:
            raise ValueError("a frame set needs at least one camera")
        self.cameras = tuple(cameras)
        self._keep = keep
        self._partial: dict[int, dict[str, Frame]] = {}
        self.complete: list[FrameSet] = []  # the newest ``keep`` complete sets, oldest first
        self.dropped = 0  # partial sets given up (a camera's image of that tick never came)

    @property
    def newest(self) -> FrameSet | None:
        return self.complete[-1] if self.complete else None

    def clear(self) -> None:
        self._partial.clear()
        self.complete.clear()

    def add(self, frame: Frame) -> FrameSet | None:
        """Take one image; returns the set it completed, if it completed one newer than any
        before. An image of a camera this join does not know is ignored; a stamp that goes
        back before the newest complete set means a new sim (sim time never goes back): the
        join starts over."""
        if frame.camera not in self.cameras:
            return None
        newest = self.newest
        if newest is not None and frame.stamp_ns <= newest.stamp_ns:
            if frame.stamp_ns == newest.stamp_ns:
                return None  # a duplicate of a set already complete
            self.clear()
        partial = self._partial.setdefault(frame.stamp_ns, {})
        partial[frame.camera] = frame
        if len(partial) < len(self.cameras):
            if len(self._partial) > self._keep:  # a camera's image of the oldest never came
                del self._partial[min(self._partial)]
                self.dropped += 1
            return None
        del self._partial[frame.stamp_ns]
        for stamp in [s for s in self._partial if s < frame.stamp_ns]:
            del self._partial[stamp]  # older partial sets can no longer be the newest
            self.dropped += 1
        done = FrameSet(frame.stamp_ns, tuple(partial[c] for c in self.cameras))
        self.complete = [*self.complete[-(self._keep - 1):], done] if self._keep > 1 else [done]
        return done
