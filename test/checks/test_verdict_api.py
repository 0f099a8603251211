"""The check API is as safe as the node: bad arguments give one clear ValueError naming the
argument (or a no-data result), never a raw numpy error; the pure frame formula agrees with
the sim's camera clock; stream stops are told from pauses."""
from __future__ import annotations

import numpy as np
import pytest
from verdict_lines import frames_line

from robogym_ros import checks
from robogym_ros.camera.clock import CameraClock
from robogym_ros.checks import (
    FrameSchedule,
    RunStateReport,
    StreamActivity,
    account_frames,
    audit_observations,
    audit_stream,
    check_fd_velocity,
    check_images,
    check_reported_velocity,
    check_slot_error,
    check_stream_end,
    check_tick_grid,
    frame_due_stamps,
    silence_threshold_s,
)

DT_NS = 10_000_000


def sines(n=100, joints=4):
    stamps = np.arange(1, n + 1) * DT_NS
    t = stamps[:, None] * 1e-9
    w = 2 * np.pi * np.linspace(0.3, 1.2, joints)
    return stamps, np.sin(w * t), w * np.cos(w * t)


# ----------------------------------------------------------------------------- bad arguments

@pytest.mark.parametrize("call, names", [
    (lambda s, q, v: check_slot_error(s, [[0.0] * 4] * 99 + [[0.0] * 3], s, q), "positions: rows differ in length"),
    (lambda s, q, v: check_slot_error(s, q[:-1], s, q), "positions must have 100 rows"),
    (lambda s, q, v: check_slot_error(s, q[:, :3], s, q), "positions have 3 columns (joints), true_positions have 4"),
    (lambda s, q, v: check_slot_error(s, q, s, q[:, None]), "true_positions must have 100 rows"),
    (lambda s, q, v: check_slot_error(s * 1e-9, q, s, q), "stamps_ns must be integer nanoseconds (these look like "
                                                          "seconds"),
    (lambda s, q, v: check_slot_error(s, q, s[:, None], q), "true_stamps_ns must be 1-D"),
    (lambda s, q, v: check_slot_error(s, [["a"] * 4] * 100, s, q), "positions: not an array of numbers"),
    (lambda s, q, v: check_fd_velocity(s, q, s, q, 0.01), "control_dt_ns must be a positive integer number of "
                                                          "nanoseconds, got 0.01 (0.01 looks like seconds"),
    (lambda s, q, v: check_fd_velocity(s, q, s, q, -5), "control_dt_ns must be a positive integer"),
    (lambda s, q, v: check_fd_velocity(s, q, s, q, None), "control_dt_ns must be a positive integer"),
    (lambda s, q, v: check_tick_grid(s, "10ms"), "control_dt_ns must be a positive integer"),
    (lambda s, q, v: check_reported_velocity(s, v, s, v, estimate="backward_difference", control_dt_ns=DT_NS),
     "needs true_positions and control_dt_ns"),
    (lambda s, q, v: check_reported_velocity(s, v, s, None), "estimate='instant' needs true_velocities"),
    (lambda s, q, v: check_reported_velocity(s, v, s, v, true_positions=q[:, :2], control_dt_ns=DT_NS),
     "true_positions have 2 columns"),
    (lambda s, q, v: audit_observations(s, [np.zeros(4)] * 99 + [np.zeros(5)], s, q),
     "observations: slot 0 holds 4 values, slot 99 holds 5"),
    (lambda s, q, v: audit_observations(s, [[0.0] * 4] * 99 + [[0.0, [1]]], s, q), "observations:"),
])
def test_bad_arguments_raise_one_clear_value_error(call, names):
    s, q, v = sines()
    with pytest.raises(ValueError) as err:
        call(s, q, v)
    assert names in str(err.value), str(err.value)
    assert len(str(err.value)) < 400


def test_empty_buffers_are_no_data_not_errors():
    _, q, v = sines()
    s = np.arange(1, 101) * DT_NS
    empty = np.zeros(0, np.int64)
    for r in (check_slot_error(empty, [], s, q), check_fd_velocity(empty, [], s, q, DT_NS),
              check_tick_grid([], DT_NS), check_reported_velocity(empty, [], s, v)):
        assert r.status == "no_data", r
    results = audit_observations(empty, [], s, q, control_dt_ns=DT_NS)
    assert {r.status for r in results} == {"no_data"}
    assert all(r.status == "no_data" for r in audit_stream(empty, [], s, q, DT_NS))


