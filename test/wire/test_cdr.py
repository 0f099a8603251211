"""The recorder's CDR decoder (robogym_ros.wire.cdr) against rclpy's deserialisation.

Messages are serialized by two independent serializers: rclpy (the C typesupport, which
leaves stray bytes in padding and after the message) and rosbags (zero padding, exact
length, as DDS delivers them). Every field decoded here must equal what rclpy's
``deserialize_message`` makes of the same bytes, bit for bit. Malformed bytes must raise
CdrError and nothing else, and leave the output untouched. The live counterpart (real sim,
real DDS, raw subscription) is test/wire/test_cdr_live.py.
"""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, PoseArray
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import Image, JointState

from robogym_ros.contract import POSE_LAYOUT
from robogym_ros.wire import decode, encode
from robogym_ros.wire.cdr import CdrError, align
from robogym_ros.wire.decode import JointStateDecoder, decode_joint_state

TYPESTORE = get_typestore(Stores.ROS2_KILTED)
ODD_NAMES = ["a", "épaule_ü", "關節_3", "grip🤖", "x" * 300, "", "left_shoulder_pan"]
SPECIAL = [0.0, -0.0, 1.5, -2.25, math.pi, 5e-324, 1e308, math.inf, -math.inf, math.nan]


def joint_state(n: int, *, velocity=True, effort=True, frame_id="", sec=12, nanosec=340_000_000,
                names=None, seed=0) -> JointState:
    rng = random.Random(seed)
    msg = JointState()
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    msg.header.frame_id = frame_id
    msg.name = list(names) if names is not None else [
        (ODD_NAMES[i % len(ODD_NAMES)] + f"_{i}") for i in range(n)]
    values = lambda: [SPECIAL[rng.randrange(len(SPECIAL))] if rng.random() < 0.3  # noqa: E731
                      else rng.uniform(-4, 4) for _ in range(n)]
    msg.position = values()
    msg.velocity = values() if velocity else []
    msg.effort = values() if effort else []
    return msg


def rosbags_bytes(msg: JointState) -> bytes:
    """The same message serialized by rosbags: zero padding, no trailing bytes."""
    ros = TYPESTORE.types["sensor_msgs/msg/JointState"]
    header = TYPESTORE.types["std_msgs/msg/Header"]
    stamp = TYPESTORE.types["builtin_interfaces/msg/Time"]
    m = ros(header=header(stamp=stamp(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec),
                          frame_id=msg.header.frame_id),
            name=list(msg.name), position=np.array(msg.position, np.float64),
            velocity=np.array(msg.velocity, np.float64), effort=np.array(msg.effort, np.float64))
    return bytes(TYPESTORE.serialize_cdr(m, "sensor_msgs/msg/JointState"))


def same_bits(a, b) -> bool:
    return np.asarray(a, np.float64).tobytes() == np.asarray(b, np.float64).tobytes()


def assert_equals_rclpy(data: bytes) -> None:
    ref = deserialize_message(data, JointState)
    got = decode_joint_state(data)
    assert got.stamp_ns == ref.header.stamp.sec * 10**9 + ref.header.stamp.nanosec
    assert got.frame_id == ref.header.frame_id
    assert list(got.name) == list(ref.name)
    for field in ("position", "velocity", "effort"):
        assert same_bits(getattr(got, field), getattr(ref, field)), field
    # The hot path: the same numbers, straight into a (3, n) row; empty fields are NaN rows.
    n = len(ref.name)
    out = np.full((3, n), 7.0)
    assert JointStateDecoder(ref.name).decode_into(data, out) == got.stamp_ns
    for row, field in zip(out, ("position", "velocity", "effort")):
        values = getattr(ref, field)
        assert same_bits(row, values if len(values) else np.full(n, np.nan)), field


CASES = [
    dict(n=n, velocity=v, effort=e, frame_id="f" * k, seed=n * 31 + k)
    for n, (v, e), k in itertools.product(
        (0, 1, 2, 3, 7, 12, 40), ((True, True), (False, False), (True, False), (False, True)), (0, 1, 2, 3, 5, 8))
    if n or (v and e)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"n{c['n']}-v{int(c['velocity'])}"
                         f"e{int(c['effort'])}-frame{len(c['frame_id'])}")
def test_every_field_equals_rclpy_for_both_serializers(case):
    msg = joint_state(**case)
    for data in (serialize_message(msg), rosbags_bytes(msg)):
        assert_equals_rclpy(data)


