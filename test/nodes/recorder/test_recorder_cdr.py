"""The recorder takes joint_states and ground truth as raw CDR, decoded straight into its rings.

Proven three ways: in-process, the CDR path records exactly what the message-object path
records (same slots, stamps, counts, realignment), malformed bytes become a finding and never
an exception; over real DDS, a real RecorderNode's ring equals, bit for bit, what an rclpy
typed subscription received (another name order, empty velocity/effort, non-ASCII names);
and the real recorder process fails its verdict on a malformed message, with a clear line.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy
from rclpy.serialization import serialize_message
from recorder_runs import (
    N_STREAM,
    PUB_QOS,
    check,
    codes,
    events_for,
    failing,
    run_against_publisher,
    stream,
)
from sensor_msgs.msg import JointState
from spinning import Spinning
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import JointSpec, Spec, TopicSpec, split_stamp
from robogym_ros.nodes.recorder import cli as recorder_cli
from robogym_ros.nodes.recorder import node as rn
from robogym_ros.recorder.recording import GROUND_TRUTH, JOINT_STATES, Recording
from robogym_ros.recorder.ring import Ring
from robogym_ros.ros import qos
from robogym_ros.ros.node_runner import events_executor

DT_NS = 10_000_000
# Non-ASCII, of odd byte lengths, so the CDR padding between names varies.
NAMES = ["épaule_ø", "肘", "wrist", "grip_ü", "j5"]


def spec_of(names=NAMES, ns: str = "") -> Spec:
    def topic(name, typ):
        return TopicSpec(f"/{ns}/{name}", typ, DT_NS * 1e-9, contract.STREAM_QOS)

    return Spec(node=f"/{ns}/{contract.SIM_NODE}", joints=tuple(JointSpec(n) for n in names),
                control_dt_ns=DT_NS, decimation=1,
                topics={"joint_states": topic(contract.JOINT_STATES, "sensor_msgs/msg/JointState"),
                        "ground_truth_joints": topic(contract.TRUTH_JOINTS, "sensor_msgs/msg/JointState")})


def message(k: int, names=NAMES, *, velocity=True, effort=True) -> JointState:
    """Tick ``k``: distinct values per joint and tick, named by ``names`` (in that order)."""
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_stamp(k * DT_NS)
    msg.header.frame_id = "base"
    msg.name = list(names)
    base = [NAMES.index(n) if n in NAMES else 50 for n in names]
    msg.position = [np.sin(0.1 * k + j) for j in base]
    msg.velocity = [np.cos(0.1 * k + j) for j in base] if velocity else []
    msg.effort = [0.01 * k - j for j in base] if effort else []
    return msg


def variety(n_per_kind: int = 10) -> list[JointState]:
    """The spec's order; reversed (slow path); empty velocity and effort; a joint missing and one foreign."""
    other = NAMES[::-1]
    partial = NAMES[1:] + ["not_in_spec"]
    kinds = [dict(), dict(names=other), dict(velocity=False, effort=False), dict(names=partial),
             dict(effort=False), dict(names=other, velocity=False)]
    msgs, k = [], 1
    for kind in kinds:
        for _ in range(n_per_kind):
            msgs.append(message(k, **kind))
            k += 1
    return msgs


def realigned(msg: JointState) -> np.ndarray:
    """(3, n) of ``msg`` in the spec's order, NaN where it has no value: the expected slot."""
    out = np.full((3, len(NAMES)), np.nan)
    index = {n: i for i, n in enumerate(msg.name)}
    for row, field in enumerate((msg.position, msg.velocity, msg.effort)):
        for j, n in enumerate(NAMES):
            if len(field) and n in index:
                out[row, j] = field[index[n]]
    return out


def slots(rec_ring: Ring) -> tuple[np.ndarray, np.ndarray]:
    snap = rec_ring.snapshot()
    return snap.stamp_ns, np.stack([snap.position, snap.velocity, snap.effort], axis=1)


# ----------------------------------------------------------------------------- in process, no DDS

