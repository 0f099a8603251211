"""CDR, the wire format of every ROS 2 message: the encapsulation header, alignment, the
primitive fields read and written at absolute offsets, and :class:`CdrError`. numpy and struct
only: no rclpy, no rosbags. The messages themselves are in :mod:`robogym_ros.wire.decode`
(what the recorder and the env receive) and :mod:`robogym_ros.wire.encode` (what the sim publishes).

A ``raw=True`` subscription hands over the serialized message as ``bytes``. Deserialising it
with rclpy builds a Python message object with a Python string per joint name and an
``array('d')`` per field, only for the recorder to copy the numbers out again. Here the
numbers go straight from the bytes into the caller's preallocated array, and the joint names
are checked against the expected ones as bytes, without building a string.

The wire format is OMG CDR version 1 (XCDR1), little endian, as every ROS 2 rmw sends it:
a 4-byte encapsulation header (``00 01`` = CDR_LE, then 2 option bytes), then the fields in
declaration order, each aligned to its own size (at most 8) counted from the end of the
encapsulation header. A string is a uint32 length that counts the terminating NUL, the UTF-8
bytes and the NUL; a sequence is a uint32 count, then its elements (an empty sequence of
doubles has no alignment padding). Bytes after the last field are ignored: rclpy's
``serialize_message`` leaves a few there, what arrives over DDS has none.

Anything that cannot be such a message raises :class:`CdrError` with what was wrong and where;
nothing else escapes (no IndexError, no struct.error, no UnicodeDecodeError), and an output
array is written only once the whole message has been checked.

The encoders build what ``rclpy`` would serialize (zero padding), as a new ``bytes`` object
per call: ``Publisher.publish(bytes)`` sends it as is, without a Python message object, and
DDS copies it, so nothing a subscriber receives shares memory with anything here.
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

from robogym_ros.contract import NS_PER_S

CDR_LE = b"\x00\x01"  # representation identifier of plain little-endian CDR (XCDR1)
_ENCAPSULATIONS = {  # the others a reader may meet, for the error message
    b"\x00\x00": "CDR_BE (big-endian CDR)", b"\x00\x02": "PL_CDR_BE", b"\x00\x03": "PL_CDR_LE",
    b"\x00\x06": "CDR2_BE", b"\x00\x07": "CDR2_LE (XCDR2)", b"\x00\x08": "PL_CDR2_BE",
    b"\x00\x09": "PL_CDR2_LE", b"\x00\x0a": "D_CDR2_BE", b"\x00\x0b": "D_CDR2_LE",
}
HEAD = 4  # the encapsulation header; alignment counts from its end
F64 = np.dtype("<f8")
U32 = struct.Struct("<I")
STAMP = struct.Struct("<iII")  # header.stamp.sec, .nanosec, then frame_id's length
ENCAPSULATION = CDR_LE + b"\x00\x00"  # CDR_LE, no options
TIME = struct.Struct("<iI")
AFTER_STAMP = HEAD + 8  # a stamped message's first byte after header.stamp


class CdrError(ValueError):
    """Bytes that are not a well-formed CDR message of the expected type; says what and where."""


def align(offset: int, size: int) -> int:
    """``offset`` (absolute) moved up to a multiple of ``size`` counted from the payload start."""
    return offset + (-(offset - HEAD) % size)


def check_encapsulation(data: bytes) -> None:
    if len(data) < HEAD:
        raise CdrError(f"{len(data)} bytes: too short for a CDR encapsulation header (4 bytes)")
    kind = bytes(data[:2])
    if kind != CDR_LE:
        name = _ENCAPSULATIONS.get(kind, f"unknown representation 0x{kind.hex()}")
        raise CdrError(f"encapsulation {name} is not supported; expected CDR_LE (00 01)")


def read_u32(data: bytes, offset: int, what: str) -> int:
    if offset + 4 > len(data):
        raise CdrError(f"{what} at byte {offset} lies past the end of the {len(data)}-byte message")
    return U32.unpack_from(data, offset)[0]


def read_string(data: bytes, offset: int, what: str) -> tuple[str, int]:
    """(text, offset after it) of a CDR string whose length field is at ``offset`` (aligned)."""
    length = read_u32(data, offset, f"length of {what}")
    start, end = offset + 4, offset + 4 + length
    if length == 0:
        raise CdrError(f"{what} at byte {offset} has length 0; a CDR string counts its NUL")
    if end > len(data):
        raise CdrError(f"{what} at byte {offset} claims {length} bytes, past the end of the "
                       f"{len(data)}-byte message")
    if data[end - 1] != 0:
        raise CdrError(f"{what} at byte {offset} does not end in NUL")
    try:
        return bytes(data[start:end - 1]).decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise CdrError(f"{what} at byte {offset} is not UTF-8 ({exc.reason} at byte "
                       f"{start + exc.start})") from None


def read_header(data: bytes) -> tuple[int, str, int]:
    """(stamp_ns, frame_id, offset after the header) of a message whose first field is a Header."""
    check_encapsulation(data)
    if len(data) < HEAD + 12:
        raise CdrError(f"{len(data)} bytes: too short for a std_msgs/Header (at least 16 bytes)")
    sec, nanosec, _ = STAMP.unpack_from(data, HEAD)
    frame_id, end = read_string(data, HEAD + 8, "header.frame_id")
    return sec * NS_PER_S + nanosec, frame_id, end


def read_count(data: bytes, offset: int, item_size: int, what: str) -> tuple[int, int]:
    """(count, offset of its first element) of a sequence whose count is at ``offset`` (aligned)."""
    count = read_u32(data, offset, f"count of {what}")
    first = offset + 4
    if count and item_size == 8:
        first = align(first, 8)
    if first + count * item_size > len(data):
        raise CdrError(f"{what} at byte {offset} claims {count} elements ({count * item_size} bytes), "
                       f"past the end of the {len(data)}-byte message")
    return count, first


def read_doubles(data: bytes, offset: int, what: str) -> tuple[np.ndarray, int]:
    """(a float64 copy, offset after) of a sequence<double> whose count is at ``align(offset, 4)``."""
    count, first = read_count(data, align(offset, 4), 8, what)
    return np.frombuffer(data, F64, count, first).copy(), first + 8 * count


def read_strings(data: bytes, offset: int, what: str) -> tuple[tuple[str, ...], int]:
    count = read_u32(data, align(offset, 4), f"count of {what}")
    offset = align(offset, 4) + 4
    if 5 * count > len(data) - offset:  # each string takes at least a length and a NUL
        raise CdrError(f"{what} claims {count} strings, more than the {len(data)}-byte message holds")
    out = []
    for i in range(count):
        text, offset = read_string(data, align(offset, 4), f"{what}[{i}]")
        out.append(text)
    return tuple(out), offset



def encode_names(names: Sequence[str]) -> bytes:
    """The CDR bytes of a sequence<string> (count first, zero padding), as it starts at an
    offset that is a multiple of 4 (where a sequence's count always lies)."""
    out = bytearray(U32.pack(len(names)))
    for name in names:
        raw = name.encode("utf-8") + b"\x00"
        out += b"\x00" * (-len(out) % 4) + U32.pack(len(raw)) + raw
    return bytes(out)




class CdrWriter:
    """Appends CDR fields at a known absolute offset, padding with zeros as CDR aligns them."""

    def __init__(self, offset: int):
        self.offset = offset
        self._parts: list[bytes] = []

    def _put(self, data: bytes, size: int) -> "CdrWriter":
        pad = align(self.offset, size) - self.offset
        self._parts.append(b"\x00" * pad + data)
        self.offset += pad + len(data)
        return self

    def u8(self, value: int) -> "CdrWriter":
        return self._put(struct.pack("<B", value), 1)

    def u32(self, value: int) -> "CdrWriter":
        return self._put(U32.pack(value), 4)

    def string(self, text: str) -> "CdrWriter":
        raw = text.encode("utf-8") + b"\x00"
        return self._put(U32.pack(len(raw)) + raw, 4)

    def strings(self, texts: Sequence[str]) -> "CdrWriter":
        self.u32(len(texts))
        for text in texts:
            self.string(text)
        return self

    def doubles(self, values, *, fixed: bool = False) -> "CdrWriter":
        """A sequence<double> (count first), or a fixed-size double[N] array (``fixed``)."""
        data = np.asarray(values, F64).ravel()
        if not fixed:
            self.u32(len(data))
        return self._put(data.tobytes(), 8) if len(data) else self

    def pad_to(self, size: int) -> "CdrWriter":
        return self._put(b"", size)

    def bytes(self) -> bytes:
        return b"".join(self._parts)


def time_bytes(stamp_ns: int) -> bytes:
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return TIME.pack(sec, nanosec)
