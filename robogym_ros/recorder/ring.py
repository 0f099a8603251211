"""Preallocated ring buffers that copy on store (the subscriber-callback side of the audit).

A buffer that appends what it is handed keeps references: every slot ends up equal to
the last value. These rings own their memory, copy every value in,
take a digest at store time so later mutation shows, and never grow: when full, the
oldest slot is overwritten and counted.
"""
from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from robogym_ros.checks import DIGEST_SIZE, ImageMeta

_POS, _VEL, _EFF = 0, 1, 2
_F64 = np.dtype(np.float64)


def _f64_bytes(values: Any, n: int, what: str) -> bytes:
    """``n`` values as float64 bytes (a copy); ``array('d')``, as rclpy delivers, without numpy."""
    if type(values) is array and values.typecode == "d":
        if len(values) != n:
            raise ValueError(f"{what} has {len(values)} values, ring holds {n} joints")
        return values.tobytes()
    arr = np.asarray(values, _F64)
    if arr.shape != (n,):
        raise ValueError(f"{what} has {len(values)} values, ring holds {n} joints")
    return arr.tobytes()


_DIGEST_SLOT_BYTES = 8 + 33 + DIGEST_SIZE  # list pointer + a bytes object holding the digest
IMAGE_SLOT_BYTES = 400  # an ImageMeta with its digest, and the list pointer


def ring_bytes(capacity: int, n_joints: int) -> int:
    """Memory one joint-state Ring of this size takes (payload, stamps, digests)."""
    return capacity * (3 * n_joints * _F64.itemsize + 8 + _DIGEST_SLOT_BYTES)


def recording_bytes(capacity: int, n_joints: int, keep_pixels_mb: float = 0.0, image_capacity: int = 10_000) -> int:
    """Memory the recorder's rings take: joint states and truth, image metadata, kept pixels.

    The stamps of every message received (8 bytes each) grow on top, with the recording.
    """
    return (2 * ring_bytes(capacity, n_joints) + image_capacity * IMAGE_SLOT_BYTES
            + int(keep_pixels_mb * 2 ** 20))


@dataclass(frozen=True)
class RingSnapshot:
    """Copies of the occupied slots, oldest first."""
    stamp_ns: np.ndarray  # (n,) int64
    position: np.ndarray  # (n, n_joints)
    velocity: np.ndarray  # (n, n_joints); NaN where the message carried none
    effort: np.ndarray  # (n, n_joints); NaN where the message carried none
    digests: tuple[bytes, ...]
    stores: int  # total stores since creation
    overwrites: int  # stores that replaced the oldest slot because the ring was full


class _Slots:
    """The circular index both rings share: which slot is next, which are occupied, in order.

    Store and read may run on different executor threads, so both take one lock; an
    uncontended lock costs a fraction of a microsecond.
    """

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self._capacity = int(capacity)
        self._next = 0
        self._size = 0
        self.stores = 0
        self.overwrites = 0  # stores that replaced the oldest slot because the ring was full
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._size

    def _advance(self) -> int:
        """Claim the next slot (caller holds the lock); returns its index."""
        i = self._next
        self._next = i + 1 if i + 1 < self._capacity else 0
        if self._size < self._capacity:
            self._size += 1
        else:
            self.overwrites += 1
        self.stores += 1
        return i

    def _order(self) -> np.ndarray:
        start = self._next if self._size == self._capacity else 0
        return (np.arange(self._size) + start) % self._capacity