def test_cdr_path_records_exactly_what_the_message_path_records():
    msgs = variety()
    by_msg, by_cdr = Recording(spec_of(), 1000), Recording(spec_of(), 1000)
    for i, m in enumerate(msgs):
        if i == len(msgs) - 5:  # the last five arrive after the end: truth stored, joint_states only noted
            by_msg.end("test")
            by_cdr.end("test")
        data = serialize_message(m)
        by_msg.store_truth(m)
        by_msg.store_joint_state(m)
        assert by_cdr.store_truth_cdr(data) and by_cdr.store_joint_state_cdr(data)
    for ring in ("joints", "truth"):
        (s1, p1), (s2, p2) = slots(getattr(by_msg, ring)), slots(getattr(by_cdr, ring))
        assert s1.tolist() == s2.tolist()
        assert p1.tobytes() == p2.tobytes(), ring  # bit for bit, NaN included
    assert len(by_cdr.joints) == len(msgs) - 5 and len(by_cdr.truth) == len(msgs)
    expected = np.stack([realigned(m) for m in msgs[:-5]])
    assert slots(by_cdr.joints)[1].tobytes() == expected.tobytes()
    for attr in ("joint_stamps", "truth_stamps"):
        assert list(getattr(by_cdr, attr)) == list(getattr(by_msg, attr))
    assert by_cdr.foreign_names == by_msg.foreign_names == 2 * 30 - 5  # 3 kinds realigned, 2x (js + truth)
    assert (by_cdr.last_joint_ns, by_cdr.last_truth_ns) == (by_msg.last_joint_ns, by_msg.last_truth_ns)
    for stream_ in (JOINT_STATES, GROUND_TRUTH):
        a, b = by_msg.activity[stream_], by_cdr.activity[stream_]
        assert (a.n, a.after_end, a.first_stamp_ns, a.last_stamp_ns) == (b.n, b.after_end, b.first_stamp_ns,
                                                                          b.last_stamp_ns)
    assert by_cdr.activity[JOINT_STATES].after_end == 5
    assert len(by_cdr.recent) == len(by_msg.recent) == len(msgs) - 5
    assert by_cdr.malformed == {} and check_of(by_cdr, "decoding").ok


def check_of(rec: Recording, name: str):
    return next(r for r in rec.verdict().results if r.name == name)


def malformed_variants() -> dict[str, bytes]:
    good = serialize_message(message(3))
    return {"truncated": good[:-20], "empty": b"", "big endian": b"\x00\x00" + good[2:],
            "garbage": b"\x00\x01\x00\x00" + bytes(range(200, 256)),
            "3 positions for 5 names": serialize_message(
                _with(message(3), position=[1.0, 2.0, 3.0], velocity=[], effort=[])),
            "foreign names, no position": serialize_message(
                _with(message(3, NAMES[::-1]), position=[], velocity=[], effort=[]))}


def _with(msg: JointState, **fields) -> JointState:
    for k, v in fields.items():
        setattr(msg, k, v)
    return msg


@pytest.mark.parametrize("kind", list(malformed_variants()))
def test_malformed_cdr_is_counted_stores_nothing_and_never_raises(kind):
    rec = Recording(spec_of(), 100)
    for k in range(1, 6):
        assert rec.store_truth_cdr(serialize_message(message(k)))
        assert rec.store_joint_state_cdr(serialize_message(message(k)))
    before = (slots(rec.joints)[1].tobytes(), list(rec.joint_stamps), rec.activity[JOINT_STATES].n, len(rec.recent))
    assert check_of(rec, "decoding").ok  # the control: nothing malformed yet
    bad = malformed_variants()[kind]
    assert rec.store_joint_state_cdr(bad) is False
    assert rec.store_truth_cdr(bad) is False
    assert (slots(rec.joints)[1].tobytes(), list(rec.joint_stamps), rec.activity[JOINT_STATES].n,
            len(rec.recent)) == before
    verdict = rec.verdict()
    result = next(r for r in verdict.results if r.name == "decoding")
    assert result.status == "fail" and verdict.exit_code == 1
    assert [f.code for f in result.findings] == ["malformed_messages"] * 2
    assert result.figures["n_malformed"] == {JOINT_STATES: 1, GROUND_TRUTH: 1}
    assert result.findings[0].message.startswith("joint_states: 1 malformed message, lost; the first: ")
    assert rec.malformed[JOINT_STATES].first_error in result.findings[0].message


