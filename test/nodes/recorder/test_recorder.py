"""robogym_recorder at the node/system level: the real recorder process against a faulty
publisher (an rclpy node in this process, publishing real physics ticks with one injected
fault) and against the real sim + motion node.

Every check gets a positive control: it fails on its fault, naming it, and passes without.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from faulty_rings import VIEW_RING, ReferenceRing, ViewRing
from mcap.reader import make_reader
from recorder_runs import (
    DECIMATION,
    FIRST,
    N_STREAM,
    FaultyPublisher,
    RecorderRun,
    assert_no_traceback,
    check,
    codes,
    events_for,
    failing,
    finding,
    fresh_ns,
    js_item,
    make_spec,
    recorder,
    run_against_publisher,
    stream,
)
from sensor_msgs.msg import JointState
from simharness import SimProcessUnderTest

from robogym_ros import checks
from robogym_ros.nodes.motion.scripted_motion import targets_at
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.recorder.bag.reader import read_bag
from robogym_ros.recorder.bag.writer import BagWriter
from robogym_ros.recorder.recording import Recording
from robogym_ros.ros import stamps as ros_stamps
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path

N_TICKS = 300  # physics ticks made once per module (3 s of sim time at 10 ms)





# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def physics_ticks():
    """Real ticks of the two-arm scene driven along the scripted motion."""
    physics = Physics(default_model_path(), 0.002, DECIMATION, seed=0)
    ticks = []
    for k in range(N_TICKS):
        physics.set_targets(targets_at(k * physics.control_dt_s))
        assert not physics.step_tick()
        ticks.append(physics.snapshot())
    return physics, ticks




















# ----------------------------------------------------------------------------- streams









# ----------------------------------------------------------------------------- the clean control

@pytest.fixture(scope="module")
def clean_recording(ros, physics_ticks, tmp_path_factory):
    """The fault-free faulty publisher, recorded with --record: the control for every fault."""
    physics, ticks = physics_ticks
    tmp = tmp_path_factory.mktemp("clean")
    bag = tmp / "clean_bag"
    base, items, _ = stream(ticks, None)
    rc, out, verdict = run_against_publisher(tmp, physics, events_for(physics.joint_names, base, items),
                                             len(items), "--record", str(bag), "--report", str(tmp / "report"),
                                             ns_tag="clean")
    return rc, out, verdict, bag


def test_clean_publisher_passes_every_check_and_records_a_bag(clean_recording):
    rc, out, verdict, bag = clean_recording
    assert rc == 0, out
    page = bag.parent / "report" / "report.html"  # --report, live: written after the verdict
    assert f"report: {page}" in out and 'id="verdict-status">PASS<' in page.read_text()
    assert verdict["status"] == "pass" and codes(verdict) == [], out
    names = {c["name"] for c in verdict["checks"]}
    assert {"tick_grid", "slot_error", "aliasing", "stale_payload", "velocity_fd", "velocity_reported",
            "buffer_audit"} <= names
    grid = check(verdict, "tick_grid")["figures"]
    assert grid["n_received"] == N_STREAM and grid["n_dropped"] == 0
    assert grid["slots_outside_truth_span"] == 0
    assert check(verdict, "slot_error")["figures"]["oldest_error"] == 0.0
    vel = check(verdict, "velocity_fd")["figures"]
    assert vel["n_moving_joints"] == 12  # the stream really moves: the checks have something to see
    assert f"bag: {bag} (mcap)" in out and "robogym_recorder verdict: PASS (exit 0)" in out


def test_record_then_bag_round_trip_passes(clean_recording, tmp_path):
    _, _, live, bag = clean_recording
    data = read_bag(bag)
    assert len(data.joint_states) == N_STREAM and len(data.ground_truth) == N_STREAM
    assert data.spec is not None and data.spec.decimation == DECIMATION
    rc, out, offline = recorder(tmp_path, "--bag", str(bag))
    assert_no_traceback(out)
    assert rc == 0, out
    assert offline["status"] == "pass" and codes(offline) == []
    # The same data gives the same figures offline as live (the live run adds buffer_audit).
    for name in ("tick_grid", "slot_error", "velocity_reported"):
        assert check(offline, name)["figures"] == check(live, name)["figures"], name


# ----------------------------------------------------------------------------- faults 3..7

@pytest.mark.parametrize("fault,check_name,code", [
    ("drop", "tick_grid", "dropped_ticks"),
    ("duplicate", "tick_grid", "duplicated_ticks"),
    ("reorder", "tick_grid", "reordered_ticks"),
    ("stale_payload", "stale_payload", "stale_payload"),
    ("velocity_x_decimation", "velocity_reported", "velocity_factor_decimation"),
])
@pytest.mark.long
def test_fault_in_joint_states_is_found_and_named(ros, physics_ticks, tmp_path, fault, check_name, code):
    physics, ticks = physics_ticks
    base, items, stamp_ns = stream(ticks, fault)
    rc, out, verdict = run_against_publisher(tmp_path, physics, events_for(physics.joint_names, base, items),
                                             len(items), "--report", str(tmp_path / "report"), ns_tag=fault[:5])
    assert rc == 1, out
    assert verdict["status"] == "fail" and verdict["exit_code"] == 1
    page = (tmp_path / "report" / "report.html").read_text()  # the report marks the failed check
    assert 'id="verdict-status">FAIL<' in page and f'<tr class="fail" id="check-{check_name}">' in page
    f = finding(verdict, check_name, code)
    stamp_txt = checks.fmt_s(stamp_ns)  # "1.810 s"
    if fault in ("drop", "duplicate"):
        assert f["figures"]["stamps_ns"] == [stamp_ns]
        assert stamp_txt in f["message"], f["message"]
        assert set(failing(verdict)) == {"tick_grid"}, codes(verdict)
    elif fault == "reorder":
        # The later tick overtook it: the earlier one is the one that arrived out of order.
        assert f["figures"]["stamps_ns"] == [stamp_ns]
        assert f"{stamp_txt} arrived after {checks.fmt_s(stamp_ns + physics.control_dt_ns)}" in f["message"]
        assert set(failing(verdict)) == {"tick_grid"}, codes(verdict)
    elif fault == "stale_payload":
        assert f["figures"]["stale_stamps_ns"] == [stamp_ns]
        assert stamp_txt in f["message"]
        # The same slot is off against its own truth, and slot_error says so too.
        slot = finding(verdict, "slot_error", "slot_error")
        assert slot["figures"]["max_error"] > 1e-4 and slot["figures"]["oldest_error"] == 0.0
        assert set(failing(verdict)) == {"stale_payload", "slot_error"}, codes(verdict)
        assert check(verdict, "tick_grid")["status"] == "pass"
    else:
        assert "5.00x = decimation (5)" in f["message"], f["message"]
        assert f["figures"]["factor"] == pytest.approx(5.0, rel=1e-6)
        assert set(failing(verdict)) == {"velocity_reported"}, codes(verdict)
    assert f"[{check_name}] {f['message']}" in out  # the table prints the finding


# ----------------------------------------------------------------------------- fault 1: the ROS table

@pytest.mark.parametrize("n", [4, 8])
def test_publisher_that_reuses_one_message_keeps_aliases_but_the_recorder_gets_copies(
        ros, physics_ticks, tmp_path, n):
    """One JointState mutated and published n times, kept in a list (rclpy copies on publish).

    Joint 0 moves 0.25 rad per tick, dt 0.125 s (2 rad/s). The publisher's own list ends
    with every slot equal to the last value (oldest-slot error 0.25 * (n - 1)); what the
    recorder received is right, because publish copies the data synchronously.
    """
    physics, _ = physics_ticks
    names = physics.joint_names
    dt_ns = 125_000_000
    ns = fresh_ns("ros_table")
    spec = make_spec(ns, physics, control_dt_ns=dt_ns)
    true_pos = np.zeros((n, len(names)))
    true_pos[:, 0] = 0.25 * np.arange(1, n + 1)
    true_vel = np.zeros((n, len(names)))
    true_vel[:, 0] = 2.0
    stamps = dt_ns * np.arange(1, n + 1)

    reused = JointState()
    reused.name = list(names)
    reused.position = [0.0] * len(names)
    reused.velocity = [0.0] * len(names)
    own_list: list[JointState] = []

    def truth(k):
        msg = JointState(name=list(names), position=true_pos[k].tolist(), velocity=true_vel[k].tolist())
        msg.header.stamp = ros_stamps.stamp_msg(int(stamps[k]))
        return msg

    def mutate(k):
        reused.header.stamp = ros_stamps.stamp_msg(int(stamps[k]))
        reused.position[0] += 0.25  # in place: the same message object every tick
        reused.velocity[0] = 2.0
        own_list.append(reused)
        return reused

    events = []
    for k in range(n):
        events += [("gt", lambda k=k: truth(k)), ("js", lambda k=k: mutate(k))]
    pub = FaultyPublisher(ns, spec)
    run = RecorderRun(tmp_path, "--ticks", str(n), ns=ns)
    try:
        pub.wait_matched(run)
        pub.publish(events)
        rc, out, verdict = run.wait()
    finally:
        run.stop()
        pub.close()
    assert_no_traceback(out)

    # The publisher's side: its list is n references to one message, all at the last value.
    assert len({id(m) for m in own_list}) == 1
    assert [m.position[0] for m in own_list] == [0.25 * n] * n
    assert {ros_stamps.stamp_ns(m.header.stamp) for m in own_list} == {int(stamps[-1])}
    own = {r.name: r for r in checks.audit_observations(
        stamps, [m.position for m in own_list], stamps, true_pos, control_dt_ns=dt_ns,
        decimation=DECIMATION)}
    slot = own["slot_error"].figures
    assert slot["oldest_error"] == pytest.approx(0.25 * (n - 1))
    assert slot["newest_error"] == 0.0
    table = slot["slot_table"]
    assert [row["true"] for row in table] == pytest.approx((0.25 * np.arange(1, n + 1)).tolist())
    assert [row["stored"] for row in table] == pytest.approx([0.25 * n] * n)
    assert slot["slot_table_means"]["true"] == pytest.approx(0.125 * (n + 1))  # 0.625 for n = 4
    assert slot["slot_table_means"]["stored"] == pytest.approx(0.25 * n)  # 1.0 for n = 4
    assert "a test of the newest slot alone would pass" in own["slot_error"].findings[0].message
    assert [f.code for f in own["aliasing"].findings] == ["every_slot_newest"]
    assert [f.code for f in own["buffer_audit"].findings] == ["same_object"]
    fd = own["velocity_fd"]
    assert [f.code for f in fd.findings] == ["fd_velocity_zero"]
    assert fd.figures["estimate_mean"] == 0.0  # finite-difference velocity 2 rad/s becomes 0
    assert fd.figures["gain_range"] == [0.0, 0.0]

    # The recorder's side: what arrived is right.
    assert rc == 0, out
    assert verdict["status"] == "pass" and codes(verdict) == []
    received = check(verdict, "slot_error")["figures"]
    assert received["oldest_error"] == 0.0 and received["max_error"] == 0.0 and received["n_matched"] == n
    assert [row["stored"] for row in received["slot_table"]] == pytest.approx(
        (0.25 * np.arange(1, n + 1)).tolist())
    assert check(verdict, "aliasing")["figures"]["n_holding_newest"] == 0
    fd_live = check(verdict, "velocity_fd")["figures"]
    assert fd_live["gain_range"][0] == pytest.approx(1.0) and fd_live["gain_range"][1] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- fault 2: a buffer of views

def feed(recording: Recording, ticks, names, *, reuse: bool) -> None:
    """Ticks as the subscriber callback would hand them over: fresh messages, or one reused."""
    shared = None
    for t in ticks:
        recording.store_truth(tick_messages.joint_state(t, names))
        if reuse:
            if shared is None:
                shared = tick_messages.joint_state(t, names)
            shared.header.stamp = ros_stamps.stamp_msg(t.stamp_ns)
            for field, values in ((shared.position, t.position), (shared.velocity, t.velocity),
                                  (shared.effort, t.effort)):
                field[:] = type(field)("d", values.tolist())  # in place, same array object
            recording.store_joint_state(shared)
        else:
            recording.store_joint_state(tick_messages.joint_state(t, names))


def test_a_ring_of_views_fails_buffer_audit_and_aliasing_the_real_ring_passes(physics_ticks):
    physics, ticks = physics_ticks
    names = physics.joint_names
    spec = make_spec("views", physics)
    part = ticks[FIRST:FIRST + 50]

    good = Recording(spec, 1000)
    feed(good, part, names, reuse=False)
    verdict = good.verdict()
    assert verdict.passed and verdict.findings == [], verdict.table()

    bad = Recording(spec, 1000)
    bad.joints = ViewRing(1000, len(names))
    feed(bad, part, names, reuse=False)
    verdict = bad.verdict()
    found = {(name, f.code) for name, f in verdict.findings}
    assert verdict.exit_code == 1
    assert {("buffer_audit", "shared_memory"), ("buffer_audit", "digest_mismatch"),
            ("aliasing", "every_slot_newest"), ("slot_error", "slot_error")} <= found, verdict.table()
    results = {r.name: r for r in verdict.results}
    audit = results["buffer_audit"].figures
    assert audit["n_sharing_slots"] == 50 and audit["n_objects"] == 50  # 50 objects, one memory
    assert audit["n_digest_mismatch"] == 49  # every slot but the newest changed after store
    slot = results["slot_error"].figures
    truth = np.array([t.position for t in part])
    assert slot["newest_error"] == 0.0
    assert slot["oldest_error"] == pytest.approx(np.abs(truth[-1] - truth[0]).max())
    assert "views such as obs[:]" in verdict.table()


def test_a_ring_of_references_fails_on_a_reused_message_the_real_ring_copies(physics_ticks):
    physics, ticks = physics_ticks
    names = physics.joint_names
    spec = make_spec("refs", physics)
    part = ticks[FIRST:FIRST + 50]

    good = Recording(spec, 1000)
    feed(good, part, names, reuse=True)  # the sender reuses one message: copying on store is enough
    assert good.verdict().passed, good.verdict().table()

    bad = Recording(spec, 1000)
    bad.joints = ReferenceRing(1000, len(names))
    feed(bad, part, names, reuse=True)
    verdict = bad.verdict()
    found = {(name, f.code) for name, f in verdict.findings}
    assert {("buffer_audit", "same_object"), ("buffer_audit", "shares_received"),
            ("aliasing", "every_slot_newest"), ("slot_error", "slot_error")} <= found, verdict.table()

    # Fresh messages per store (what rclpy hands a callback): values right, yet the audit
    # still sees that the slots are the received arrays themselves.
    fresh = Recording(spec, 1000)
    fresh.joints = ReferenceRing(1000, len(names))
    feed(fresh, part, names, reuse=False)
    verdict = fresh.verdict()
    assert {(n, f.code) for n, f in verdict.findings} == {("buffer_audit", "shares_received")}, verdict.table()


def test_live_recorder_with_a_ring_of_views_fails_its_own_audit(ros, physics_ticks, tmp_path):
    """The same view ring patched into the real recorder process, against a clean stream."""
    physics, ticks = physics_ticks
    base, items, _ = stream(ticks, None)
    code = VIEW_RING
    rc, out, verdict = run_against_publisher(tmp_path, physics, events_for(physics.joint_names, base, items),
                                             len(items), ns_tag="views", module_code=code)
    assert rc == 1, out
    assert set(failing(verdict)) >= {"buffer_audit", "aliasing", "slot_error"}, codes(verdict)
    assert ("buffer_audit", "shared_memory") in codes(verdict)
    assert ("aliasing", "every_slot_newest") in codes(verdict)
    assert check(verdict, "buffer_audit")["figures"]["n_digest_mismatch"] == N_STREAM - 1


# ----------------------------------------------------------------------------- restart mid-run

def sim_order(names, ticks):
    """The real sim's order per tick: joint_states first, then its truth."""
    events = []
    for t in ticks:
        events += [("js", lambda t=t: tick_messages.joint_state(t, names)),
                   ("gt", lambda t=t: tick_messages.joint_state(t, names))]
    return events