@pytest.mark.parametrize("stamp", [(0, 0), (1, 999_999_999), (-5, 3), (2**31 - 1, 999_999_999),
                                   (-2**31, 0)])
def test_stamps_at_the_ends_of_their_range(stamp):
    msg = joint_state(3, sec=stamp[0], nanosec=stamp[1], frame_id="world")
    assert_equals_rclpy(serialize_message(msg))
    assert decode_joint_state(serialize_message(msg)).stamp_ns == stamp[0] * 10**9 + stamp[1]


def test_non_ascii_and_long_names_and_frame_ids():
    names = ["épaule", "關節", "🤖" * 40, "n" * 1000, "a b\tc"]
    msg = joint_state(len(names), names=names, frame_id="cadre_é_🤖")
    for data in (serialize_message(msg), rosbags_bytes(msg)):
        assert_equals_rclpy(data)
        assert decode_joint_state(data).name == tuple(names)


def test_matching_names_are_checked_as_bytes_without_decoding_strings(monkeypatch):
    """Zero padding (as DDS delivers) and rclpy's padding (left uninitialised, so any bytes)
    both take the byte comparison: no string is built. Positive control: names that differ
    in one byte take the string path."""
    msg = joint_state(12, frame_id="abc")
    decoder = JointStateDecoder(msg.name)
    calls = []
    real = decode.read_strings
    monkeypatch.setattr(decode, "read_strings", lambda *a: (calls.append(1), real(*a))[1])
    out = np.empty((3, 12))
    decoder.decode_into(rosbags_bytes(msg), out)
    assert calls == []
    assert same_bits(out[0], msg.position)
    padded = bytearray(rosbags_bytes(msg))
    offset = align(4 + 12 + len("abc") + 1, 4) + 4  # the names' count, then the first name
    garbage = 0
    for name in msg.name:
        offset += 4 + len(name.encode()) + 1
        for _ in range(-offset % 4):  # the padding before the next length
            padded[offset] = 0xA5
            offset, garbage = offset + 1, garbage + 1
    assert garbage and bytes(padded) != rosbags_bytes(msg)
    out[...] = 0
    decoder.decode_into(bytes(padded), out)
    assert calls == []
    assert same_bits(out[0], msg.position)
    other = joint_state(12, frame_id="abc")
    other.name = [msg.name[0][:-1] + "X"] + list(msg.name[1:])
    assert decoder.decode_into(rosbags_bytes(other), out) is None
    assert calls == [1]


@pytest.mark.parametrize("n", [1, 2, 12, 40])
def test_full_fields_take_the_one_copy_path_for_every_frame_id_length(n, monkeypatch):
    """Zero padding and position, velocity, effort all full (what the sim sends): one strided
    copy, whatever the alignment frame_id leaves; the field-by-field path is never entered."""
    monkeypatch.setattr(decode, "read_count", lambda *a: pytest.fail("field-by-field path taken"))
    decoder = JointStateDecoder(joint_state(n).name)
    for k in range(9):
        msg = joint_state(n, frame_id="f" * k, seed=k)
        out = np.empty((3, n))
        assert decoder.decode_into(rosbags_bytes(msg), out) is not None
        assert same_bits(out, [msg.position, msg.velocity, msg.effort])


def test_other_names_return_none_and_write_nothing():
    msg = joint_state(4)
    data = rosbags_bytes(msg)
    for names in (list(reversed(msg.name)), msg.name[:3], msg.name + ["extra"], ["a", "b", "c", "d"]):
        out = np.full((3, len(names)), 7.0)
        assert JointStateDecoder(names).decode_into(data, out) is None
        assert np.all(out == 7.0)


def test_a_field_of_the_wrong_length_is_a_cdr_error_that_names_it():
    msg = joint_state(3)
    msg.velocity = [1.0, 2.0]
    out = np.full((3, 3), 7.0)
    with pytest.raises(CdrError, match="velocity has 2 values for 3 joint names"):
        JointStateDecoder(msg.name).decode_into(rosbags_bytes(msg), out)
    assert np.all(out == 7.0)


def test_out_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        JointStateDecoder(["a", "b"]).decode_into(rosbags_bytes(joint_state(2)), np.empty((3, 3)))


# --- other message types -------------------------------------------------------------------