def test_only_malformed_joint_states_fail_the_verdict_and_say_so():
    rec = Recording(spec_of(), 100)
    rec.store_joint_state_cdr(b"\x00\x01\x00\x00")
    verdict = rec.verdict()
    assert verdict.exit_code == 1 and [r.name for r in verdict.results] == ["decoding"]
    assert "no joint_states could be decoded" in verdict.table()


class ScratchKeepingRing(Ring):
    """A faulty ring for the CDR path: keeps the rows it is handed (the recording's scratch)."""

    def __init__(self, capacity, n_joints):
        super().__init__(capacity, n_joints)
        self.kept: list[np.ndarray] = []

    def store_rows(self, stamp_ns, rows):
        self.kept.append(rows)
        return super().store_rows(stamp_ns, rows)

    def slots(self):
        return list(self.kept)


def test_buffer_audit_sees_a_ring_that_keeps_the_decode_scratch():
    """Positive control of the audit on the CDR path: the real ring passes, a keeping one fails."""
    msgs = [message(k) for k in range(1, 30)]
    results = {}
    for label, ring in (("copying", None), ("keeping", ScratchKeepingRing(1000, len(NAMES)))):
        rec = Recording(spec_of(), 1000)
        if ring is not None:
            rec.joints = ring
        for m in msgs:
            rec.store_truth_cdr(serialize_message(m))
            rec.store_joint_state_cdr(serialize_message(m))
        results[label] = check_of(rec, "buffer_audit")
    assert results["copying"].ok, results["copying"].summary
    assert "same_object" in {f.code for f in results["keeping"].findings}


# ----------------------------------------------------------------------------- real DDS

def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_live_recorder_ring_equals_what_rclpy_received_bit_for_bit(ros):
    """A real RecorderNode and a typed rclpy subscription on the same topics over real DDS."""
    from simharness import new_namespace
    ns = new_namespace("rec_cdr_")
    msgs = variety(n_per_kind=25)
    pub_node = rclpy.create_node("cdr_publisher", namespace=f"/{ns}")
    typed_node = rclpy.create_node("cdr_typed", namespace=f"/{ns}")
    recorder = rn.RecorderNode(recorder_cli.parse_args(["--capacity", "1000"]), namespace=f"/{ns}")
    typed = {JOINT_STATES: [], GROUND_TRUTH: []}
    for stream_, topic in ((JOINT_STATES, contract.JOINT_STATES), (GROUND_TRUTH, contract.TRUTH_JOINTS)):
        typed_node.create_subscription(JointState, topic, typed[stream_].append, rn.RECORD_QOS)
    spinner = Spinning(recorder, typed_node, executor=events_executor(), destroy=False)
    try:
        spec_pub = pub_node.create_publisher(String, f"{contract.SIM_NODE}/spec", qos.SPEC_QOS)
        spec_pub.publish(String(data=spec_of(ns=ns).to_json()))
        js = pub_node.create_publisher(JointState, contract.JOINT_STATES, PUB_QOS)
        gt = pub_node.create_publisher(JointState, contract.TRUTH_JOINTS, PUB_QOS)
        wait_for(lambda: js.get_subscription_count() >= 2 and gt.get_subscription_count() >= 2, 30,
                 "the recorder and the typed subscriber to subscribe")
        time.sleep(0.5)  # discovered is not yet matched on their side
        for k, m in enumerate(msgs, start=1):
            gt.publish(message(k))  # truth in the spec's order
            js.publish(m)
            time.sleep(0.001)
        rec = recorder.recording
        wait_for(lambda: len(typed[JOINT_STATES]) == len(msgs) == recorder.received
                 and len(typed[GROUND_TRUTH]) == len(rec.truth_stamps) == len(msgs), 30, "every message")
    finally:
        spinner.close()
        recorder.destroy_node()
        typed_node.destroy_node()
        pub_node.destroy_node()
    for stream_, ring in ((JOINT_STATES, rec.joints), (GROUND_TRUTH, rec.truth)):
        stamps, rows = slots(ring)
        got = typed[stream_]
        assert stamps.tolist() == [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in got]
        expected = np.stack([realigned(m) for m in got])
        assert rows.tobytes() == expected.tobytes(), stream_  # bit for bit, NaN where a field was empty
    assert [m.name for m in typed[JOINT_STATES]] == [m.name for m in msgs]  # the variety really went out
    assert rec.foreign_names == 3 * 25 and rec.malformed == {}
    assert np.isnan(slots(rec.joints)[1][50:75, 1:]).all()  # empty velocity/effort: NaN rows