def test_huge_values_are_not_echoed():
    s, q, v = sines()
    with pytest.raises(ValueError) as err:
        check_fd_velocity(s, q, s, q, "x" * 5_000_000)
    assert len(str(err.value)) < 300


# ----------------------------------------------------------------------------- frames

@pytest.mark.parametrize("period_ns, dt_ns, first_tick", [
    (100_000_000, 10_000_000, 1), (100_000_000, 7_000_000, 1), (33_333_333, 2_000_000, 0),
    (50_000_000, 40_000_000, 1), (100_000_000, 100_000_000, 3), (10_000_000, 20_000_000, 1)])
def test_frame_formula_agrees_with_the_sim_camera_clock(period_ns, dt_ns, first_tick):
    clock = CameraClock(period_ns)
    ticks = np.arange(first_tick, first_tick + 2000) * dt_ns
    due_by_clock = [int(t) for t in ticks if clock.due(int(t))]
    lo, hi = int(ticks[0]), int(ticks[-1])
    assert frame_due_stamps(lo, hi, period_ns, dt_ns, first_tick_ns=lo).tolist() == due_by_clock
    # a window inside: the same frames, without knowing where the clock started
    inner = [t for t in due_by_clock if ticks[100] <= t <= ticks[1500]]
    assert frame_due_stamps(int(ticks[100]), int(ticks[1500]), period_ns, dt_ns).tolist() == inner


def test_a_clock_restarted_mid_run_agrees_after_its_first_frame():
    """A live camera_period_s change makes a new CameraClock: its first frame is the first tick."""
    clock = CameraClock(70_000_000)
    ticks = np.arange(531, 2000) * 10_000_000
    due = [int(t) for t in ticks if clock.due(int(t))]
    assert due[0] == ticks[0]
    assert frame_due_stamps(int(ticks[0]), int(ticks[-1]), 70_000_000, 10_000_000,
                            first_tick_ns=int(ticks[0])).tolist() == due


def frames_of(period_ticks=10, n_ticks=500):
    due = frame_due_stamps(DT_NS, n_ticks * DT_NS, period_ticks * DT_NS, DT_NS)
    return due, [checks.ImageMeta(int(s), 8, 6, 24, "rgb8", 144, "overhead") for s in due]


def test_skipped_frames_pass_lost_frames_fail():
    due, images = frames_of()
    schedule = [FrameSchedule("overhead", 10 * DT_NS, DT_NS, 500 * DT_NS)]
    skipped = due[5::3]  # the sim skipped every third frame and said so
    got = [im for im in images if im.stamp_ns not in set(skipped.tolist())]
    r = check_images(got, DT_NS, schedules=schedule, skipped_ns={"overhead": skipped})
    assert r.ok, [f.message for f in r.findings]
    assert r.figures["frames"]["n_skipped"] == len(skipped) and r.figures["frames"]["n_lost"] == 0
    lost = got[:7] + got[8:]  # one more frame missing, not reported skipped
    r = check_images(lost, DT_NS, schedules=schedule, skipped_ns={"overhead": skipped})
    assert [f.code for f in r.findings] == ["image_frames_lost"]
    assert r.findings[0].figures["stamps_ns"] == [got[7].stamp_ns]
    # Without skip reports, a missing frame of a skip-when-busy camera is counted, not failed...
    r = check_images(got, DT_NS, schedules=schedule, skipped_ns=None, skips_reported=False)
    assert r.ok and r.figures["frames"]["n_unattributed"] == len(skipped)
    # ... but a camera that renders every frame (real_time_factor 0) has no excuse.
    every = [FrameSchedule("overhead", 10 * DT_NS, DT_NS, 500 * DT_NS, every_frame=True)]
    r = check_images(got, DT_NS, schedules=every, skips_reported=False)
    assert [f.code for f in r.findings] == ["image_frames_lost"]


def test_period_the_spec_states_wrongly_fails_and_off_schedule_frames_are_named():
    due, images = frames_of(period_ticks=20)  # the camera runs at 200 ms
    r = check_images(images, DT_NS, schedules=[FrameSchedule("overhead", 10 * DT_NS, DT_NS, 500 * DT_NS)],
                     skipped_ns={"overhead": []})
    assert "image_frames_lost" in [f.code for f in r.findings]
    shifted = [checks.ImageMeta(im.stamp_ns + DT_NS, 8, 6, 24, "rgb8", 144, "overhead") for im in images]
    r = check_images(shifted, DT_NS, periods_ns={"overhead": 20 * DT_NS})
    assert "image_off_schedule" in [f.code for f in r.findings]