@pytest.mark.parametrize("k,frame", [(0, "world"), (1, ""), (2, "world"), (5, "abcdef")])
def test_pose_array_equals_rclpy_in_pose_layout_order(k, frame):
    msg = PoseArray()
    msg.header.stamp = Time(sec=3, nanosec=50)
    msg.header.frame_id = frame
    rng = np.random.default_rng(k)
    for _ in range(k):
        p = Pose()
        p.position.x, p.position.y, p.position.z = rng.normal(size=3).tolist()
        p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = rng.normal(size=4).tolist()
        msg.poses.append(p)
    data = serialize_message(msg)
    ref = deserialize_message(data, PoseArray)
    stamp, frame_id, poses = decode.decode_pose_array(data)
    assert (stamp, frame_id) == (3 * 10**9 + 50, frame)
    assert poses.shape == (k, 7)
    assert POSE_LAYOUT == ("x", "y", "z", "qw", "qx", "qy", "qz")
    for row, p in zip(poses, ref.poses):
        o = p.orientation
        assert row.tolist() == [p.position.x, p.position.y, p.position.z, o.w, o.x, o.y, o.z]


@pytest.mark.parametrize("w,h,enc,frame", [(4, 3, "rgb8", "cam_optical_frame"), (0, 0, "", ""),
                                           (5, 1, "mono8", "ab"), (2, 2, "bgra8", "abc")])
def test_image_fields_equal_rclpy_and_the_pixels_are_a_view(w, h, enc, frame):
    msg = Image(height=h, width=w, encoding=enc, is_bigendian=1, step=3 * w)
    msg.header.stamp = Time(sec=7, nanosec=8)
    msg.header.frame_id = frame
    msg.data = bytes(range(256))[:3 * w * h]
    data = serialize_message(msg)
    ref = deserialize_message(data, Image)
    got = decode.decode_image(data)
    assert (got.stamp_ns, got.frame_id, got.height, got.width, got.encoding, got.is_bigendian, got.step) == (
        7 * 10**9 + 8, ref.header.frame_id, ref.height, ref.width, ref.encoding, ref.is_bigendian, ref.step)
    assert bytes(got.pixels(data)) == bytes(ref.data)
    assert decode.decode_header(data) == (7 * 10**9 + 8, frame)


# --- malformed bytes: CdrError, never anything else, and nothing written -------------------

def decode_all(data: bytes, names) -> None:
    """Every entry point on the same bytes; each must raise CdrError or succeed."""
    out = np.full((3, len(names)), 7.0)
    try:
        stamp = JointStateDecoder(names).decode_into(data, out)
    except CdrError:
        assert np.all(out == 7.0), "decode_into wrote part of a message it then rejected"
        with pytest.raises(CdrError):
            decode_joint_state(data)
        return
    if stamp is None:  # other names: nothing written, the rest left to decode_joint_state
        assert np.all(out == 7.0)
        try:
            decode_joint_state(data)
        except CdrError:
            pass
        return
    full = decode_joint_state(data)  # what decode_into accepted is a whole, valid message
    assert full.stamp_ns == stamp and full.name == tuple(names)
    assert same_bits(out[0], full.position)


def test_every_truncation_is_a_cdr_error():
    for msg in (joint_state(3, frame_id="ab"), joint_state(1, velocity=False), joint_state(0, frame_id="x")):
        data = rosbags_bytes(msg)
        for cut in range(len(data)):
            out = np.full((3, len(msg.name)), 7.0)
            with pytest.raises(CdrError):
                JointStateDecoder(msg.name).decode_into(data[:cut], out)
            assert np.all(out == 7.0)
            with pytest.raises(CdrError):
                decode_joint_state(data[:cut])