class Ring(_Slots):
    """Joint states: ``capacity`` slots of stamp + position/velocity/effort + digest."""

    def __init__(self, capacity: int, n_joints: int):
        if n_joints < 1:
            raise ValueError(f"n_joints must be >= 1, got {n_joints}")
        super().__init__(capacity)
        self._n = int(n_joints)
        # One (3, n_joints) row per slot keeps a slot's payload contiguous: one digest call.
        self._payload = np.full((self._capacity, 3, self._n), np.nan)
        self._stamp_ns = np.zeros(self._capacity, dtype=np.int64)
        self._digest: list[bytes] = [b""] * self._capacity
        # Stores write whole slots as bytes through this view: a slot is one (3, n) float64 row.
        self._bytes = memoryview(self._payload.reshape(-1)).cast("B")
        self._row_shape = (3, self._n)
        self._row_nbytes = 3 * self._n * _F64.itemsize
        self._nan_bytes = np.full(self._n, np.nan).tobytes()

    @property
    def n_joints(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays; fixed at construction."""
        return self._payload.nbytes + self._stamp_ns.nbytes

    def store(self, stamp_ns: int, position: Sequence[float], velocity: Sequence[float] | None = None,
              effort: Sequence[float] | None = None) -> int:
        """Copy one sample into the next slot; returns the slot index. Keeps no caller object.

        On the 1 kHz callback path, where every call finds the caches cold: the slot is
        built as bytes (``array('d')`` is copied without numpy), digested and written with
        one slice assignment; numpy indexing and three row assignments cost several times
        more there (measured by bench/bench_recorder.py). Every check runs before any
        memory is touched, since a half-written oldest slot would still look valid.
        """
        n = self._n
        row = b"".join((
            _f64_bytes(position, n, "position"),
            _f64_bytes(velocity, n, "velocity") if velocity is not None and len(velocity) else self._nan_bytes,
            _f64_bytes(effort, n, "effort") if effort is not None and len(effort) else self._nan_bytes))
        return self._write(stamp_ns, row)

    def store_rows(self, stamp_ns: int, rows: np.ndarray) -> int:
        """Copy a (3, n_joints) float64 array (rows: position, velocity, effort; NaN where a
        message carried none) into the next slot with one ``tobytes``; returns the slot index.

        For rows decoded straight from CDR into a reused scratch array: the slot gets a copy,
        the caller may overwrite ``rows`` at once.
        """
        if type(rows) is not np.ndarray or rows.shape != self._row_shape or rows.dtype != _F64:
            raise ValueError(f"rows must be a float64 array of shape (3, {self._n}), got "
                             f"{getattr(rows, 'dtype', type(rows).__name__)} {getattr(rows, 'shape', '')}")
        return self._write(stamp_ns, rows.tobytes())

    def _write(self, stamp_ns: int, row: bytes) -> int:
        """Write one slot's bytes, already checked; the digest is taken over the same bytes."""
        digest = hashlib.blake2b(row, digest_size=DIGEST_SIZE).digest()
        size = self._row_nbytes
        with self._lock:
            i = self._advance()
            self._bytes[i * size:(i + 1) * size] = row
            self._stamp_ns[i] = stamp_ns
            self._digest[i] = digest
            return i

    def snapshot(self) -> RingSnapshot:
        """All occupied slots, oldest first, as copies (fancy indexing copies)."""
        with self._lock:
            order = self._order()
            payload = self._payload[order]
            return RingSnapshot(self._stamp_ns[order], payload[:, _POS], payload[:, _VEL], payload[:, _EFF],
                                tuple(self._digest[i] for i in order), self.stores, self.overwrites)

    def slots(self) -> list[np.ndarray]:
        """Live (3, n_joints) views of the occupied slots, oldest first: for audit_buffers only."""
        with self._lock:
            return [self._payload[i] for i in self._order()]

    def digests(self) -> list[bytes]:
        with self._lock:
            return [self._digest[i] for i in self._order()]

    def verify(self) -> list[int]:
        """Positions (oldest first) of slots whose content no longer matches its store-time digest."""
        with self._lock:
            return [k for k, i in enumerate(self._order())
                    if hashlib.blake2b(self._payload[i], digest_size=DIGEST_SIZE).digest() != self._digest[i]]

    def clear(self) -> None:
        with self._lock:
            self._payload.fill(np.nan)
            self._digest = [b""] * self._capacity
            self._next = self._size = 0


def _byte_buffer(data: Any) -> Any:
    """Something hashlib and np.frombuffer read without a copy, from bytes/array.array/ndarray/list."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data)
    try:
        memoryview(data)
        return data
    except TypeError:
        return np.asarray(data, dtype=np.uint8)


class ImageRing(_Slots):
    """Image metadata + digest per slot; pixels optionally, within ``pixel_budget_bytes``.

    Pixels are the expensive part (640x480 rgb8 is 0.9 MB), so by default none are kept;
    with a budget, the newest frames keep theirs and the oldest give them up first.
    """

    def __init__(self, capacity: int, *, pixel_budget_bytes: int = 0):
        super().__init__(capacity)
        self._budget = int(pixel_budget_bytes)
        self._meta: list[ImageMeta | None] = [None] * self._capacity
        self._pixels: OrderedDict[int, np.ndarray] = OrderedDict()  # slot -> copy, oldest first
        self.pixel_bytes = 0

    def store(self, stamp_ns: int, width: int, height: int, step: int, encoding: str, data: Any,
              camera: str = "") -> int:
        buf = _byte_buffer(data)
        data_len = memoryview(buf).nbytes
        meta = ImageMeta(int(stamp_ns), int(width), int(height), int(step), str(encoding), data_len, str(camera),
                         hashlib.blake2b(buf, digest_size=DIGEST_SIZE).digest())
        keep = 0 < data_len <= self._budget
        pixels = np.frombuffer(buf, dtype=np.uint8).copy() if keep else None
        with self._lock:
            i = self._advance()
            old = self._pixels.pop(i, None)
            if old is not None:
                self.pixel_bytes -= old.nbytes
            self._meta[i] = meta
            if pixels is not None:
                self._pixels[i] = pixels
                self.pixel_bytes += pixels.nbytes
                while self.pixel_bytes > self._budget:
                    _, evicted = self._pixels.popitem(last=False)
                    self.pixel_bytes -= evicted.nbytes
            return i

    def metas(self) -> list[ImageMeta]:
        """Metadata of the occupied slots, oldest first (frozen records, safe to share)."""
        with self._lock:
            return [self._meta[i] for i in self._order()]  # type: ignore[misc]

    def pixels(self, stamp_ns: int, camera: str = "") -> np.ndarray | None:
        """A copy of the kept pixels of the newest frame with that stamp (and camera), or None."""
        with self._lock:
            for i in reversed(self._order()):
                m = self._meta[i]
                if m is not None and m.stamp_ns == stamp_ns and (not camera or m.camera == camera):
                    px = self._pixels.get(i)
                    return None if px is None else px.copy()
        return None

    def verify(self) -> list[int]:
        """Positions (oldest first) of slots whose kept pixels no longer match their digest."""
        with self._lock:
            return [k for k, i in enumerate(self._order()) if i in self._pixels and
                    hashlib.blake2b(self._pixels[i], digest_size=DIGEST_SIZE).digest() != self._meta[i].digest]
