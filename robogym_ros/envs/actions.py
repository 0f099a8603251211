"""Actions: 12 servo position targets, as a Box in rad or normalised to [-1, 1].

An action is checked whole before anything is sent: wrong shape, a value that is not finite,
or one outside the space raises one ValueError naming the joint, and nothing changes.
float32 rounding at the range's edges (a sampled ``high`` may be a hair above the double
range) is clipped, never refused; anything further out is refused, as the sim node refuses
an out-of-range command.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from gymnasium import spaces

# float32 carries ~7 digits: |x| <= 3 rad rounds by at most ~2.4e-7 rad.
EDGE_TOLERANCE = 1e-6


def action_array(value, shape: tuple[int, ...], what: str, count) -> np.ndarray:
    """``value`` as a float64 array of ``shape``, or a ValueError naming ``what`` and the ``count``
    of numbers it must be."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be {count} numbers, got {value!r:.80}") from None
    if a.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {a.shape}")
    return a


class ActionMap:
    """Maps an action of the env's action space to joint targets (rad) within the ranges."""

    def __init__(self, joint_names: Sequence[str], lower: Sequence[float], upper: Sequence[float],
                 *, normalized: bool):
        self.joint_names = tuple(joint_names)
        self.lower = np.array(lower, dtype=np.float64)
        self.upper = np.array(upper, dtype=np.float64)
        if not (np.all(np.isfinite(self.lower)) and np.all(np.isfinite(self.upper))):
            raise ValueError("every joint needs a finite command range for a Box action space")
        self.normalized = bool(normalized)
        n = len(self.joint_names)
        if self.normalized:
            self.space = spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)
        else:
            self.space = spaces.Box(self.lower.astype(np.float32), self.upper.astype(np.float32),
                                    dtype=np.float32)
        self._half_span = (self.upper - self.lower) / 2.0
        self._mid = (self.upper + self.lower) / 2.0
        low, high = (np.full(n, -1.0), np.full(n, 1.0)) if self.normalized else (self.lower, self.upper)
        self._low_ok = low - EDGE_TOLERANCE
        self._high_ok = high + EDGE_TOLERANCE

    def _all_in_range(self, a: np.ndarray) -> bool:
        """Every element of one action within the space (edge tolerance included), none NaN or inf."""
        if not self.normalized:
            return bool(self.in_range(a).all())
        # one bound for all: a few Python comparisons beat three numpy calls on 12 numbers
        v = a.tolist()
        return math.isfinite(sum(v)) and min(v) >= -1.0 - EDGE_TOLERANCE and max(v) <= 1.0 + EDGE_TOLERANCE

    def in_range(self, a: np.ndarray) -> np.ndarray:
        """Elementwise: within the space, edge tolerance included (a batch of actions works too).
        NaN fails both comparisons, so it is never in range."""
        return (a >= self._low_ok) & (a <= self._high_ok)

    def clipped_targets(self, a: np.ndarray) -> np.ndarray:
        """Joint targets (rad) of actions already found in range, clipped to the joint ranges
        (a batch of actions works too: one row each)."""
        t = self._mid + a * self._half_span if self.normalized else a
        return np.minimum(np.maximum(t, self.lower), self.upper)

    def targets(self, action) -> np.ndarray:
        """Joint targets (rad, float64, a new array) for ``action``, or ValueError."""
        a = action_array(action, self.space.shape, "action", len(self.joint_names))
        if self._all_in_range(a):  # the common case
            return self.clipped_targets(a)
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise ValueError(f"action for {self.joint_names[bad[0]]!r} is not finite ({a[bad[0]]})")
        i = int(np.flatnonzero((a < self._low_ok) | (a > self._high_ok))[0])
        lo, hi = (-1.0, 1.0) if self.normalized else (self.lower[i], self.upper[i])
        raise ValueError(f"action for {self.joint_names[i]!r} is {a[i]:.6g}, outside [{lo:.6g}, {hi:.6g}]"
                         + (" (normalised actions)" if self.normalized else " rad"))

    def action_of(self, targets) -> np.ndarray:
        """The action that gives ``targets`` (rad): the inverse of :meth:`targets`, float32."""
        t = np.asarray(targets, dtype=np.float64)
        a = (t - self._mid) / self._half_span if self.normalized else t
        return np.clip(a.astype(np.float32), self.space.low, self.space.high)