def patched(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def test_lengths_past_the_end_are_cdr_errors_that_say_so():
    msg = joint_state(2, frame_id="abc", names=["j0", "j1"])
    data = rosbags_bytes(msg)
    # offsets (absolute): frame_id length at 12, name count at 20, first name's length at 24,
    # position count at 40 (two names of 3 bytes each: 24..31, 32..39)
    huge = (0xFFFFFFFF).to_bytes(4, "little")
    cases = {12: "header.frame_id at byte 12 claims 4294967295 bytes",
             20: "name claims 4294967295 strings",
             24: r"name\[0\] at byte 24 claims 4294967295 bytes",
             40: "position at byte 40 claims 4294967295 elements"}
    assert data[40:44] == (2).to_bytes(4, "little")
    for offset, message in cases.items():
        bad = patched(data, offset, huge)
        with pytest.raises(CdrError, match=message):
            decode_joint_state(bad)
        decode_all(bad, msg.name)


@pytest.mark.parametrize("head,name", [(b"\x00\x00", "CDR_BE"), (b"\x00\x07", "CDR2_LE"),
                                       (b"\x00\x03", "PL_CDR_LE"), (b"\xab\xcd", "0xabcd")])
def test_a_wrong_encapsulation_is_named(head, name):
    data = patched(rosbags_bytes(joint_state(2)), 0, head)
    with pytest.raises(CdrError, match=f"encapsulation .*{name}.* not supported; expected CDR_LE"):
        decode_joint_state(data)
    decode_all(data, joint_state(2).name)


def test_strings_without_nul_empty_or_not_utf8_are_cdr_errors():
    msg = joint_state(1, frame_id="abc", names=["j0"])
    data = rosbags_bytes(msg)
    with pytest.raises(CdrError, match="header.frame_id at byte 12 does not end in NUL"):
        decode_joint_state(patched(data, 19, b"x"))
    with pytest.raises(CdrError, match="header.frame_id at byte 12 has length 0"):
        decode_joint_state(patched(data, 12, b"\x00\x00\x00\x00"))
    with pytest.raises(CdrError, match=r"name\[0\] at byte 24 is not UTF-8"):
        decode_joint_state(patched(data, 28, b"\xff"))
    for bad in (patched(data, 19, b"x"), patched(data, 12, b"\x00" * 4), patched(data, 28, b"\xff")):
        decode_all(bad, msg.name)
    # A zero length where every following byte is 0 would otherwise read as a valid message.
    empty = patched(rosbags_bytes(joint_state(0)), 12, b"\x00" * 4)
    with pytest.raises(CdrError, match="has length 0"):
        JointStateDecoder([]).decode_into(empty, np.empty((3, 0)))


def test_random_corruption_raises_cdr_error_or_decodes_never_anything_else():
    rng = random.Random(1)
    msgs = [joint_state(n, velocity=n % 2 == 0, frame_id="w" * (n % 4), seed=n) for n in (0, 1, 3, 12)]
    for msg in msgs:
        data = rosbags_bytes(msg)
        for _ in range(400):
            bad = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            decode_all(bytes(bad), msg.name)
        for _ in range(100):
            decode_all(bytes(rng.randrange(256) for _ in range(rng.randrange(64))), msg.name)


# --- encoding (what the sim node publishes as bytes) ---------------------------------------

@pytest.mark.parametrize("case", CASES[::3], ids=lambda c: f"n{c['n']}-v{int(c['velocity'])}"
                         f"e{int(c['effort'])}-frame{len(c['frame_id'])}")
def test_encoded_joint_state_is_byte_for_byte_rosbags_and_reads_back_in_rclpy(case):
    msg = joint_state(**case)
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    data = encode.JointStateEncoder(msg.name, msg.header.frame_id).encode(
        stamp, np.array(msg.position), np.array(msg.velocity), np.array(msg.effort))
    assert data == rosbags_bytes(msg)
    back = deserialize_message(data, JointState)
    assert back.header == msg.header and list(back.name) == list(msg.name)
    for field in ("position", "velocity", "effort"):
        assert same_bits(getattr(back, field), getattr(msg, field))


def test_encoded_joint_state_with_non_ascii_names_and_frame():
    names = ["épaule", "關節", "🤖" * 3]
    msg = joint_state(3, names=names, frame_id="cadre_é", sec=-3, nanosec=7)
    data = encode.JointStateEncoder(names, "cadre_é").encode(-3 * 10**9 + 7, np.array(msg.position),
                                                           np.array(msg.velocity), np.array(msg.effort))
    assert data == rosbags_bytes(msg)
    assert_equals_rclpy(data)


def test_every_encode_is_a_new_bytes_object():
    enc = encode.JointStateEncoder(["a", "b"])
    q = np.array([1.0, 2.0])
    first, second = enc.encode(10, q, q, q), enc.encode(10, q, q, q)
    assert first == second and first is not second
    with pytest.raises(ValueError, match="3 values for 2 joint names"):
        enc.encode(10, np.zeros(3), q, q)


@pytest.mark.parametrize("k,frame", [(0, "world"), (1, ""), (2, "world"), (3, "abcdefg")])
def test_encoded_pose_array_reads_back_in_rclpy(k, frame):
    poses = np.random.default_rng(k).normal(size=(k, 7))  # x y z qw qx qy qz
    data = encode.PoseArrayEncoder(frame).encode(5 * 10**9 + 6, poses)
    msg = deserialize_message(data, PoseArray)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (5, 6, frame)
    got = [[p.position.x, p.position.y, p.position.z, p.orientation.w, p.orientation.x,
            p.orientation.y, p.orientation.z] for p in msg.poses]
    assert got == poses.tolist()
    t = TYPESTORE.types
    ros = t["geometry_msgs/msg/PoseArray"](
        header=t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=5, nanosec=6), frame_id=frame),
        poses=[t["geometry_msgs/msg/Pose"](position=t["geometry_msgs/msg/Point"](x=x, y=y, z=z),
                                           orientation=t["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw))
               for x, y, z, qw, qx, qy, qz in poses.tolist()])
    assert data == bytes(TYPESTORE.serialize_cdr(ros, "geometry_msgs/msg/PoseArray"))
    stamp, frame_id, back = decode.decode_pose_array(data)
    assert (stamp, frame_id, back.tolist()) == (5 * 10**9 + 6, frame, poses.tolist())


def test_encoded_time_reads_back_as_a_clock():
    from rosgraph_msgs.msg import Clock
    msg = deserialize_message(encode.encode_time(12 * 10**9 + 345), Clock)
    assert (msg.clock.sec, msg.clock.nanosec) == (12, 345)


@pytest.mark.parametrize("w,h,enc,frame", [(4, 3, "rgb8", "cam_optical_frame"), (1, 1, "mono8", ""),
                                           (5, 2, "bgra8", "ab"), (0, 0, "rgb8", "abc")])
def test_encoded_image_is_byte_for_byte_rosbags_and_reads_back_in_rclpy(w, h, enc, frame):
    channels = {"rgb8": 3, "mono8": 1, "bgra8": 4}[enc]
    pixels = np.random.default_rng(w).integers(0, 256, (h, w, channels), dtype=np.uint8)
    data = encode.ImageEncoder(frame, h, w, enc, w * channels).encode(9 * 10**9 + 1, pixels)
    t = TYPESTORE.types
    ros = t["sensor_msgs/msg/Image"](
        header=t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=9, nanosec=1), frame_id=frame),
        height=h, width=w, encoding=enc, is_bigendian=0, step=w * channels, data=pixels.ravel())
    assert data == bytes(TYPESTORE.serialize_cdr(ros, "sensor_msgs/msg/Image"))
    msg = deserialize_message(data, Image)
    assert (msg.height, msg.width, msg.encoding, msg.step, msg.header.frame_id) == (h, w, enc, w * channels, frame)
    assert bytes(msg.data) == pixels.tobytes()
    with pytest.raises(ValueError, match="contiguous bytes"):
        encode.ImageEncoder(frame, h, w, enc, w * channels).encode(0, np.zeros(h * w * channels + 1, np.uint8))