# ----------------------------------------------------------------------------- the real recorder process

def malformed_run(tmp_path, long_ticks, *, fault: bool):
    physics, ticks = long_ticks
    base, items, _ = stream(ticks, None)
    events = events_for(physics.joint_names, base, items)
    if fault:  # one extra, truncated joint_states among the good ones (no tick lost, only it)
        at = [i for i, (kind, _) in enumerate(events) if kind == "js"][40]
        cut = serialize_message(events[at][1]())[:-30]
        events.insert(at + 1, ("js", lambda: cut))
    n_js = sum(kind == "js" for kind, _ in events)
    return run_against_publisher(tmp_path, physics, events, n_js, ns_tag="cdr_bad" if fault else "cdr_ok")


@pytest.mark.parametrize("fault", [False, True], ids=["clean", "malformed"])
def test_recorder_process_fails_on_a_malformed_joint_state_without_a_traceback(ros, long_ticks, tmp_path,
                                                                               fault):
    rc, out, verdict = malformed_run(tmp_path, long_ticks, fault=fault)  # asserts no traceback
    decoding = check(verdict, "decoding")
    if not fault:  # the positive control
        assert rc == 0 and verdict["status"] == "pass", out
        assert decoding["figures"]["n_malformed"] == {}
        assert decoding["figures"]["n_decoded"][JOINT_STATES] >= N_STREAM
        return
    assert rc == 1, out
    assert failing(verdict) == {"decoding": "fail"}, codes(verdict)  # nothing else was lost
    assert decoding["figures"]["n_malformed"] == {JOINT_STATES: 1}
    assert "past the end" in decoding["figures"]["first_error"][JOINT_STATES]
    assert "robogym_recorder verdict: FAIL (exit 1)" in out
    assert "[decoding] joint_states: 1 malformed message, lost; the first: " in out
    assert "a joint_states message is malformed and is lost" in out  # said live, once
    assert check(verdict, "tick_grid")["figures"]["n_dropped"] == 0


# --- images, raw: metadata, digest and pixels as from the message object; malformed is a finding

def test_an_image_taken_raw_is_stored_as_the_message_object_would_be():
    from sensor_msgs.msg import Image
    by_msg = Recording(spec_of(), 10, pixel_budget_bytes=10_000_000)
    by_cdr = Recording(spec_of(), 10, pixel_budget_bytes=10_000_000)
    rng = np.random.default_rng(3)
    for k, (w, h, frame_id) in enumerate([(7, 5, "cam_optical_frame"), (320, 240, "ø"), (1, 1, "")]):
        img = Image(height=h, width=w, encoding="rgb8", step=3 * w)
        img.header.stamp.sec, img.header.stamp.nanosec = split_stamp((k + 1) * DT_NS)
        img.header.frame_id = frame_id
        img.data = rng.integers(0, 256, 3 * w * h, dtype=np.uint8).tobytes()
        by_msg.store_image(img, "overhead")
        assert by_cdr.store_image_cdr(serialize_message(img), "overhead")
    assert by_cdr.images.metas() == by_msg.images.metas()
    for meta in by_msg.images.metas():
        np.testing.assert_array_equal(by_cdr.images.pixels(meta.stamp_ns, "overhead"),
                                      by_msg.images.pixels(meta.stamp_ns, "overhead"))
    assert by_cdr.decoding_result().status == "pass"
    # a truncated image: nothing stored, a decoding finding naming the camera's stream
    assert not by_cdr.store_image_cdr(serialize_message(img)[:40], "overhead")
    assert len(by_cdr.images.metas()) == 3
    result = by_cdr.decoding_result()
    assert result.status == "fail" and "cameras/overhead/image_raw: 1 malformed message" in result.findings[0].message
