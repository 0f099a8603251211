"""The recording's bookkeeping without ROS: one fast positive control per fault the recorder
itself must account for (ring overwrite, a stream that stops, a pause, skipped and lost frames,
a live camera period change, joints named differently)."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from robogym_ros import checks
from robogym_ros.contract import CameraSpec, JointSpec, RunState, Spec, split_stamp
from robogym_ros.recorder.bagio import BagError, JointSeries, align_truth
from robogym_ros.recorder.recording import Recording
from robogym_ros.recorder.schedules import SpecChange, frame_schedules

DT_NS = 10_000_000
NAMES = ["a", "b", "c"]


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def stamp(ns):
    sec, nanosec = split_stamp(ns)
    return SimpleNamespace(sec=sec, nanosec=nanosec)


def joint_msg(k, names=NAMES):
    q = np.sin(0.05 * k + np.arange(len(names)))
    v = 0.05 / (DT_NS * 1e-9) * np.cos(0.05 * k + np.arange(len(names)))
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp(k * DT_NS)), name=list(names), position=q.tolist(),
                           velocity=v.tolist(), effort=[])


def image_msg(k):
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp(k * DT_NS)), width=2, height=2, step=6,
                           encoding="rgb8", data=bytes(12))


def spec(cameras=(), period_s=0.05, instance="i1", rtf=1.0):
    return Spec(joints=tuple(JointSpec(n) for n in NAMES), control_dt_ns=DT_NS, decimation=5, instance=instance,
                real_time_factor=rtf, camera_frames="skip_when_busy" if cameras else "",
                cameras=tuple(CameraSpec(c, period_s=period_s, width=2, height=2) for c in cameras))


def feed(rec, ks, clock=None, step_s=0.01, images=(), skips=()):
    for k in ks:
        if clock is not None:
            clock.t += step_s
        rec.store_truth(joint_msg(k))
        rec.store_joint_state(joint_msg(k))
        if k in images:
            for cam in images[k]:
                rec.store_image(image_msg(k), cam)
        if k in skips:
            rec.store_skip(SimpleNamespace(stamp=stamp(k * DT_NS), frame_id=",".join(skips[k])))


def test_ring_overwrite_is_stated_and_every_stamp_counted():
    rec = Recording(spec(), 10)
    feed(rec, range(1, 41))
    v = rec.verdict()
    assert v.passed, v.table()
    assert "checked the newest 10 of 40 received; 30 overwritten by the ring" in v.table()
    grid = checks.by_name(v.results, "tick_grid").figures
    assert grid["n_received"] == 40 and grid["n_expected"] == 40
    assert "[newest 10 of 40 received: 0.310 s..0.400 s]" in checks.by_name(v.results, "slot_error").summary
    # a tick lost among the overwritten ones is still found
    rec = Recording(spec(), 10)
    feed(rec, [k for k in range(1, 41) if k != 5])
    v = rec.verdict()
    assert [f.code for _, f in v.findings] == ["dropped_ticks"], v.table()


def test_a_stream_that_stops_and_a_paused_sim():
    clock = FakeClock()
    rec = Recording(spec(), 1000, clock=clock)
    feed(rec, range(1, 141), clock)
    clock.t += 10.6  # nothing more for 10.6 s of the recording
    rec.end("duration reached")
    v = rec.verdict()
    assert [(name, f.code) for name, f in v.findings] == [("streams", "stream_stopped")] * 2  # and its truth
    f = v.findings[0][1]
    assert "joint_states stopped at sim time 1.400 s, 1.40 s (wall) into the recording" in f.message
    rec.store_run_state(SimpleNamespace(data=RunState(True, 140 * DT_NS, "pause").to_json()))
    assert rec.verdict().passed  # paused at the last tick received: not a dead sim


def test_a_backlog_drained_in_the_grace_is_a_live_stream():
    clock = FakeClock()
    rec = Recording(spec(), 1000, clock=clock)
    feed(rec, range(1, 100), clock)
    clock.t += 3.0  # this process stalled; the messages wait in the reader's queue
    rec.end("duration reached")
    rec.store_truth(joint_msg(100))  # ... and arrive in the grace period
    rec.store_joint_state(joint_msg(100))
    assert rec.verdict().passed, rec.verdict().table()


def test_skipped_frames_pass_lost_frames_fail_in_a_recording():
    cams = ("wrist", "top")
    period_ticks = 5
    rec = Recording(spec(cams), 1000)
    rec.note_publishers("skips", 1, 0)  # the sim publishes skip reports
    rec._live_since["skips"] = -1.0  # ... since before the recording (no settle time in this test)
    due = {k for k in range(1, 301) if k % period_ticks == 0}
    skipped = {k: cams for k in sorted(due)[3::4]}
    images = {k: cams for k in due if k not in skipped}
    feed(rec, range(1, 301), images=images, skips=skipped)
    v = rec.verdict()
    assert v.passed, v.table()
    frames = checks.by_name(v.results, "images").figures["frames"]
    assert frames["n_skipped"] == 2 * len(skipped) and frames["n_lost"] == 0
    lost = next(k for k in sorted(due)[5:] if k not in skipped)
    rec = Recording(spec(cams), 1000)
    rec.note_publishers("skips", 1, 0)
    rec._live_since["skips"] = -1.0
    feed(rec, range(1, 301), images={k: (c if k != lost else ("top",)) for k, c in images.items()}, skips=skipped)
    v = rec.verdict()
    (name, f), = v.findings
    assert f.code == "image_frames_lost" and f.figures["stamps_ns"] == [lost * DT_NS], v.table()


def test_without_skip_reports_missing_frames_are_counted_not_failed():
    rec = Recording(spec(("top",)), 1000)
    images = {k: ("top",) for k in range(1, 301) if k % 5 == 0 and k % 15}  # a third of them missing
    feed(rec, range(1, 301), images=images)
    v = rec.verdict()
    assert v.passed, v.table()
    assert checks.by_name(v.results, "images").figures["frames"]["n_unattributed"] > 15
    assert any("cannot be told skipped from lost" in n for n in v.notes)


def test_a_live_period_change_cuts_out_a_zone_and_judges_each_stretch():
    s1, s2 = spec(("top",), 0.05), spec(("top",), 0.1)
    history = [SpecChange(None, s1), SpecChange(300 * DT_NS, s2)]
    schedules, extra = frame_schedules(history, DT_NS, 800 * DT_NS, judged_from_ns={"top": DT_NS}, speed=1.0)
    assert [(s.period_ns, s.start_ns, s.end_ns) for s in schedules] == [
        (50_000_000, DT_NS, 300 * DT_NS - 1_200_000_000), (100_000_000, 300 * DT_NS + 1_200_000_000, 800 * DT_NS)]
    assert extra["period_change_zones"][0]["period_ns"] == [50_000_000, 100_000_000]
    rec = Recording(s1, 1000)
    assert rec.on_spec(s1) == "same" and rec.on_spec(s2) == "update"
    assert rec.on_spec(replace(s2, instance="i2")) == "restart" and rec.spec_updates == 1


@pytest.mark.parametrize("gt_names, message", [
    (["a", "b", "x"], "only in joint_states [c] (1), only in ground truth [x] (1)"),
    (["a", "b"], "3 joints vs 2"),
])
def test_truth_that_names_other_joints_is_refused(gt_names, message):
    js = JointSeries("/joint_states", tuple(NAMES), np.arange(3), np.arange(3), np.zeros((3, 3)), np.zeros((3, 3)),
                     np.zeros((3, 3)))
    gt = JointSeries("/ground_truth/joint_states", tuple(gt_names), np.arange(3), np.arange(3),
                     np.zeros((3, len(gt_names))), np.zeros((3, len(gt_names))), np.zeros((3, len(gt_names))))
    with pytest.raises(BagError, match="names other joints") as err:
        align_truth(js, gt)
    assert message in str(err.value)
    same = replace(js, names=("c", "a", "b"), position=np.array([[3.0, 1.0, 2.0]] * 3))
    assert align_truth(js, same).position.tolist() == [[1.0, 2.0, 3.0]] * 3  # by name, not by column


def test_live_changes_are_counted_once_however_many_cameras():
    """Two camera_period_s changes with three cameras: "2 times (3 cameras)", not 6 times."""
    cams = ("top", "side", "wrist")
    rec = Recording(spec(cams, 0.05), 5000)
    feed(rec, range(1, 501))
    assert rec.on_spec(spec(cams, 0.1)) == "update"
    feed(rec, range(501, 1001))
    assert rec.on_spec(spec(cams, 0.05)) == "update"
    feed(rec, range(1001, 1501))
    notes = [n for n in rec.verdict().notes if "changed live" in n]
    assert notes == ["camera_period_s changed live 2 times (3 cameras): frames due around each change are not "
                     "judged"], notes
