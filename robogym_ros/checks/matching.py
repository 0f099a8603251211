"""Matching stored slots to ground-truth rows by stamp, run by run."""
from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import as_dt_ns, as_rows, as_stamps
from .grid import classify_stamps


def match_by_stamp(stamps_ns: Any, true_stamps_ns: Any, *, control_dt_ns: int | None = None) -> np.ndarray:
    """Index of the ground-truth row with the same stamp for each slot; -1 where none.

    With ``control_dt_ns`` both streams are split into runs at a sim restart and matched
    run by run, since a restarted sim reuses the stamps of the first run.
    """
    stamps = as_stamps(stamps_ns)
    true_stamps = as_stamps(true_stamps_ns, "true_stamps_ns")
    if control_dt_ns is None:
        seg = np.zeros(len(stamps), np.int64)
        true_seg = np.zeros(len(true_stamps), np.int64)
    else:
        seg = classify_stamps(stamps, control_dt_ns)[1]
        true_seg = classify_stamps(true_stamps, control_dt_ns)[1]
    index: dict[tuple[int, int], int] = {}
    for i, key in enumerate(zip(true_seg.tolist(), true_stamps.tolist())):
        index.setdefault(key, i)
    return np.array([index.get(key, -1) for key in zip(seg.tolist(), stamps.tolist())], dtype=np.int64)


def matched_values(stamps, values, true_stamps, true_values, control_dt_ns, what="positions"):
    """Stamps, values, truth and the truth row of each slot (-1: none), every argument checked."""
    stamps = as_stamps(stamps)
    true_stamps = as_stamps(true_stamps, "true_stamps_ns")
    true_values = as_rows(true_values, len(true_stamps), f"true_{what}")
    if len(stamps) == 0:
        values = np.zeros((0, true_values.shape[1]))  # an empty buffer: no data, not an error
    else:
        values = as_rows(values, len(stamps), what)
    if len(true_stamps) and values.shape[1] != true_values.shape[1]:
        raise ValueError(f"{what} have {values.shape[1]} columns (joints), true_{what} have "
                         f"{true_values.shape[1]}: give both the same joints in the same order")
    if control_dt_ns is not None:
        control_dt_ns = as_dt_ns(control_dt_ns)
    idx = match_by_stamp(stamps, true_stamps, control_dt_ns=control_dt_ns)
    return stamps, values, true_values, idx