def test_sim_restarted_mid_run_is_a_time_jump_finding(ros, physics_ticks, tmp_path):
    """Also the regression test for the end-of-run truth wait after a restart: with the
    newest stamp kept across runs, the recorder stopped without the truth of the new run's
    last tick and reported a spurious unmatched_stamps slot_error on top."""
    physics, ticks = physics_ticks
    names = physics.joint_names
    run1 = ticks[FIRST:FIRST + 100]  # 1.01 .. 2.00 s
    run2 = ticks[:100]  # a new sim: 0.01 .. 1.00 s

    def mid_run(pub, spec):
        pub.publish(sim_order(names, run1))
        pub.publish_spec(spec)  # the restarted sim latches its spec again
        pub.publish(sim_order(names, run2))

    rc, out, verdict = run_against_publisher(tmp_path, physics, None, 200, ns_tag="restart", mid_run=mid_run)
    assert rc == 1, out
    assert codes(verdict) == [("tick_grid", "time_jump_backwards")], out
    f = finding(verdict, "tick_grid", "time_jump_backwards")
    assert f["figures"]["from_stamp_ns"] == run1[-1].stamp_ns and f["figures"]["to_stamp_ns"] == run2[0].stamp_ns
    assert "2.000 s -> 0.010 s (sim restarted mid-run?)" in f["message"]
    grid = check(verdict, "tick_grid")["figures"]
    assert grid["n_runs"] == 2 and grid["n_dropped"] == 0
    assert grid["sim_restarts_seen"] == 1  # the second latched spec was noticed too
    assert "the sim published a new spec: it restarted mid-run" in out
    # Each run is matched against its own truth: the reused stamps are not slot errors.
    assert check(verdict, "slot_error")["status"] == "pass"


