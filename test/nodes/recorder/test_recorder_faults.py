"""Issue 7 at the node level: no PASS without the data, no false alarm on correct data, and the
diagnosis named, through the real recorder process over real DDS.

The stand-in sim (an rclpy node in this process) publishes what the real sim does -- latched
spec and run state, joint_states, ground truth, camera frames and skipped-frame reports --
from real physics ticks, with one fault injected; the real sim is used where the fault is
the sim's own (killed mid-run, paused, a decimation that used to false-alarm).
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import rclpy
from recorder_runs import (
    FIRST,
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
)
from simharness import SimProcessUnderTest
from stand_in_sim import (
    CAMERAS,
    PERIOD_NS,
    camera_spec,
    record_and_kill_the_sim,
    run_stand_in,
    wait_for_log,
)
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.checks import frame_due_stamps
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.recorder.bag.writer import BagWriter

DECIMATION = 5








def paced(sim, names, ticks, period_s=0.01):
    """The real sim's order per tick, at ``period_s`` of wall time: joint_states, then truth."""
    for t in ticks:
        sim.pub["js"].publish(tick_messages.joint_state(t, names))
        sim.pub["gt"].publish(tick_messages.joint_state(t, names))
        time.sleep(period_s)


# ----------------------------------------------------------------------------- PASS on bad data

def test_ring_overwrite_is_stated_and_the_grid_counts_every_message(ros, long_ticks, tmp_path):
    """--capacity 100 with 400 ticks: the verdict said "received 100 of 100"; now 400, 300 overwritten."""
    physics, ticks = long_ticks
    base = ticks[FIRST:FIRST + 400]
    ns = fresh_ns("overwrite")
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns, physics), ns,
                                    lambda sim: sim.publish(events_for(physics.joint_names, base,
                                                                       [js_item(t) for t in base])),
                                    "--ticks", "400", "--capacity", "100")
    assert rc == 0, out
    assert "note: joint_states: checked the newest 100 of 400 received; 300 overwritten by the ring" in out
    grid = check(verdict, "tick_grid")["figures"]
    assert grid["n_received"] == 400 and grid["n_expected"] == 400
    window = check(verdict, "slot_error")["figures"]["window"]
    assert (window["n_received"], window["n_in_ring"], window["n_overwritten"]) == (400, 100, 300)
    assert "[newest 100 of 400 received: 4.010 s..5.000 s]" in check(verdict, "slot_error")["summary"]
    # and a drop among the overwritten slots is still found: the grid has every stamp
    items = [js_item(t) for t in base]
    del items[50]
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns + "b", physics), ns + "b",
                                    lambda sim: sim.publish(events_for(physics.joint_names, base, items)),
                                    "--ticks", "399", "--capacity", "100")
    assert rc == 1 and finding(verdict, "tick_grid", "dropped_ticks")["figures"]["stamps_ns"] == [
        base[50].stamp_ns], out


@pytest.mark.long
def test_a_stream_that_stops_fails_a_paused_sim_passes(ros, long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    part = ticks[FIRST:FIRST + 150]

    def stops(sim):
        sim.state(False, 0, "start")
        paced(sim, names, part)  # 1.5 s of ticks, then silence for the rest of --duration 4

    ns = fresh_ns("stops")
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns, physics), ns, stops, "--duration", "4")
    assert rc == 1, out
    f = finding(verdict, "streams", "stream_stopped")
    assert f"joint_states stopped at sim time {part[-1].stamp_ns / 1e9:.3f} s" in f["message"]
    assert "(wall) into the recording" in f["message"] and "did not report a pause" in f["message"]
    assert check(verdict, "tick_grid")["status"] == "pass"  # the grid alone saw nothing wrong

    def pauses(sim):
        sim.state(False, 0, "start")
        paced(sim, names, part)
        sim.state(True, part[-1].stamp_ns, "pause")

    ns = fresh_ns("pauses")
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns, physics), ns, pauses, "--duration", "4")
    assert rc == 0, out
    streams = check(verdict, "streams")
    assert streams["figures"]["paused_at_end"] and "paused at the end" in streams["summary"]