def test_camera_that_stops_is_named_a_tail_in_flight_is_not():
    due, images = frames_of()
    schedule = FrameSchedule("overhead", 10 * DT_NS, DT_NS, 500 * DT_NS, tail_ns=30 * DT_NS)
    r = check_images(images[:-2], DT_NS, schedules=[schedule], skipped_ns={"overhead": []})
    assert r.ok and r.figures["frames"]["n_in_flight"] == 2  # last 2 frames: 20 ticks < tail
    r = check_images(images[:20], DT_NS, schedules=[schedule], skipped_ns={"overhead": []})
    assert [f.code for f in r.findings] == ["camera_stopped"]
    assert "no frame after 2.000 s while joint_states went on to 5.000 s" in r.findings[0].message


def test_frame_accounting_counts_every_due_frame_once():
    due, _ = frames_of()
    figures, findings = account_frames([FrameSchedule("c", 10 * DT_NS, DT_NS, 500 * DT_NS)],
                                       {"c": due[:-5]}, {"c": due[-5:]}, DT_NS, skips_reported=True)
    assert findings == [] and figures["frames"]["n_due"] == len(due) == 50
    assert figures["frames"]["n_received"] == 45 and figures["frames"]["n_skipped"] == 5


# ----------------------------------------------------------------------------- stream ends

def activity(last_stamp_ns, last_s, end_s=10.0, after_end=False, topic="joint_states"):
    return StreamActivity(topic, 100, last_stamp_ns, last_s, end_s, after_end)


def test_a_stream_that_stops_fails_naming_when():
    r = check_stream_end([activity(1_400_000_000, 1.41, 12.0)], [RunStateReport(False, 0, "start")], silence_s=1.0)
    assert [f.code for f in r.findings] == ["stream_stopped"]
    assert ("joint_states stopped at sim time 1.400 s, 1.41 s (wall) into the recording; nothing for the last "
            "10.59 s of it") in r.findings[0].message
    assert "did not report a pause" in r.findings[0].message


def test_a_paused_sim_is_not_a_dead_sim():
    states = [RunStateReport(False, 0, "start"), RunStateReport(True, 1_400_000_000, "pause")]
    r = check_stream_end([activity(1_400_000_000, 1.41, 12.0)], states, silence_s=1.0)
    assert r.ok and r.figures["paused_at_end"]
    # paused later than the last tick received: the ticks in between were lost
    states = [RunStateReport(False, 0, "start"), RunStateReport(True, 1_500_000_000, "pause")]
    r = check_stream_end([activity(1_400_000_000, 1.41, 12.0)], states, silence_s=1.0)
    assert "the ticks in between never arrived" in r.findings[0].message
    # paused, then resumed, then stopped: a stop
    states.append(RunStateReport(False, 1_500_000_000, "resume"))
    assert not check_stream_end([activity(1_400_000_000, 1.41, 12.0)], states, silence_s=1.0).ok


def test_alive_streams_and_short_silences_pass():
    assert check_stream_end([activity(1, 9.5, 10.0)], [], silence_s=1.0).ok
    assert check_stream_end([activity(1, 2.0, 10.0, after_end=True)], [], silence_s=1.0).ok  # a backlog drained


@pytest.mark.parametrize("dt_s, rtf, expected", [(0.01, 1.0, 1.0), (0.002, 2.0, 1.0), (0.04, 0.5, 1.6),
                                                 (0.01, 0.0, 1.0), (0.01, None, 1.0), (0.01, 0.01, 20.0)])
def test_silence_threshold_follows_the_tick_period(dt_s, rtf, expected):
    assert silence_threshold_s(dt_s, rtf) == pytest.approx(expected)


def test_a_skip_report_that_overtakes_frames_still_rendering_does_not_make_them_lost():
    """Skip reports travel on their own topic and may arrive before the frames rendered before them."""
    due, images = frames_of()
    schedule = FrameSchedule("overhead", 10 * DT_NS, DT_NS, 480 * DT_NS, tail_ns=30 * DT_NS)
    r = check_images(images[:-3], DT_NS, schedules=[schedule], skipped_ns={"overhead": [490 * DT_NS]})
    assert r.ok, [f.message for f in r.findings]
    assert r.figures["frames"]["n_in_flight"] == 1 and r.figures["frames"]["n_lost"] == 0  # tick 480