def test_recording_newest_stamp_starts_over_when_the_sim_restarts(physics_ticks):
    physics, ticks = physics_ticks
    rec = Recording(make_spec("newest", physics), 1000)
    for t in ticks[FIRST:FIRST + 100] + ticks[:10]:
        rec.store_joint_state(tick_messages.joint_state(t, physics.joint_names))
    assert rec.last_joint_ns == ticks[9].stamp_ns  # the new run's, not 2.000 s of the old one
    for t in ticks[FIRST:FIRST + 100]:
        rec.store_truth(tick_messages.joint_state(t, physics.joint_names))
    assert rec.last_truth_ns == ticks[FIRST + 99].stamp_ns
    rec.store_truth(tick_messages.joint_state(ticks[FIRST + 70], physics.joint_names))  # late, not a restart
    assert rec.last_truth_ns == ticks[FIRST + 99].stamp_ns


# ----------------------------------------------------------------------------- bad input

def test_bag_that_does_not_exist(tmp_path):
    rc, out, verdict = recorder(tmp_path, "--bag", str(tmp_path / "nope"))
    assert_no_traceback(out)
    assert rc == 2 and f"bag not found: {tmp_path / 'nope'}" in out
    assert verdict["status"] == "usage_error"


@pytest.mark.parametrize("given", ["directory", "mcap_file"])
def test_truncated_bag_is_recovered_up_to_the_cut(clean_recording, tmp_path, given):
    """A bag whose summary was never written (the recorder killed while closing it) is checked
    from its complete chunks, and says so; cut inside its only chunk, nothing can be read."""
    _, _, _, bag = clean_recording
    cut = tmp_path / "cut"
    shutil.copytree(bag, cut)
    (mcap,) = cut.glob("*.mcap")
    size = mcap.stat().st_size
    with open(mcap, "r+b") as f:
        f.truncate(size - 200)  # the summary and footer: the chunk with every message is whole
    target = cut if given == "directory" else mcap
    rc, out, verdict = recorder(tmp_path, "--bag", str(target))
    assert_no_traceback(out)
    assert rc == 0, out
    assert f"{target} is truncated" in out and "recovered" in out
    assert "joint_states 200" in out and "the checks cannot see the end of the recording" in out, out
    assert verdict["status"] == "pass" and verdict["notes"][0].startswith(f"{target} is truncated")
    assert check(verdict, "tick_grid")["figures"]["n_received"] == N_STREAM

    with open(mcap, "r+b") as f:
        f.truncate(size // 2)  # inside the only chunk (1 MiB chunks; this bag is smaller)
    rc, out, verdict = recorder(tmp_path, "--bag", str(target))
    assert_no_traceback(out)
    assert rc == 2 and "recovered no message either" in out, out


def test_unreadable_bag_keeps_its_clear_usage_error(clean_recording, tmp_path):
    _, _, _, bag = clean_recording
    cut = tmp_path / "cut"
    shutil.copytree(bag, cut)
    (mcap,) = cut.glob("*.mcap")
    data = bytearray(mcap.read_bytes())
    mcap.write_bytes(b"\xff" * 64 + bytes(data[64:len(data) // 2]))  # no magic, cut short
    rc, out, verdict = recorder(tmp_path, "--bag", str(cut))
    assert_no_traceback(out)
    assert rc == 2, out
    assert f"cannot read bag {cut}" in out and "the file is truncated or corrupt" in out
    assert "recovered no message either" in out
    assert verdict["status"] == "usage_error"


def test_bag_with_the_wrong_topics(tmp_path):
    path = tmp_path / "chatter"
    with BagWriter(path) as bag:
        for k in range(5):
            bag.write_string("/chatter", f"hello {k}", log_time_ns=k)
    rc, out, _ = recorder(tmp_path, "--bag", str(path))
    assert_no_traceback(out)
    assert rc == 2
    assert "no joint_states topic of type sensor_msgs/msg/JointState" in out
    assert "/chatter [std_msgs/msg/String]" in out


def test_bag_without_ground_truth(tmp_path, physics_ticks):
    physics, ticks = physics_ticks
    path = tmp_path / "no_truth"
    with BagWriter(path) as bag:
        for t in ticks[:20]:
            bag.write_joint_state("/joint_states", t.stamp_ns, physics.joint_names, t.position, t.velocity)
    rc, out, _ = recorder(tmp_path, "--bag", str(path))
    assert_no_traceback(out)
    assert rc == 2 and "no ground_truth/joint_states topic, nothing to prove the data against" in out


def test_spec_that_never_arrives(tmp_path, ros):
    ns = fresh_ns("nospec")
    started = time.monotonic()
    rc, out, verdict = recorder(tmp_path, "--spec-timeout", "2", "--ticks", "10", ns=ns)
    assert_no_traceback(out)
    assert rc == 2, out
    assert f"no spec on /{ns}/robogym_sim/spec within 2 s" in out
    assert verdict["status"] == "usage_error" and verdict["checks"] == []
    assert time.monotonic() - started < 20


def test_spec_but_no_joint_states_is_no_data(ros, physics_ticks, tmp_path):
    physics, _ = physics_ticks
    ns = fresh_ns("silent")
    pub = FaultyPublisher(ns, make_spec(ns, physics))  # a sim that is up but paused
    try:
        rc, out, verdict = recorder(tmp_path, "--duration", "1", ns=ns)
    finally:
        pub.close()
    assert_no_traceback(out)
    assert rc == 2, out
    assert "no joint_states received" in out and verdict["status"] == "usage_error"


def test_record_onto_an_existing_path(tmp_path):
    existing = tmp_path / "taken"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    rc, out, _ = recorder(tmp_path, "--record", str(existing), "--ticks", "10")
    assert_no_traceback(out)
    assert rc == 2
    assert f"--record {existing}: exists already; a bag is never overwritten" in out
    assert (existing / "keep.txt").read_text() == "mine"


def test_sigterm_finalises_the_bag_and_prints_the_verdict(ros, physics_ticks, tmp_path):
    physics, ticks = physics_ticks
    names = physics.joint_names
    ns = fresh_ns("sigterm")
    bag = tmp_path / "term_bag"
    pub = FaultyPublisher(ns, make_spec(ns, physics))
    stop = threading.Event()
    run = RecorderRun(tmp_path, "--duration", "120", "--record", str(bag), ns=ns)
    seq = ticks[FIRST:]
    worker = threading.Thread(target=pub.publish, args=(events_for(names, seq, [js_item(t) for t in seq]),),
                              kwargs={"period_s": 0.005, "stop": stop})
    try:
        pub.wait_matched(run)
        worker.start()  # 100 ticks/s of wall time, as the sim at real_time_factor 1
        time.sleep(0.5)
        run.proc.send_signal(signal.SIGTERM)  # mid-stream
        rc, out, verdict = run.wait(30)
    finally:
        stop.set()
        if worker.is_alive():
            worker.join(10)
        run.stop()
        pub.close()
    assert_no_traceback(out)
    assert rc == 0, out
    assert "robogym_recorder verdict: PASS (exit 0)" in out and f"bag: {bag} (mcap)" in out
    assert (bag / "metadata.yaml").exists()  # rosbag2 finalised it
    (mcap,) = bag.glob("*.mcap")
    with open(mcap, "rb") as f:  # and the mcap has its summary and footer
        assert make_reader(f).get_summary() is not None
    data = read_bag(bag)  # it reads back
    n = check(verdict, "tick_grid")["figures"]["n_received"]
    assert 10 <= n <= len(data.joint_states) and len(data.ground_truth) >= n
    assert data.spec is not None
    rc, out, offline = recorder(tmp_path, "--bag", str(bag))
    assert rc == 0 and offline["status"] == "pass", out


# ----------------------------------------------------------------------------- the real sim

@pytest.mark.long
def test_real_sim_and_motion_two_minutes_of_sim_time_clean(ros, tmp_path):
    """120 s of sim time at real_time_factor 4: every tick received, zero findings."""
    ns = fresh_ns("real")
    n_ticks = 12_000  # 120 s at the 10 ms control dt
    sim = SimProcessUnderTest(ns, tmp_path, real_time_factor=4.0, camera_period_s=0.0)
    motion_log = open(tmp_path / "motion.log", "w")
    motion = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.motion", "--ros-args", "-r",
                               f"__ns:=/{ns}"], stdout=motion_log, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        rc, out, verdict = recorder(tmp_path, "--ticks", str(n_ticks), "--spec-timeout", "30", ns=ns,
                                    timeout_s=150)
        wall = time.monotonic() - started
    finally:
        motion.send_signal(signal.SIGINT)
        try:
            motion.wait(15)
        except subprocess.TimeoutExpired:
            motion.kill()
        motion_log.close()
        sim_rc = sim.stop()
    assert_no_traceback(out)
    assert rc == 0, out + "\n--- sim:\n" + sim.output()
    assert verdict["status"] == "pass" and codes(verdict) == [], out
    grid = check(verdict, "tick_grid")["figures"]
    # The recorder kept up: every tick between its first and last, none twice.
    assert grid["n_dropped"] == 0 and grid["n_duplicated"] == 0 and grid["n_reordered"] == 0
    assert grid["n_unique"] == grid["n_expected"]
    assert grid["n_received"] + grid["slots_outside_truth_span"] == n_ticks
    assert grid["last_stamp_ns"] - grid["first_stamp_ns"] >= 119_000_000_000
    assert grid["period_ns"] == 10_000_000
    assert check(verdict, "velocity_fd")["figures"]["n_moving_joints"] == 12  # the motion node drove them
    assert check(verdict, "buffer_audit")["status"] == "pass"
    assert sim_rc == 0
    print(f"real sim: {n_ticks} ticks in {wall:.1f} s wall")
