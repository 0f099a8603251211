"""What every check returns (Finding, CheckResult), image metadata, and how findings list stamps."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

DIGEST_SIZE = 16
LIST_LIMIT = 20  # stamps/slots listed in one figure; counts are always complete

# Codes for classify_stamps: how each message relates to what came before it.
NEW, DUPLICATE, REORDERED, RESTART, AHEAD = 0, 1, 2, 3, 4

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


def fmt_list(stamps_ns: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(fmt_s(s) for s in list(stamps_ns)[:limit])
    return shown + (f", ... ({len(stamps_ns)} in all)" if len(stamps_ns) > limit else "")


def clip(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut: bad input never echoes unbounded."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def as_ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def capped(values: Any, limit: int = LIST_LIMIT) -> list[int]:
    return as_ints(list(values)[:limit])
