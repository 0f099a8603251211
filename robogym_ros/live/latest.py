"""The newest value of something, numbered: readers wait for one newer than the last they had.

A reader that falls behind never sees the values it missed, only the newest: that is how a
slow viewer skips ahead instead of falling behind, and how a page hears only of changes.
"""
from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

T = TypeVar("T")


class Latest(Generic[T]):
    """The newest value and its sequence number (0 = none yet); thread-safe."""

    def __init__(self):
        self._cv = threading.Condition()
        self._value: T | None = None
        self._seq = 0
        self._closed = False

    def publish(self, value: T, *, only_if_changed: bool = False) -> bool:
        """Make ``value`` the newest; with ``only_if_changed``, an equal value is not news.
        Returns whether it was published."""
        with self._cv:
            if only_if_changed and self._seq and value == self._value:
                return False
            self._value, self._seq = value, self._seq + 1
            self._cv.notify_all()
            return True

    def get(self) -> tuple[int, T | None]:
        with self._cv:
            return self._seq, self._value

    def wait_newer(self, seq: int, timeout_s: float) -> tuple[int, T | None]:
        """(seq, value) of the newest once it is newer than ``seq``; (seq, None) after
        ``timeout_s`` or once closed."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self._seq <= seq and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return seq, None
                self._cv.wait(left)
            if self._seq <= seq:
                return seq, None
            return self._seq, self._value

    def close(self) -> None:
        """Wake every waiter for good (the server is stopping)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed
