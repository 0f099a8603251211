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
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.series import JointSeries, align_truth
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


def test_streams_and_decoding_count_the_same_messages():
    """One verdict said streams `ground_truth/joint_states 480 msgs` and decoding `606 ...`: the 126
    that came in the end grace were in one count only. Both now name them, and add up."""
    import re
    clock = FakeClock()
    rec = Recording(spec(), 1000, clock=clock)
    feed(rec, range(1, 101), clock)
    rec.end("duration reached")
    for k in range(101, 127):  # truth (and joint_states, which show the stream alive) in the grace
        rec.store_truth(joint_msg(k))
        rec.store_joint_state(joint_msg(k))
    v = rec.verdict()
    assert v.passed, v.table()
    streams, decoding = (checks.by_name(v.results, n).summary for n in ("streams", "decoding"))
    for topic in ("joint_states", "ground_truth/joint_states"):
        n, after = map(int, re.search(rf"(?:^|; ){re.escape(topic)} (\d+) msgs \(\+(\d+) after the end\)",
                                      streams).groups())
        total, until, grace = map(int, re.search(rf"(\d+) {re.escape(topic)} \((\d+) until the end \+ (\d+) after "
                                                 rf"it\)", decoding).groups())
        assert (n, after) == (100, 26) and (total, until, grace) == (n + after, n, after), (streams, decoding)


def test_the_end_waits_for_the_camera_info_of_each_cameras_last_image():
    """A bag held 201 overhead/camera_info and 202 image_raw: the end came between a frame's image and
    its camera_info (published one after the other). With camera_info watched (--record), the
    recording is not caught up until each camera's newest image and camera_info share a stamp."""
    from robogym_ros.wire.encode import CameraInfoEncoder
    info = CameraInfoEncoder("top_optical", 2, 2, "plumb_bob", [0.0] * 5, np.eye(3), np.eye(3), np.zeros((3, 4)))
    rec = Recording(spec(("top",)), 1000)
    feed(rec, range(1, 11), images={5: ("top",)})
    assert rec.store_camera_info_cdr(info.encode(5 * DT_NS), "top")
    rec.end("duration reached")
    rec.store_truth(joint_msg(11))
    rec.store_joint_state(joint_msg(11))  # alive after the end
    rec.store_image(image_msg(15), "top")  # a frame after the last tick ...
    assert not rec.caught_up()  # ... whose camera_info has not come yet
    assert rec.store_camera_info_cdr(info.encode(15 * DT_NS), "top")
    assert rec.caught_up()
    # ... and the other way round (CI, Jazzy: a bag with 25 camera_info and 24 image_raw): the next
    # frame's camera_info arrived before its image, and the end must wait for the image.
    assert rec.store_camera_info_cdr(info.encode(16 * DT_NS), "top")
    assert not rec.caught_up()
    rec.store_image(image_msg(16), "top")
    assert rec.caught_up()
    assert not rec.store_camera_info_cdr(b"\x00\x01", "top")  # malformed: counted, not raised
    assert rec.malformed["cameras/top/camera_info"].n == 1
    # without camera_info watched (no --record), nothing to wait for
    rec = Recording(spec(("top",)), 1000)
    feed(rec, range(1, 11))
    rec.end("duration reached")
    rec.store_truth(joint_msg(11))
    rec.store_joint_state(joint_msg(11))
    rec.store_image(image_msg(15), "top")
    assert rec.caught_up()


def test_a_message_injected_30_ticks_ahead_is_named_as_such_not_as_dropped_ticks():
    """A joint_states message stamped 30 ticks ahead, injected after tick 100 (the stream then
    carrying on, and tick 130 coming again in order): it fails, and the explanation is the stamp
    ahead of time, not ticks dropped or a restarted sim."""
    clean = Recording(spec(), 1000)
    feed(clean, range(1, 301))
    assert clean.verdict().passed, clean.verdict().table()  # positive control: the same stream without it
    rec = Recording(spec(), 1000)
    feed(rec, range(1, 101))
    rec.store_joint_state(joint_msg(130))
    feed(rec, range(101, 301))
    v = rec.verdict()
    assert not v.passed
    codes = [f.code for _, f in v.findings]
    assert "ahead_of_time_stamps" in codes, v.table()
    assert not {"dropped_ticks", "time_jump_backwards", "duplicated_ticks"} & set(codes), v.table()
    message = next(f.message for _, f in v.findings if f.code == "ahead_of_time_stamps")
    assert "1.300 s arrived (30 ticks ahead of 1.000 s" in message, message


@pytest.mark.parametrize("fault, code", [("late duplicate", "truth_duplicated"), ("at once", "truth_duplicated"),
                                         ("ahead", "truth_ahead_of_time")])
def test_a_ground_truth_message_sent_twice_or_ahead_fails_naming_it(fault, code):
    """A ground-truth message re-sent (tick 60 after tick 100, or tick 100 at once) or stamped
    ahead (tick 130 after tick 100) passed unnoticed: the slots still match. It fails now, named."""
    rec = Recording(spec(), 1000)
    feed(rec, range(1, 101))
    rec.store_truth(joint_msg({"late duplicate": 60, "at once": 100, "ahead": 130}[fault]))
    feed(rec, range(101, 301))
    v = rec.verdict()
    assert [f.code for _, f in v.findings] == [code], v.table()
    clean = Recording(spec(), 1000)
    feed(clean, range(1, 301))
    assert clean.verdict().passed and "truth_stamps" in clean.verdict().table()  # positive control


def test_two_sims_in_one_namespace_are_named_as_two_publishers_not_restarts():
    """Specs of instances i1, i2, then i1 again (two sims latched on one spec topic): a restarted
    sim never comes back as an earlier instance, so it fails as two publishers, first."""
    rec = Recording(spec(instance="i1"), 1000)
    feed(rec, range(1, 101))
    assert rec.on_spec(spec(instance="i2")) == "restart"
    feed(rec, range(1, 51))
    rec.on_spec(spec(instance="i1"))
    feed(rec, range(101, 151))
    v = rec.verdict()
    assert v.findings[0][1].code == "two_publishers", v.table()
    assert "instances i1, i2 alternate" in v.findings[0][1].message
    # positive control: one restart (i1, then i2) is a restart, not two publishers
    once = Recording(spec(instance="i1"), 1000)
    feed(once, range(1, 101))
    once.on_spec(spec(instance="i2"))
    feed(once, range(1, 101))
    assert "two_publishers" not in [f.code for _, f in once.verdict().findings], once.verdict().table()


def late_camera_run(withheld_ticks: int, *, matched_before_joints: bool = False) -> "Recording":
    """Real time (10 ms of wall per 10 ms tick): the camera's topic matches at tick 10, its frames
    (every 5 ticks) come from ``withheld_ticks`` ticks later on."""
    clock = FakeClock()
    rec = Recording(spec(("top",)), 1000, clock=clock)
    if matched_before_joints:
        rec.note_publishers("top", 1, 0)
    feed(rec, range(1, 11), clock)
    if not matched_before_joints:
        rec.note_publishers("top", 1, 0)
    first = 10 + withheld_ticks
    feed(rec, range(11, 400), clock, images={k: ("top",) for k in range(first, 400) if k % 5 == 0})
    return rec


def test_a_camera_that_starts_late_is_a_finding_and_one_on_time_is_not():
    """The topic is live (matched, settled) from tick 60 on; frames withheld for 2 s of sim and wall
    time are a finding, naming the camera and the figures; from 0.6 s on, within the settle and the
    second of grace, nothing is found."""
    v = late_camera_run(200).verdict()
    (name, f), = v.findings
    assert (name, f.code) == ("images", "camera_started_late"), v.table()
    assert f.figures["camera"] == "top" and f.figures["first_frame_ns"] == 210 * DT_NS
    assert "top: first frame 1.50 s (wall) after its topic was live, stamped 2.00 s (sim)" in f.message
    for withheld in (1, 60, 140):
        assert late_camera_run(withheld).verdict().passed, withheld
    # matched while the sim was not yet publishing: counted from the first joint tick
    assert late_camera_run(200, matched_before_joints=True).verdict().findings[0][1].code == "camera_started_late"
    assert late_camera_run(60, matched_before_joints=True).verdict().passed
