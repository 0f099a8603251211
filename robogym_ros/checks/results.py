"""What every check returns (Finding, CheckResult), image metadata, and the shared helpers."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

DIGEST_SIZE = 16
LIST_LIMIT = 20  # stamps/slots listed in one figure; counts are always complete

# Codes for classify_stamps: how each message relates to what came before it.
NEW, DUPLICATE, REORDERED, RESTART = 0, 1, 2, 3

BYTES_PER_PIXEL = {
    "rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "mono16": 2,
    "8UC1": 1, "8UC3": 3, "8UC4": 4, "16UC1": 2, "32FC1": 4,
}


@dataclass(frozen=True)
class Finding:
    """One fault a check found, with a sentence that carries its figures."""

    code: str  # stable machine name, e.g. "dropped_ticks"
    message: str  # one readable sentence with the figures in it
    figures: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    """What a check returns: a summary, JSON-ready figures and its findings (none = pass)."""

    name: str
    summary: str
    figures: Mapping[str, Any]
    findings: tuple[Finding, ...] = ()
    no_data: bool = False  # the check could not run: never counts as a pass

    @property
    def status(self) -> str:
        if self.no_data:
            return "no_data"
        return "fail" if self.findings else "pass"

    @property
    def ok(self) -> bool:
        return self.status == "pass"


def by_name(results: Sequence[CheckResult], name: str) -> CheckResult:
    """The result of the check called ``name``; KeyError listing the names there are."""
    for r in results:
        if r.name == name:
            return r
    raise KeyError(f"no check named {name!r}; checks: {[r.name for r in results]}")


@dataclass(frozen=True)
class ImageMeta:
    """What the image checks need from a sensor_msgs/Image, without its pixels."""
    stamp_ns: int
    width: int
    height: int
    step: int
    encoding: str
    data_len: int
    camera: str = ""
    digest: bytes | None = None


def digest(values: Any) -> bytes:
    """blake2b of the raw bytes; the same content gives the same digest in Ring and here."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    return hashlib.blake2b(np.ascontiguousarray(arr), digest_size=DIGEST_SIZE).digest()


def fmt_s(stamp_ns: int) -> str:
    """Seconds, with as many decimals as the stamp needs (ms grid -> 3)."""
    stamp_ns = int(stamp_ns)
    decimals = 3 if stamp_ns % 1_000_000 == 0 else 9
    return f"{stamp_ns / 1e9:.{decimals}f} s"


def _fmt_list(stamps_ns: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(fmt_s(s) for s in list(stamps_ns)[:limit])
    return shown + (f", ... ({len(stamps_ns)} in all)" if len(stamps_ns) > limit else "")


def _stamps(stamps_ns: Any, name: str = "stamps_ns") -> np.ndarray:
    """``stamps_ns`` as int64; a clear ValueError naming ``name`` for anything else."""
    arr = _array(stamps_ns, name, dtype=None)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one stamp per slot), got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "f":
        # float64 is exact only to 2**53 ns; accept integral floats, refuse fractional ones.
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be integer nanoseconds" + _seconds_hint(arr))
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer nanoseconds, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _seconds_hint(arr: np.ndarray) -> str:
    finite = arr[np.isfinite(arr)]
    if finite.size and np.all(np.abs(finite) < 1e6) and np.any(finite != np.round(finite)):
        return " (these look like seconds: multiply by 1e9)"
    return ""


def _rows(values: Any, n_rows: int, name: str) -> np.ndarray:
    """``values`` as a (n_rows, n_columns) float64 array; a 1-D array is one column."""
    arr = _array(values, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows (one per stamp), got shape {arr.shape}")
    return arr


def _array(values: Any, name: str, dtype: Any = np.float64) -> np.ndarray:
    """np.asarray with the argument named in the error: ragged rows and non-numbers say where."""
    if values is None:
        raise ValueError(f"{name} is required, got None")
    try:
        return np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}: {_why_not_an_array(values, exc)}") from None


def _why_not_an_array(values: Any, exc: Exception) -> str:
    try:
        lengths = [len(v) for v in values]
    except TypeError:
        lengths = []
    if lengths and len(set(lengths)) > 1:
        bad = next(i for i, n in enumerate(lengths) if n != lengths[0])
        return (f"rows differ in length (row 0 has {lengths[0]} values, row {bad} has {lengths[bad]}): "
                f"every slot must hold the same joints")
    return f"not an array of numbers ({type(exc).__name__}: {clip(str(exc), 120)})"


def _dt_ns(control_dt_ns: Any, name: str = "control_dt_ns") -> int:
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


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut: bad input never echoes unbounded."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def _capped(values: Any, limit: int = LIST_LIMIT) -> list[int]:
    return _ints(list(values)[:limit])
