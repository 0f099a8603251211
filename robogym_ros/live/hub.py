"""The newest frame for every viewer, encoded once.

Frame sets are offered as they complete (never blocking the caller: a ROS callback); one
encoder thread takes the newest offered, encodes it once, and publishes it. Each viewer waits
for an encoded frame newer than the one it last sent, so a slow viewer gets the newest and
skips the rest: JPEG frames are all keyframes, so skipping costs no decoder state. Nothing is
encoded while nothing new comes (a paused sim sends nothing until something changes).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from robogym_ros.live.frames import FrameSet
from robogym_ros.live.latest import Latest


@dataclass(frozen=True)
class Encoded:
    """One encoded frame: the tick it shows and its bytes (with their MIME type)."""

    stamp_ns: int
    data: bytes
    mime: str = "image/jpeg"


class FrameHub:
    """Offer frame sets from any thread; viewers wait on ``frames`` (a Latest of Encoded)."""

    def __init__(self, encode: Callable[[FrameSet], bytes], *, on_error: Callable[[str], None] | None = None):
        self._encode = encode
        self._on_error = on_error
        self._offered: Latest[FrameSet] = Latest()
        self.frames: Latest[Encoded] = Latest()
        self.offered = 0  # frame sets offered
        self.encoded = 0  # frames encoded: once each, whatever the number of viewers
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name="frame_encoder", daemon=True)
        self._thread.start()

    def offer(self, frame_set: FrameSet) -> None:
        self.offered += 1
        self._offered.publish(frame_set)

    def _run(self) -> None:
        seq = 0
        while True:
            seq, frame_set = self._offered.wait_newer(seq, 1.0)
            if self._offered.closed:
                return
            if frame_set is None:
                continue
            try:
                data = self._encode(frame_set)
            except Exception as exc:  # noqa: BLE001 - a bad frame must not end the stream
                self.errors += 1
                if self._on_error is not None:
                    self._on_error(f"{type(exc).__name__}: {exc}")
                continue
            self.encoded += 1
            self.frames.publish(Encoded(frame_set.stamp_ns, data))

    def close(self, timeout_s: float = 2.0) -> None:
        self._offered.close()
        self.frames.close()
        self._thread.join(timeout_s)