def test_frame_formula_agrees_with_a_clock_started_after_a_live_change():
    import inspect
    if "after_ns" not in inspect.signature(CameraClock).parameters:
        pytest.skip("this CameraClock anchors a new period at the first tick it sees")
    last_seen = 5_310_000_000
    clock = CameraClock(70_000_000, last_seen)
    ticks = np.arange(532, 2000) * 10_000_000
    due = [int(t) for t in ticks if clock.due(int(t))]
    assert frame_due_stamps(int(ticks[0]), int(ticks[-1]), 70_000_000, 10_000_000).tolist() == due


def test_frames_from_the_sims_first_tick_are_on_schedule():
    """A recorder that is live before the sim starts sees its first frame, at tick 1 (tick 0,
    the initial state, is never published): grid point 0 falls on it. Real physics stamps, the
    sim's CameraClock, the recorder's schedules. Positive control: a schedule that does not
    know where the sim starts calls that frame off schedule (a false alarm seen at RTF 0)."""
    from dataclasses import replace

    from robogym_ros.contract import FIRST_TICK_INDEX, CameraSpec, JointSpec, Spec
    from robogym_ros.recorder.schedules import SpecChange, frame_schedules
    from robogym_ros.sim.physics import Physics
    from robogym_ros.task.scene import default_model_path

    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    stamps = []
    for _ in range(250):
        physics.step_tick()
        stamps.append(physics.snapshot().stamp_ns)
    dt = physics.control_dt_ns
    assert stamps[0] == FIRST_TICK_INDEX * dt
    clock = CameraClock(100_000_000)
    frames = [s for s in stamps if clock.due(s)]
    assert frames[0] == stamps[0]
    spec = Spec(control_dt_ns=dt, physics_dt_ns=2_000_000, decimation=5, joints=(JointSpec("j"),),
                cameras=(CameraSpec("overhead", "cameras/overhead/image_raw", "cameras/overhead/camera_info",
                                    width=8, height=6, period_s=0.1),), camera_frames="every_frame")
    schedules, _ = frame_schedules([SpecChange(None, spec)], stamps[0], stamps[-1],
                                   judged_from_ns={"overhead": frames[0]}, speed=1.0)
    figures, findings = account_frames(schedules, {"overhead": frames}, {}, dt, skips_reported=True)
    assert findings == [] and figures["frames"]["n_received"] == len(frames), (findings, figures)
    unaware = [replace(s, first_tick_ns=None) for s in schedules]
    _, findings = account_frames(unaware, {"overhead": frames}, {}, dt, skips_reported=True)
    assert [f.code for f in findings] == ["image_off_schedule"]


# ----------------------------------------------------------------------------- count lines that add up





def test_every_frame_count_line_adds_up_and_says_its_window():
    """A repaired killed bag said "frames due 177: received 175, skipped by the sim 0, lost 0": two due
    frames were in no category (in flight at the end), and the window was only in the JSON."""
    due, images = frames_of()
    schedule = FrameSchedule("overhead", 10 * DT_NS, DT_NS, 500 * DT_NS, tail_ns=30 * DT_NS)
    r = check_images(images[:-2], DT_NS, schedules=[schedule], skipped_ns={"overhead": []})
    line = frames_line(r.summary)
    assert r.ok and line["in_flight"] == 2 and line["received"] == len(due) - 2
    assert line["window"] == ("0.010 s", "5.000 s") and r.figures["frames_window_ns"] == [DT_NS, 500 * DT_NS]
    # a camera that stopped: the frames after its last one are named with it
    r = check_images(images[:20], DT_NS, schedules=[schedule], skipped_ns={"overhead": []})
    assert frames_line(r.summary)["after_stop"] == len(due) - 20 and not r.ok
    # no skip reports: the missing ones are named too
    got = [im for k, im in enumerate(images) if k % 4]
    r = check_images(got, DT_NS, schedules=[schedule], skipped_ns=None, skips_reported=False)
    assert frames_line(r.summary)["missing"] == len(images) - len(got)


def test_images_outside_the_judged_frames_are_named_in_the_image_count():
    """`303 images from 3 cameras ... frames due 288: received 288`: the 15 images before the frames
    were judged from were in one count and not the other, unsaid."""
    due, images = frames_of()
    schedule = FrameSchedule("overhead", 10 * DT_NS, 101 * DT_NS, 500 * DT_NS)  # judged from tick 101
    r = check_images(images, DT_NS, schedules=[schedule], skipped_ns={"overhead": []})
    assert r.ok and frames_line(r.summary)["received"] == len(due) - 10
    assert r.figures["n_images_not_judged"] == 10
    assert r.summary.startswith(f"{len(images)} images from 1 cameras")
    assert f"; 10 of the {len(images)} images outside the frames judged (not counted above)" in r.summary
