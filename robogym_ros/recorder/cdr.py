"""CDR for the hot paths: decode what the recorder receives, encode what the sim publishes.
numpy and struct only: no rclpy, no rosbags.

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

import operator
import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robogym_ros.contract import NS_PER_S

CDR_LE = b"\x00\x01"  # representation identifier of plain little-endian CDR (XCDR1)
_ENCAPSULATIONS = {  # the others a reader may meet, for the error message
    b"\x00\x00": "CDR_BE (big-endian CDR)", b"\x00\x02": "PL_CDR_BE", b"\x00\x03": "PL_CDR_LE",
    b"\x00\x06": "CDR2_BE", b"\x00\x07": "CDR2_LE (XCDR2)", b"\x00\x08": "PL_CDR2_BE",
    b"\x00\x09": "PL_CDR2_LE", b"\x00\x0a": "D_CDR2_BE", b"\x00\x0b": "D_CDR2_LE",
}
_HEAD = 4  # the encapsulation header; alignment counts from its end
_F64 = np.dtype("<f8")
_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iII")  # header.stamp.sec, .nanosec, then frame_id's length
_U32X2 = struct.Struct("<II")
# geometry_msgs/Pose is x y z, then the quaternion x y z w; POSE_LAYOUT puts w first.
_POSE_TO_LAYOUT = np.array([0, 1, 2, 6, 3, 4, 5])


class CdrError(ValueError):
    """Bytes that are not a well-formed CDR message of the expected type; says what and where."""


def _align(offset: int, size: int) -> int:
    """``offset`` (absolute) moved up to a multiple of ``size`` counted from the payload start."""
    return offset + (-(offset - _HEAD) % size)


def _check_encapsulation(data: bytes) -> None:
    if len(data) < _HEAD:
        raise CdrError(f"{len(data)} bytes: too short for a CDR encapsulation header (4 bytes)")
    kind = bytes(data[:2])
    if kind != CDR_LE:
        name = _ENCAPSULATIONS.get(kind, f"unknown representation 0x{kind.hex()}")
        raise CdrError(f"encapsulation {name} is not supported; expected CDR_LE (00 01)")


def _u32(data: bytes, offset: int, what: str) -> int:
    if offset + 4 > len(data):
        raise CdrError(f"{what} at byte {offset} lies past the end of the {len(data)}-byte message")
    return _U32.unpack_from(data, offset)[0]


def _string(data: bytes, offset: int, what: str) -> tuple[str, int]:
    """(text, offset after it) of a CDR string whose length field is at ``offset`` (aligned)."""
    length = _u32(data, offset, f"length of {what}")
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


def _header(data: bytes) -> tuple[int, str, int]:
    """(stamp_ns, frame_id, offset after the header) of a message whose first field is a Header."""
    _check_encapsulation(data)
    if len(data) < _HEAD + 12:
        raise CdrError(f"{len(data)} bytes: too short for a std_msgs/Header (at least 16 bytes)")
    sec, nanosec, _ = _STAMP.unpack_from(data, _HEAD)
    frame_id, end = _string(data, _HEAD + 8, "header.frame_id")
    return sec * NS_PER_S + nanosec, frame_id, end


def _count(data: bytes, offset: int, item_size: int, what: str) -> tuple[int, int]:
    """(count, offset of its first element) of a sequence whose count is at ``offset`` (aligned)."""
    count = _u32(data, offset, f"count of {what}")
    first = offset + 4
    if count and item_size == 8:
        first = _align(first, 8)
    if first + count * item_size > len(data):
        raise CdrError(f"{what} at byte {offset} claims {count} elements ({count * item_size} bytes), "
                       f"past the end of the {len(data)}-byte message")
    return count, first


def _doubles(data: bytes, offset: int, what: str) -> tuple[np.ndarray, int]:
    """(a float64 copy, offset after) of a sequence<double> whose count is at ``_align(offset, 4)``."""
    count, first = _count(data, _align(offset, 4), 8, what)
    return np.frombuffer(data, _F64, count, first).copy(), first + 8 * count


def _strings(data: bytes, offset: int, what: str) -> tuple[tuple[str, ...], int]:
    count = _u32(data, _align(offset, 4), f"count of {what}")
    offset = _align(offset, 4) + 4
    if 5 * count > len(data) - offset:  # each string takes at least a length and a NUL
        raise CdrError(f"{what} claims {count} strings, more than the {len(data)}-byte message holds")
    out = []
    for i in range(count):
        text, offset = _string(data, _align(offset, 4), f"{what}[{i}]")
        out.append(text)
    return tuple(out), offset


# --- whole messages, as plain values (the reference path, and the slow path) ----------------

@dataclass(frozen=True)
class JointStateFields:
    """A sensor_msgs/JointState, decoded: each array is a copy the caller owns."""
    stamp_ns: int
    frame_id: str
    name: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def decode_joint_state(data: bytes) -> JointStateFields:
    """Every field of a serialized sensor_msgs/JointState."""
    stamp_ns, frame_id, offset = _header(data)
    names, offset = _strings(data, offset, "name")
    position, offset = _doubles(data, offset, "position")
    velocity, offset = _doubles(data, offset, "velocity")
    effort, _ = _doubles(data, offset, "effort")
    return JointStateFields(stamp_ns, frame_id, names, position, velocity, effort)


def decode_header(data: bytes) -> tuple[int, str]:
    """(stamp_ns, frame_id) of any serialized message whose first field is a std_msgs/Header."""
    stamp_ns, frame_id, _ = _header(data)
    return stamp_ns, frame_id


def decode_pose_array(data: bytes) -> tuple[int, str, np.ndarray]:
    """(stamp_ns, frame_id, poses) of a geometry_msgs/PoseArray; poses (k, 7) in
    ``contract.POSE_LAYOUT`` order (x y z qw qx qy qz), a copy."""
    stamp_ns, frame_id, offset = _header(data)
    count, first = _count(data, _align(offset, 4), 56, "poses")
    if count:
        first = _align(first, 8)  # a Pose begins with a double
        if first + 56 * count > len(data):
            raise CdrError(f"poses claim {count} poses, past the end of the {len(data)}-byte message")
    poses = np.frombuffer(data, _F64, 7 * count, first).reshape(count, 7)
    return stamp_ns, frame_id, poses[:, _POSE_TO_LAYOUT]  # fancy indexing copies


@dataclass(frozen=True)
class ImageFields:
    """A sensor_msgs/Image without its pixels: they stay in the message bytes, at
    ``data_offset`` for ``data_len`` bytes (``pixels()`` views them without a copy)."""
    stamp_ns: int
    frame_id: str
    height: int
    width: int
    encoding: str
    is_bigendian: int
    step: int
    data_offset: int
    data_len: int

    def pixels(self, data: bytes) -> memoryview:
        return memoryview(data)[self.data_offset:self.data_offset + self.data_len]


def decode_image(data: bytes) -> ImageFields:
    """Header, size, encoding and where the pixels lie, of a serialized sensor_msgs/Image."""
    stamp_ns, frame_id, offset = _header(data)
    offset = _align(offset, 4)
    if offset + 8 > len(data):
        raise CdrError(f"height/width at byte {offset} lie past the end of the {len(data)}-byte message")
    height, width = _U32X2.unpack_from(data, offset)
    encoding, offset = _string(data, offset + 8, "encoding")
    if offset + 1 > len(data):
        raise CdrError(f"is_bigendian at byte {offset} lies past the end of the {len(data)}-byte message")
    is_bigendian = data[offset]
    step = _u32(data, _align(offset + 1, 4), "step")
    data_len, data_offset = _count(data, _align(offset + 1, 4) + 4, 1, "data")
    return ImageFields(stamp_ns, frame_id, height, width, encoding, is_bigendian, step,
                       data_offset, data_len)


# --- the hot path: a JointState of known joints straight into a ring slot ----------------

def encode_names(names: Sequence[str]) -> bytes:
    """The CDR bytes of a sequence<string> (count first, zero padding), as it starts at an
    offset that is a multiple of 4 (where a sequence's count always lies)."""
    out = bytearray(_U32.pack(len(names)))
    for name in names:
        raw = name.encode("utf-8") + b"\x00"
        out += b"\x00" * (-len(out) % 4) + _U32.pack(len(raw)) + raw
    return bytes(out)


def _unpadded_spans(names: Sequence[str], start: int) -> list[tuple[int, int]]:
    """(begin, end) offsets of the bytes of an encoded sequence<string> at ``start`` that are
    not alignment padding (count, then each length + text + NUL), adjacent ones merged."""
    spans = [(start, start + 4)]
    offset = start + 4
    for name in names:
        offset = _align(offset, 4)
        end = offset + 4 + len(name.encode("utf-8")) + 1
        if spans[-1][1] == offset:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((offset, end))
        offset = end
    return spans


class JointStateDecoder:
    """Decodes serialized JointStates of one known joint list into preallocated rows.

    ``decode_into(data, out)`` writes position, velocity and effort into rows 0, 1, 2 of
    ``out`` (a writable float64 array of shape (3, n_joints), e.g. one ring slot) and returns
    the header stamp in ns. Empty velocity or effort become NaN rows. It returns None, writing
    nothing, when the message names other joints (or the same in another order): decode
    those with :func:`decode_joint_state` and realign by name. Malformed bytes raise
    :class:`CdrError`, also before anything is written.

    The names are compared as bytes with the expected encoding (one ``bytes.startswith``);
    only when that fails (other names, or a serializer that leaves non-zero padding
    between names) are they decoded to strings and compared. Where the fields lie depends
    only on the length of frame_id, so that layout is worked out once per length.
    """

    def __init__(self, names: Sequence[str]):
        self.names = tuple(names)
        self.n_joints = n = len(self.names)
        self._names_block = encode_names(self.names)
        self._shape = (3, n)
        self._nan = np.full(n, np.nan)
        self._layouts: dict[int, tuple] = {}  # frame_id length -> _Layout

    def _layout(self, frame_len: int) -> tuple:
        """(names offset, offset of the position count, Struct of the three counts, offset of
        the first position, end of effort) for full fields, given frame_id's length.

        With all three fields full, each is its count (4 bytes, padded to 8) and n doubles:
        the three lie one stride apart, and one strided view copies them at once.
        """
        n = self.n_joints
        names_at = _align(_HEAD + 12 + frame_len, 4)
        count_at = _align(names_at + len(self._names_block), 4)
        first = _align(count_at + 4, 8)
        stride = 8 * n + 8
        pad = first - count_at - 4
        counts = struct.Struct(f"<I{pad + 8 * n}xI{4 + 8 * n}xI")
        # The names' bytes without the padding between them: rclpy's serializer leaves that
        # padding uninitialised, so messages from rclpy publishers fail the startswith check.
        spans = _unpadded_spans(self.names, names_at)
        unpadded = (operator.itemgetter(*[slice(a, b) for a, b in spans]),
                    tuple(self._names_block[a - names_at:b - names_at] for a, b in spans))
        layout = (names_at, count_at, counts, first, first + 2 * stride + 8 * n, (stride, 8), unpadded)
        self._layouts[frame_len] = layout
        return layout

    def decode_into(self, data: bytes, out: np.ndarray) -> int | None:
        if out.shape != self._shape or out.dtype != _F64:
            raise ValueError(f"out must be a float64 array of shape {self._shape}, "
                             f"got {out.dtype} {out.shape}")
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(data)  # a memoryview has no startswith
        if not data.startswith(CDR_LE):
            _check_encapsulation(data)  # raises, naming it
        size = len(data)
        if size < _HEAD + 12:
            raise CdrError(f"{size} bytes: too short for a std_msgs/Header (at least 16 bytes)")
        sec, nanosec, frame_len = _STAMP.unpack_from(data, _HEAD)
        end = _HEAD + 12 + frame_len
        if frame_len == 0 or end > size or data[end - 1] != 0 or (
                frame_len > 1 and not data[_HEAD + 12:end - 1].isascii()):
            _header(data)  # raises, naming what is wrong (or accepts a UTF-8 frame_id)
        layout = self._layouts.get(frame_len) or self._layout(frame_len)
        names_at, count_at, counts, first, last, strides, (unpadded, expected) = layout
        n = self.n_joints
        if data.startswith(self._names_block, names_at) or unpadded(data) == expected:
            # The common case: position, velocity and effort all have n values.
            if n and last <= size and counts.unpack_from(data, count_at) == (n, n, n):
                out[...] = np.ndarray(self._shape, _F64, data, first, strides)
                return sec * NS_PER_S + nanosec
            offset = names_at + len(self._names_block)
        else:
            names, offset = _strings(data, names_at, "name")
            if names != self.names:
                return None
        rows = []
        for what in ("position", "velocity", "effort"):
            count, first = _count(data, _align(offset, 4), 8, what)
            if count not in (n, 0) or (count == 0 and what == "position" and n):
                raise CdrError(f"{what} has {count} values for {n} joint names")
            rows.append((first, count))
            offset = first + 8 * count
        for row, (first, count) in zip(out, rows):
            row[...] = np.frombuffer(data, _F64, n, first) if count else self._nan
        return sec * NS_PER_S + nanosec


# --- encoding: what the sim publishes, as bytes ------------------------------------------------

ENCAPSULATION = CDR_LE + b"\x00\x00"
_TIME = struct.Struct("<iI")
_AFTER_STAMP = _HEAD + 8  # a stamped message's first byte after header.stamp


class CdrWriter:
    """Appends CDR fields at a known absolute offset, padding with zeros as CDR aligns them."""

    def __init__(self, offset: int):
        self.offset = offset
        self._parts: list[bytes] = []

    def _put(self, data: bytes, align: int) -> "CdrWriter":
        pad = _align(self.offset, align) - self.offset
        self._parts.append(b"\x00" * pad + data)
        self.offset += pad + len(data)
        return self

    def u8(self, value: int) -> "CdrWriter":
        return self._put(struct.pack("<B", value), 1)

    def u32(self, value: int) -> "CdrWriter":
        return self._put(_U32.pack(value), 4)

    def string(self, text: str) -> "CdrWriter":
        raw = text.encode("utf-8") + b"\x00"
        return self._put(_U32.pack(len(raw)) + raw, 4)

    def strings(self, texts: Sequence[str]) -> "CdrWriter":
        self.u32(len(texts))
        for text in texts:
            self.string(text)
        return self

    def doubles(self, values, *, fixed: bool = False) -> "CdrWriter":
        """A sequence<double> (count first), or a fixed-size double[N] array (``fixed``)."""
        data = np.asarray(values, _F64).ravel()
        if not fixed:
            self.u32(len(data))
        return self._put(data.tobytes(), 8) if len(data) else self

    def pad_to(self, align: int) -> "CdrWriter":
        return self._put(b"", align)

    def bytes(self) -> bytes:
        return b"".join(self._parts)


def _time_bytes(stamp_ns: int) -> bytes:
    sec, nanosec = divmod(int(stamp_ns), NS_PER_S)
    return _TIME.pack(sec, nanosec)


def decode_time(data: bytes) -> int:
    """The stamp in ns of a message that is one builtin_interfaces/Time (rosgraph_msgs/Clock)."""
    _check_encapsulation(data)
    if len(data) < _HEAD + 8:
        raise CdrError(f"{len(data)} bytes: too short for a builtin_interfaces/Time (12 bytes)")
    sec, nanosec = _TIME.unpack_from(data, _HEAD)
    return sec * NS_PER_S + nanosec


def encode_time(stamp_ns: int) -> bytes:
    """A message that is one builtin_interfaces/Time (rosgraph_msgs/Clock)."""
    return ENCAPSULATION + _time_bytes(stamp_ns)


class JointStateEncoder:
    """Serialized sensor_msgs/JointState of fixed names and frame_id: everything but the stamp
    and the numbers is encoded once, here. ``encode(stamp_ns, position, velocity, effort)``
    takes float64 arrays of n_joints values each (velocity and effort may be empty)."""

    def __init__(self, names: Sequence[str], frame_id: str = ""):
        self.names = tuple(names)
        self.n_joints = len(self.names)
        w = CdrWriter(_AFTER_STAMP).string(frame_id).strings(self.names).pad_to(4)
        self._prefix, self._fields_at = w.bytes(), w.offset  # up to the position count

    def encode(self, stamp_ns: int, position: np.ndarray, velocity: np.ndarray,
               effort: np.ndarray) -> bytes:
        parts = [ENCAPSULATION, _time_bytes(stamp_ns), self._prefix]
        offset = self._fields_at
        for values in (position, velocity, effort):
            count = len(values)
            if count not in (self.n_joints, 0):
                raise ValueError(f"{count} values for {self.n_joints} joint names")
            parts.append(_U32.pack(count))
            offset += 4
            if count:
                parts.append(b"\x00" * (_align(offset, 8) - offset))
                offset = _align(offset, 8) + 8 * count
                parts.append(np.asarray(values, dtype=_F64).tobytes())
        return b"".join(parts)


class PoseArrayEncoder:
    """Serialized geometry_msgs/PoseArray of a fixed frame_id; ``encode(stamp_ns, poses)``
    takes poses (k, 7) in ``contract.POSE_LAYOUT`` order (x y z qw qx qy qz)."""

    _LAYOUT_TO_POSE = np.array([0, 1, 2, 4, 5, 6, 3])  # -> x y z qx qy qz qw

    def __init__(self, frame_id: str):
        w = CdrWriter(_AFTER_STAMP).string(frame_id).pad_to(4)
        self._prefix = w.bytes()
        self._pad = b"\x00" * (_align(w.offset + 4, 8) - w.offset - 4)  # a Pose begins with a double

    def encode(self, stamp_ns: int, poses: np.ndarray) -> bytes:
        poses = np.asarray(poses, dtype=_F64)
        if poses.ndim != 2 or poses.shape[1] != 7:
            raise ValueError(f"poses must be (k, 7), got {poses.shape}")
        k = len(poses)
        return b"".join((ENCAPSULATION, _time_bytes(stamp_ns), self._prefix, _U32.pack(k),
                         self._pad if k else b"", poses[:, self._LAYOUT_TO_POSE].tobytes()))


class ImageEncoder:
    """Serialized sensor_msgs/Image of a fixed frame_id, size and encoding: ``encode(stamp_ns,
    pixels)`` copies the pixels (any C-contiguous buffer of height x step bytes) once, into
    the new message bytes."""

    def __init__(self, frame_id: str, height: int, width: int, encoding: str, step: int,
                 is_bigendian: int = 0):
        self.nbytes = height * step
        w = (CdrWriter(_AFTER_STAMP).string(frame_id).u32(height).u32(width).string(encoding)
             .u8(is_bigendian).u32(step).u32(self.nbytes))
        self._prefix = w.bytes()

    def encode(self, stamp_ns: int, pixels) -> bytes:
        data = memoryview(pixels)
        if data.nbytes != self.nbytes or not data.c_contiguous:
            raise ValueError(f"pixels must be {self.nbytes} contiguous bytes, got {data.nbytes}")
        return b"".join((ENCAPSULATION, _time_bytes(stamp_ns), self._prefix,
                         data.cast("B") if data.nbytes else b""))


class CameraInfoEncoder:
    """Serialized sensor_msgs/CameraInfo: everything but the stamp fixed, encoded once
    (binning 0 and an empty region of interest: the full, unbinned image)."""

    def __init__(self, frame_id: str, height: int, width: int, distortion_model: str, d, k, r, p):
        w = (CdrWriter(_AFTER_STAMP).string(frame_id).u32(height).u32(width).string(distortion_model)
             .doubles(d).doubles(k, fixed=True).doubles(r, fixed=True).doubles(p, fixed=True)
             .u32(0).u32(0)  # binning_x, binning_y
             .u32(0).u32(0).u32(0).u32(0).u8(0))  # roi: x_offset, y_offset, height, width, do_rectify
        self._prefix = w.bytes()

    def encode(self, stamp_ns: int) -> bytes:
        return b"".join((ENCAPSULATION, _time_bytes(stamp_ns), self._prefix))
