"""The checks' arguments as arrays: a wrong shape, a ragged buffer or a dt in seconds is one
ValueError that names the argument and says what was wrong."""
from __future__ import annotations

from typing import Any

import numpy as np

from .results import clip


def as_stamps(stamps_ns: Any, name: str = "stamps_ns") -> np.ndarray:
    """``stamps_ns`` as int64; a clear ValueError naming ``name`` for anything else."""
    arr = as_array(stamps_ns, name, dtype=None)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one stamp per slot), got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "f":
        # float64 is exact only to 2**53 ns; accept integral floats, refuse fractional ones.
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be integer nanoseconds" + seconds_hint(arr))
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer nanoseconds, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def seconds_hint(arr: np.ndarray) -> str:
    finite = arr[np.isfinite(arr)]
    if finite.size and np.all(np.abs(finite) < 1e6) and np.any(finite != np.round(finite)):
        return " (these look like seconds: multiply by 1e9)"
    return ""


def as_rows(values: Any, n_rows: int, name: str) -> np.ndarray:
    """``values`` as a (n_rows, n_columns) float64 array; a 1-D array is one column."""
    arr = as_array(values, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows (one per stamp), got shape {arr.shape}")
    return arr


def as_array(values: Any, name: str, dtype: Any = np.float64) -> np.ndarray:
    """np.asarray with the argument named in the error: ragged rows and non-numbers say where."""
    if values is None:
        raise ValueError(f"{name} is required, got None")
    try:
        return np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}: {why_not_an_array(values, exc)}") from None


def why_not_an_array(values: Any, exc: Exception) -> str:
    try:
        lengths = [len(v) for v in values]
    except TypeError:
        lengths = []
    if lengths and len(set(lengths)) > 1:
        bad = next(i for i, n in enumerate(lengths) if n != lengths[0])
        return (f"rows differ in length (row 0 has {lengths[0]} values, row {bad} has {lengths[bad]}): "
                f"every slot must hold the same joints")
    return f"not an array of numbers ({type(exc).__name__}: {clip(str(exc), 120)})"


def as_dt_ns(control_dt_ns: Any, name: str = "control_dt_ns") -> int:
    """A positive integer number of nanoseconds; seconds given by mistake are named as such."""
    if isinstance(control_dt_ns, (bool, np.bool_)) or not isinstance(control_dt_ns, (int, float, np.integer,
                                                                                      np.floating)):
        raise ValueError(f"{name} must be a positive integer number of nanoseconds, got "
                         f"{clip(repr(control_dt_ns), 60)}")
    value = float(control_dt_ns)
    if not np.isfinite(value) or value <= 0 or value != round(value):
        hint = (f" ({value:g} looks like seconds: {value:g} s = {round(value * 1e9)} ns)"
                if np.isfinite(value) and 0 < value < 1e3 and value != round(value) else "")
        raise ValueError(f"{name} must be a positive integer number of nanoseconds, got {value:g}{hint}")
    return int(value)
