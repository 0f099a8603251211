"""Pacing figures of the real-time loop: how late each physics step began after its deadline,
counted and kept as a histogram (1 us bins up to 20 ms) for percentiles and decades."""
from __future__ import annotations

import math

import numpy as np

HIST_BIN_S = 1e-6  # lateness histogram: 1 us bins ...
HIST_BINS = 20_000  # ... up to 20 ms; the last bin collects everything later


class Stats:
    """Pacing figures. Lateness = how long after its deadline a physics step began."""

    def __init__(self):
        self.steps = 0
        self.late_steps = 0  # begun more than one physics dt (wall) after the deadline
        self.max_lateness_s = 0.0
        self.skipped_s = 0.0  # sim time given up to max_lag, in sim seconds
        self.skips = 0
        self.resets = 0  # blow-ups recovered
        self.hist = np.zeros(HIST_BINS, dtype=np.int64)

    def record(self, lateness_s: float, late_after_s: float) -> None:
        self.steps += 1
        if lateness_s > self.max_lateness_s:
            self.max_lateness_s = lateness_s
        if lateness_s > late_after_s:
            self.late_steps += 1
        self.hist[min(int(lateness_s / HIST_BIN_S), HIST_BINS - 1)] += 1


DECADE_EDGES_S = (1e-5, 1e-4, 1e-3, 1e-2)


def lateness_decades(hist: np.ndarray) -> tuple[int, ...]:
    """Counts of steps per decade of lateness, split at DECADE_EDGES_S."""
    edges = [0, *(round(e / HIST_BIN_S) for e in DECADE_EDGES_S), len(hist)]
    return tuple(int(hist[a:b].sum()) for a, b in zip(edges, edges[1:]))


def lateness_percentile_s(hist: np.ndarray, q: float) -> float:
    """Upper edge of the histogram bin holding the q-th percentile (q in 0..100)."""
    total = int(hist.sum())
    if total == 0:
        return math.nan
    rank = math.ceil(q / 100.0 * total)
    return (int(np.searchsorted(np.cumsum(hist), max(rank, 1))) + 1) * HIST_BIN_S
