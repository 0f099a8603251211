"""Decoding what the recorder and the env receive: serialized messages into numbers, without a
Python message object (see :mod:`robogym_ros.wire.cdr` for the format). Anything that cannot be
such a message raises :class:`~robogym_ros.wire.cdr.CdrError` with what was wrong and where; an
output array is written only once the whole message has been checked.
"""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robogym_ros.contract import NS_PER_S
from robogym_ros.wire.cdr import (
    CDR_LE,
    F64,
    HEAD,
    STAMP,
    TIME,
    CdrError,
    align,
    check_encapsulation,
    encode_names,
    read_count,
    read_doubles,
    read_header,
    read_string,
    read_strings,
    read_u32,
)

_U32X2 = struct.Struct("<II")
# geometry_msgs/Pose is x y z, then the quaternion x y z w; POSE_LAYOUT puts w first.
_POSE_TO_LAYOUT = np.array([0, 1, 2, 6, 3, 4, 5])


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
    stamp_ns, frame_id, offset = read_header(data)
    names, offset = read_strings(data, offset, "name")
    position, offset = read_doubles(data, offset, "position")
    velocity, offset = read_doubles(data, offset, "velocity")
    effort, _ = read_doubles(data, offset, "effort")
    return JointStateFields(stamp_ns, frame_id, names, position, velocity, effort)


def decode_header(data: bytes) -> tuple[int, str]:
    """(stamp_ns, frame_id) of any serialized message whose first field is a std_msgs/Header."""
    stamp_ns, frame_id, _ = read_header(data)
    return stamp_ns, frame_id


def decode_pose_array(data: bytes) -> tuple[int, str, np.ndarray]:
    """(stamp_ns, frame_id, poses) of a geometry_msgs/PoseArray; poses (k, 7) in
    ``contract.POSE_LAYOUT`` order (x y z qw qx qy qz), a copy."""
    stamp_ns, frame_id, offset = read_header(data)
    count, first = read_count(data, align(offset, 4), 56, "poses")
    if count:
        first = align(first, 8)  # a Pose begins with a double
        if first + 56 * count > len(data):
            raise CdrError(f"poses claim {count} poses, past the end of the {len(data)}-byte message")
    poses = np.frombuffer(data, F64, 7 * count, first).reshape(count, 7)
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
    stamp_ns, frame_id, offset = read_header(data)
    offset = align(offset, 4)
    if offset + 8 > len(data):
        raise CdrError(f"height/width at byte {offset} lie past the end of the {len(data)}-byte message")
    height, width = _U32X2.unpack_from(data, offset)
    encoding, offset = read_string(data, offset + 8, "encoding")
    if offset + 1 > len(data):
        raise CdrError(f"is_bigendian at byte {offset} lies past the end of the {len(data)}-byte message")
    is_bigendian = data[offset]
    step = read_u32(data, align(offset + 1, 4), "step")
    data_len, data_offset = read_count(data, align(offset + 1, 4) + 4, 1, "data")
    return ImageFields(stamp_ns, frame_id, height, width, encoding, is_bigendian, step,
                       data_offset, data_len)



def decode_time(data: bytes) -> int:
    """The stamp in ns of a message that is one builtin_interfaces/Time (rosgraph_msgs/Clock)."""
    check_encapsulation(data)
    if len(data) < HEAD + 8:
        raise CdrError(f"{len(data)} bytes: too short for a builtin_interfaces/Time (12 bytes)")
    sec, nanosec = TIME.unpack_from(data, HEAD)
    return sec * NS_PER_S + nanosec



# --- the hot path: a JointState of known joints straight into a ring slot ----------------

def _unpadded_spans(names: Sequence[str], start: int) -> list[tuple[int, int]]:
    """(begin, end) offsets of the bytes of an encoded sequence<string> at ``start`` that are
    not alignment padding (count, then each length + text + NUL), adjacent ones merged."""
    spans = [(start, start + 4)]
    offset = start + 4
    for name in names:
        offset = align(offset, 4)
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
        names_at = align(HEAD + 12 + frame_len, 4)
        count_at = align(names_at + len(self._names_block), 4)
        first = align(count_at + 4, 8)
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
        if out.shape != self._shape or out.dtype != F64:
            raise ValueError(f"out must be a float64 array of shape {self._shape}, "
                             f"got {out.dtype} {out.shape}")
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(data)  # a memoryview has no startswith
        if not data.startswith(CDR_LE):
            check_encapsulation(data)  # raises, naming it
        size = len(data)
        if size < HEAD + 12:
            raise CdrError(f"{size} bytes: too short for a std_msgs/Header (at least 16 bytes)")
        sec, nanosec, frame_len = STAMP.unpack_from(data, HEAD)
        end = HEAD + 12 + frame_len
        if frame_len == 0 or end > size or data[end - 1] != 0 or (
                frame_len > 1 and not data[HEAD + 12:end - 1].isascii()):
            read_header(data)  # raises, naming what is wrong (or accepts a UTF-8 frame_id)
        layout = self._layouts.get(frame_len) or self._layout(frame_len)
        names_at, count_at, counts, first, last, strides, (unpadded, expected) = layout
        n = self.n_joints
        if data.startswith(self._names_block, names_at) or unpadded(data) == expected:
            # The common case: position, velocity and effort all have n values.
            if n and last <= size and counts.unpack_from(data, count_at) == (n, n, n):
                out[...] = np.ndarray(self._shape, F64, data, first, strides)
                return sec * NS_PER_S + nanosec
            offset = names_at + len(self._names_block)
        else:
            names, offset = read_strings(data, names_at, "name")
            if names != self.names:
                return None
        rows = []
        for what in ("position", "velocity", "effort"):
            count, first = read_count(data, align(offset, 4), 8, what)
            if count not in (n, 0) or (count == 0 and what == "position" and n):
                raise CdrError(f"{what} has {count} values for {n} joint names")
            rows.append((first, count))
            offset = first + 8 * count
        for row, (first, count) in zip(out, rows):
            row[...] = np.frombuffer(data, F64, n, first) if count else self._nan
        return sec * NS_PER_S + nanosec