@pytest.mark.long
def test_real_sim_killed_mid_run_fails_naming_when(ros, tmp_path):
    """Sim killed 1.4 s into --duration 12 gave "PASS ... received 137 of 137"."""
    rc, out, verdict = record_and_kill_the_sim(tmp_path, fresh_ns("killed"), "--duration", "6", wait_s=30)
    assert_no_traceback(out)
    assert rc == 1, out
    f = finding(verdict, "streams", "stream_stopped")
    assert f["message"].startswith("joint_states stopped at sim time"), f["message"]
    assert f["figures"]["silent_s"] > 3.0


def test_real_sim_paused_mid_run_is_not_a_dead_sim(ros, tmp_path):
    ns = fresh_ns("paused")
    sim = SimProcessUnderTest(ns, tmp_path, camera_period_s=0.0)
    node = rclpy.create_node(f"pauser_{ns}")
    client = node.create_client(Trigger, f"/{ns}/{contract.SIM_NODE}/pause")
    run = RecorderRun(tmp_path, "--duration", "5", "--spec-timeout", "30", ns=ns)
    try:
        wait_for_log(run, "spec from", 30)
        assert client.wait_for_service(timeout_sec=20)
        time.sleep(1.0)
        future = client.call_async(Trigger.Request())
        rclpy.spin_until_future_complete(node, future, timeout_sec=10)
        assert future.result().success, future.result()
        rc, out, verdict = run.wait(30)
    finally:
        run.stop()
        node.destroy_node()
        sim.stop()
    assert_no_traceback(out)
    assert rc == 0, out
    assert check(verdict, "streams")["figures"]["paused_at_end"]


def test_real_sim_at_decimation_10_passes(ros, tmp_path):
    """decimation:=10 with the motion node: velocity_fd used to FAIL with gains 7.22, 2.56, ..."""
    ns = fresh_ns("dec10")
    sim = SimProcessUnderTest(ns, tmp_path, decimation=10, camera_period_s=0.0)
    motion = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.motion", "--ros-args", "-r",
                               f"__ns:=/{ns}"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        rc, out, verdict = recorder(tmp_path, "--duration", "5", "--spec-timeout", "30", ns=ns)
    finally:
        motion.send_signal(signal.SIGINT)
        motion.wait(15)
        sim.stop()
    assert_no_traceback(out)
    assert rc == 0 and codes(verdict) == [], out
    fd = check(verdict, "velocity_fd")["figures"]
    assert fd["n_moving_joints"] >= 10 and fd["gain_range"] == [1.0, 1.0]


# ----------------------------------------------------------------------------- the diagnosis

def test_physics_dt_velocity_on_real_data_is_named_through_the_node(ros, long_ticks, tmp_path):
    """velocity = (q[n] - q[n-1]) / physics dt: was a generic "velocity_mismatch (gains 4.99, 4.93, ...)"."""
    physics, ticks = long_ticks
    names = physics.joint_names
    base = ticks[FIRST:FIRST + 200]

    def publish(sim):
        prev = ticks[FIRST - 1]
        for t in base:
            sim.pub["gt"].publish(tick_messages.joint_state(t, names))
            msg = tick_messages.joint_state(t, names)
            msg.velocity = ((t.position - prev.position) / 0.002).tolist()  # the physics dt: the bug
            sim.pub["js"].publish(msg)
            prev = t

    ns = fresh_ns("dtmix")
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns, physics), ns, publish, "--ticks", "200")
    assert rc == 1, out
    f = finding(verdict, "velocity_reported", "velocity_factor_decimation")
    assert "FD velocity off by 5.00x = decimation (5): physics dt used where control dt belongs" in f["message"]
    assert set(failing(verdict)) == {"velocity_reported"}, codes(verdict)


def test_finding_codes_have_no_spaces(ros, long_ticks, tmp_path):
    physics, ticks = long_ticks
    base = ticks[FIRST:FIRST + 100]
    frozen = [js_item(t, payload=base[0]) for t in base]  # every slot the same positions: aliased
    ns = fresh_ns("codes")
    rc, out, verdict = run_stand_in(tmp_path, make_spec(ns, physics), ns,
                                    lambda sim: sim.publish(events_for(physics.joint_names, base, frozen)),
                                    "--ticks", "100")
    assert rc == 1
    assert ("velocity_fd", "fd_velocity_zero") in codes(verdict)
    assert all(" " not in code for _, code in codes(verdict)), codes(verdict)