@pytest.mark.parametrize("model,d", [("equidistant", [0.0] * 4), ("plumb_bob", [0.1, -0.2, 0.0, 0.0, 0.3]),
                                     ("", [])])
def test_encoded_camera_info_is_byte_for_byte_rosbags_and_reads_back_in_rclpy(model, d):
    from sensor_msgs.msg import CameraInfo
    k, r, p = np.arange(9.0) + 0.5, np.eye(3).ravel(), np.arange(12.0) - 3
    data = encode.CameraInfoEncoder("cam_optical_frame", 240, 320, model, d, k, r, p).encode(3 * 10**9 + 4)
    t = TYPESTORE.types
    ros = t["sensor_msgs/msg/CameraInfo"](
        header=t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=3, nanosec=4),
                                        frame_id="cam_optical_frame"),
        height=240, width=320, distortion_model=model, d=np.array(d, np.float64), k=k, r=r, p=p,
        binning_x=0, binning_y=0,
        roi=t["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
    assert data == bytes(TYPESTORE.serialize_cdr(ros, "sensor_msgs/msg/CameraInfo"))
    msg = deserialize_message(data, CameraInfo)
    assert (msg.height, msg.width, msg.distortion_model, list(msg.d)) == (240, 320, model, d)
    assert list(msg.k) == k.tolist() and list(msg.r) == r.tolist() and list(msg.p) == p.tolist()
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (3, 4)