# ----------------------------------------------------------------------------- images

def frames_script(physics, ticks, skip_every=0, lose=None):
    names = physics.joint_names
    part = ticks[FIRST:FIRST + 300]
    due = set(frame_due_stamps(part[0].stamp_ns, part[-1].stamp_ns, PERIOD_NS, physics.control_dt_ns).tolist())
    skipped = set(sorted(due)[10::skip_every]) if skip_every else set()

    def script(sim):
        wait_skips_matched(sim)
        sim.state(False, 0, "start")
        for t in part:
            sim.tick(t, names, frames=False)
            if t.stamp_ns in due:
                if t.stamp_ns in skipped:
                    sim.skip(t.stamp_ns, CAMERAS)
                elif t.stamp_ns != lose:
                    for cam in CAMERAS:
                        sim.frame(cam, t.stamp_ns)
            time.sleep(0.004)
        for t in ticks[FIRST + 300:FIRST + 340]:  # the sim goes on while the recorder ends
            sim.tick(t, names)
            time.sleep(0.004)
    return script, sorted(due), skipped


def wait_skips_matched(sim, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while sim.pub["skips"].get_subscription_count() < 1 or any(
            sim.pub[f"img:{c}"].get_subscription_count() < 1 for c in CAMERAS):
        assert time.monotonic() < deadline, "the recorder never subscribed to frames and skips"
        time.sleep(0.01)
    time.sleep(0.8)  # past the recorder's settle time: every frame from now on is judged


def test_frames_the_sim_skipped_pass_frames_lost_fail(ros, long_ticks, tmp_path):
    """real_time_factor 0 with cameras: every run FAILed "median image period 200 ms != 100 ms"."""
    physics, ticks = long_ticks
    script, due, skipped = frames_script(physics, ticks, skip_every=2)  # half the frames skipped, as reported
    ns = fresh_ns("skips")
    rc, out, verdict = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", "300")
    assert rc == 0, out
    frames = check(verdict, "images")["figures"]["frames"]
    assert frames["n_skipped"] >= 0.4 * frames["n_due"] and frames["n_lost"] == 0, frames
    assert check(verdict, "images")["figures"]["skips_reported"]

    lose = next(s for s in reversed(due[:-10]) if s not in skipped)  # a frame published, never delivered
    script, due, skipped = frames_script(physics, ticks, skip_every=2, lose=lose)
    ns = fresh_ns("lost")
    rc, out, verdict = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", "300")
    assert rc == 1, out
    f = finding(verdict, "images", "image_frames_lost")
    assert f["figures"]["n_lost"] == 1 and "lost on the way" in f["message"]
    assert set(failing(verdict)) == {"images"}, codes(verdict)


@pytest.mark.parametrize("withheld_s", [2.0, 0.0])
def test_a_camera_whose_frames_start_late_is_flagged_one_on_time_is_not(ros, long_ticks, tmp_path, withheld_s):
    """Real time; every topic live before the first tick. Frames withheld for the first 2 s while
    joint_states flow: camera_started_late for each camera, and nothing else. Sent from the first
    tick on: PASS."""
    physics, ticks = long_ticks
    names = physics.joint_names
    part = ticks[FIRST:FIRST + 350]

    def script(sim):
        wait_skips_matched(sim)
        sim.state(False, 0, "start")
        for t in part:
            sim.tick(t, names, frames=t.stamp_ns - part[0].stamp_ns >= withheld_s * 1e9)
            time.sleep(0.01)

    ns = fresh_ns("latecam")
    rc, out, verdict = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", "330")
    if not withheld_s:
        assert rc == 0, out
        return
    assert rc == 1, out
    assert set(codes(verdict)) == {("images", "camera_started_late")}, codes(verdict)
    for cam in CAMERAS:
        f = next(f for f in check(verdict, "images")["findings"] if f["figures"]["camera"] == cam)
        assert f["figures"]["missed_s"] >= 1.9 and f["figures"]["waited_s"] > 1.0, f


@pytest.mark.long
def test_live_camera_period_change_is_judged_stretch_by_stretch(ros, long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    ns = fresh_ns("period")
    spec1 = camera_spec(ns, physics, PERIOD_NS)
    spec2 = camera_spec(ns, physics, 2 * PERIOD_NS)  # same instance: a live camera_period_s change
    first, second = ticks[FIRST:FIRST + 250], ticks[FIRST + 250:FIRST + 600]

    def script(sim):
        wait_skips_matched(sim)
        sim.state(False, 0, "start")
        for part, period in ((first, PERIOD_NS), (second, 2 * PERIOD_NS)):
            if period != PERIOD_NS:
                sim.publish_spec(spec2)
            anchor = part[0].stamp_ns
            for t in part:
                sim.pub["js"].publish(tick_messages.joint_state(t, names))
                sim.pub["gt"].publish(tick_messages.joint_state(t, names))
                if t.stamp_ns % period == 0 or (period != PERIOD_NS and t.stamp_ns == anchor):
                    for cam in CAMERAS:
                        sim.frame(cam, t.stamp_ns)
                time.sleep(0.01)  # real time: the zone around the change is about 1 s either side

    rc, out, verdict = run_stand_in(tmp_path, spec1, ns, script, "--ticks", "580")
    assert rc == 0, out
    images = check(verdict, "images")["figures"]
    assert len(images["period_change_zones"]) == len(CAMERAS)
    overhead = images["frames_per_camera"]["overhead"]
    assert overhead["period_ns"] == [PERIOD_NS, 2 * PERIOD_NS], overhead  # both stretches judged
    assert overhead["n_lost"] == 0 and overhead["n_received"] >= 15, overhead
    assert "camera_period_s changed live 1 time (2 cameras)" in out  # one change, not one per camera
    assert "the sim's spec changed live" in out


# ----------------------------------------------------------------------------- offline: names

def write_bag(path, physics, ticks, js_names, gt_names, gt_cols=None):
    with BagWriter(path) as bag:
        for t in ticks:
            q = t.position
            bag.write_joint_state("/joint_states", t.stamp_ns, js_names, q[:len(js_names)],
                                  t.velocity[:len(js_names)])
            order = slice(None) if gt_cols is None else gt_cols
            bag.write_joint_state("/ground_truth/joint_states", t.stamp_ns, gt_names, q[order][:len(gt_names)],
                                  t.velocity[order][:len(gt_names)])


def test_bag_whose_truth_names_other_joints_is_a_usage_error(long_ticks, tmp_path):
    """Same numbers, other names: was a PASS (columns matched by position)."""
    physics, ticks = long_ticks
    names = physics.joint_names
    other = [n.replace("left_", "l_") for n in names]
    write_bag(tmp_path / "renamed", physics, ticks[FIRST:FIRST + 50], names, other)
    rc, out, verdict = recorder(tmp_path, "--bag", str(tmp_path / "renamed"))
    assert_no_traceback(out)
    assert rc == 2, out
    assert "names other joints than /joint_states" in out and "never by column" in out
    assert "only in ground truth [l_shoulder_pan" in out


def test_bag_with_6_vs_4_joints_is_a_usage_error_not_a_traceback(long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    write_bag(tmp_path / "counts", physics, ticks[FIRST:FIRST + 50], names[:6], names[:4])
    rc, out, verdict = recorder(tmp_path, "--bag", str(tmp_path / "counts"))
    assert_no_traceback(out)
    assert rc == 2 and verdict["status"] == "usage_error", out
    assert "6 joints vs 4" in out


def test_bag_whose_truth_orders_joints_differently_is_matched_by_name(long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    order = list(reversed(range(len(names))))
    write_bag(tmp_path / "reordered", physics, ticks[FIRST:FIRST + 50], names, [names[i] for i in order],
              gt_cols=order)
    rc, out, verdict = recorder(tmp_path, "--bag", str(tmp_path / "reordered"))
    assert_no_traceback(out)
    assert rc == 0, out


# ----------------------------------------------------------------------------- helpers






