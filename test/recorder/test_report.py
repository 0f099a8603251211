"""The visual verdict (robogym_ros.recorder.report.page): report.html and its PNGs from a verdict
and the recorded arrays of real physics; a fault-injected run's report marks the fault; and
the page loads in a real browser (headless Chromium) with every image, screenshot saved."""
from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from browser import Browser, chromium_path
from contact_sheets import OUTSIDE_RGB, shows_outside_frames

from robogym_ros import checks
from robogym_ros.nodes.motion.scripted_motion import targets_at
from robogym_ros.recorder.report.data import ReportData
from robogym_ros.recorder.report.figures import lateness_histogram
from robogym_ros.recorder.report.page import REPORT_HTML, write_report
from robogym_ros.recorder.verdict import Verdict
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path

N_TICKS = 150
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DIAGNOSTICS = {"late_steps": "3", "max_lateness_s": "0.0042", "steps": "5000",
               "lateness_histogram": json.dumps({"edges_s": [0, 1e-5, 1e-4, 1e-3, 1e-2, None],
                                                 "counts": [4000, 900, 90, 7, 3]})}


@pytest.fixture(scope="module")
def truth():
    """Real ground truth: the scripted motion on the SO-101 scene, one row per tick."""
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    stamps, q, qd = [], [], []
    for k in range(N_TICKS):
        physics.set_targets(targets_at(k * physics.control_dt_s))
        physics.step_tick()
        tick = physics.snapshot()
        stamps.append(tick.stamp_ns)
        q.append(tick.position)
        qd.append(tick.velocity)
    return physics, np.array(stamps, np.int64), np.array(q), np.array(qd)


def run(truth, stamps, positions, velocities=None, frames=None):
    physics, t_stamps, t_q, t_qd = truth
    dt = physics.control_dt_ns
    results = checks.audit_stream(stamps, positions, t_stamps, t_q, dt, velocities=velocities,
                                  true_velocities=t_qd, decimation=physics.decimation,
                                  joint_names=physics.joint_names)
    data = ReportData(tuple(physics.joint_names), dt, stamps, positions, t_stamps, t_q, velocities, t_qd,
                      physics.decimation, frames=frames or {})
    return Verdict(results, title="robogym_recorder verdict"), data


def images_of(page: Path) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page.read_text())


def assert_valid_pngs(page: Path) -> None:
    srcs = images_of(page)
    assert srcs
    for src in srcs:
        path = page.parent / src
        assert path.is_file(), src
        assert path.read_bytes()[:8] == PNG_SIGNATURE, src
        image = cv2.imread(str(path))  # decodes whole
        assert image is not None and image.shape[0] > 100 and image.shape[1] > 100, src


def test_a_clean_run_passes_with_every_figure(truth, tmp_path):
    _, stamps, q, qd = truth
    frames = {"overhead": [(int(s), np.full((24, 32, 3), k, np.uint8)) for k, s in enumerate(stamps[::30])]}
    verdict, data = run(truth, stamps, q.copy(), qd.copy(), frames)
    report = write_report(tmp_path, verdict, data, diagnostics=DIAGNOSTICS)
    assert verdict.status == "pass"
    assert report.html == tmp_path / REPORT_HTML
    assert [f.name for f in report.figures] == ["positions", "slot_error", "tick_grid", "velocity", "lateness",
                                                "cameras"]
    assert_valid_pngs(report.html)
    text = report.html.read_text()
    assert 'id="verdict-status">PASS<' in text and 'class="figure fail"' not in text
    assert report.figure("positions").marks["aliased_slots"] == 0
    grid = report.figure("tick_grid").marks
    assert {k: grid[k] for k in ("dropped", "duplicated", "reordered", "restarts")} == {
        "dropped": 0, "duplicated": 0, "reordered": 0, "restarts": 0}
    assert report.figure("velocity").level == "ok"
    assert report.figure("lateness").marks["histogram"]
    sheet = report.figure("cameras").marks
    assert sheet["cameras"] == 1 and sheet["frames_shown"] == 3


def test_an_aliased_buffer_is_marked_in_the_report(truth, tmp_path):
    """Fault injection: a buffer of references, every slot the same array (the newest)."""
    _, stamps, q, _ = truth
    newest = q[-1].copy()
    aliased = np.array([newest] * len(stamps))
    verdict, data = run(truth, stamps, aliased)
    report = write_report(tmp_path, verdict, data)
    assert verdict.status == "fail"
    fig = report.figure("positions")
    assert fig.failed and fig.marks["aliased_slots"] == fig.marks["older_slots"] == len(stamps) - 1
    assert report.figure("slot_error").failed and report.figure("slot_error").marks["slots_beyond_tolerance"] > 0
    text = report.html.read_text()
    assert '<figure class="figure fail" id="fig-positions">' in text
    assert "every slot holds the newest value: stored references, not copies" in text
    assert re.search(r'<tr class="fail" id="check-aliasing">', text)
    assert_valid_pngs(report.html)
    # Positive control: the same report of the clean copy marks nothing.
    clean = write_report(tmp_path / "clean", *run(truth, stamps, q.copy()))
    assert not clean.figure("positions").failed and clean.figure("positions").marks["aliased_slots"] == 0


def test_the_velocity_figure_states_what_the_checks_found(truth, tmp_path):
    """Like with like: each velocity panel draws what its check compared and states only the
    check's own figures. Clean: both PASS, no gain of the mean-of-end-velocities kind (the old
    plot said "gain 1.32" on a PASS). dt-unit fault (a backward difference over the physics dt
    published as JointState.velocity): the reported panel fails with the decimation factor, the FD
    panel still passes (positions are right)."""
    physics, stamps, q, qd = truth
    clean = write_report(tmp_path / "clean", *run(truth, stamps, q.copy(), qd.copy()))
    fig = clean.figure("velocity")
    titles = fig.marks["titles"]
    assert fig.level == "ok" and set(titles) == {"velocity_fd", "velocity_reported"}, titles
    assert re.search(r"velocity_fd PASS: largest relative error \S+ over 12 moving joints",
                     titles["velocity_fd"]), titles
    assert "velocity_reported PASS" in titles["velocity_reported"], titles
    assert not any("gain" in t or "FAIL" in t for t in titles.values()), titles
    assert fig.marks["pairs"] == len(stamps) - 1
    backward = np.full_like(q, np.nan)
    backward[1:] = (q[1:] - q[:-1]) / (physics.physics_dt_ns * 1e-9)  # the dt-unit fault: physics dt for control dt
    verdict, data = run(truth, stamps, q.copy(), backward)
    fault = write_report(tmp_path / "fault", verdict, data)
    fig = fault.figure("velocity")
    titles = fig.marks["titles"]
    assert verdict.status == "fail" and fig.failed
    assert titles["velocity_reported"].count("FAIL") == 1 and "5.00x = decimation (5)" in titles["velocity_reported"]
    assert "velocity_fd PASS" in titles["velocity_fd"], titles
    assert abs(fig.marks["factors"]["velocity_reported"] - physics.decimation) < 0.1
    assert '<figure class="figure fail" id="fig-velocity">' in fault.html.read_text()


def test_a_report_without_kept_pixels_says_why_it_has_no_contact_sheet(truth, tmp_path):
    _, stamps, q, qd = truth
    report = write_report(tmp_path, *run(truth, stamps, q.copy(), qd.copy(), {"overhead": []}))
    assert "cameras" not in [f.name for f in report.figures]
    text = report.html.read_text()
    assert '<p class="note" id="no-contact-sheet">No camera contact sheet: frames of overhead arrived' in text
    assert "--keep-pixels-mb 0" in text


def test_drops_duplicates_and_reorders_are_marked_on_the_tick_grid(truth, tmp_path):
    _, stamps, q, _ = truth
    order = list(range(len(stamps)))
    del order[40:43]  # three ticks dropped
    order.insert(60, order[59])  # one duplicated
    order[80], order[81] = order[81], order[80]  # one pair swapped: one reordered
    idx = np.array(order)
    verdict, data = run(truth, stamps[idx], q[idx])
    report = write_report(tmp_path, verdict, data)
    fig = report.figure("tick_grid")
    assert fig.failed
    assert fig.marks["dropped"] == 3 and fig.marks["duplicated"] == 1 and fig.marks["reordered"] == 1


def test_lateness_histogram_parsing():
    edges, counts = lateness_histogram(DIAGNOSTICS)
    assert len(edges) == len(counts) + 1 and counts.sum() == 5000 and edges[-1] == float("inf")
    assert lateness_histogram({"lateness_histogram": "not json"}) is None
    assert lateness_histogram({}) is None


def test_report_of_a_usage_error_still_renders(tmp_path):
    report = write_report(tmp_path, Verdict.from_usage_error("no joint_states received"), None)
    assert "no joint_states received" in report.html.read_text() and report.figures == ()


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (.ci/run installs Debian's "
                    "chromium package; apt-get install -y chromium)")
def test_the_report_loads_in_a_real_browser(truth, tmp_path):
    _, stamps, q, qd = truth
    aliased = np.array([q[-1]] * len(stamps))  # a failing report: the fault must show in the page too
    report = write_report(tmp_path, *run(truth, stamps, aliased, qd.copy()), diagnostics=DIAGNOSTICS)
    with Browser() as browser:
        browser.open(report.html)
        images = browser.evaluate(
            "Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        status = browser.evaluate("document.getElementById('verdict-status').textContent")
        failed_figures = browser.evaluate("Array.from(document.querySelectorAll('figure.fail')).map(f => f.id)")
        shot = browser.screenshot(tmp_path / "screenshot.png")
    assert [src for src, _, _ in images] == images_of(report.html)
    assert all(complete and width > 0 for _, complete, width in images), images
    assert status == "FAIL" and "fig-positions" in failed_figures
    png = cv2.imread(str(shot))
    assert png is not None and png.shape[1] >= 1000 and png.shape[0] > 1500  # the whole page, not a viewport
    assert png.std() > 10  # not a blank page
    print(f"screenshot {shot} {png.shape[1]}x{png.shape[0]}")


def test_the_demo_writes_the_report_from_its_bag_and_verdict(truth, tmp_path):
    """robogym_demo's report step: the recorder's verdict.json and bag become report.html with
    the camera contact sheet decoded from the bag's images."""
    from robogym_ros.contract import CameraSpec, JointSpec, Spec
    from robogym_ros.recorder.bag.writer import BagWriter
    from robogym_ros.tools.demo import write_demo_report
    physics, stamps, q, qd = truth
    spec = Spec(joints=tuple(JointSpec(n) for n in physics.joint_names), control_dt_ns=physics.control_dt_ns,
                physics_dt_ns=physics.physics_dt_ns, decimation=physics.decimation,
                cameras=(CameraSpec("overhead", width=32, height=24, period_s=0.1),))
    bag = tmp_path / "bag"
    with BagWriter(bag) as writer:
        writer.write_spec("/robogym_sim/spec", spec)
        for k, s in enumerate(stamps):
            writer.write_joint_state("/joint_states", int(s), physics.joint_names, q[k], qd[k])
            writer.write_joint_state("/ground_truth/joint_states", int(s), physics.joint_names, q[k], qd[k])
            if k % 10 == 0:
                writer.write_image("/cameras/overhead/image_raw", int(s), 32, 24, np.full((24, 32, 3), k, np.uint8))
    verdict, _ = run(truth, stamps, q.copy(), qd.copy())
    (tmp_path / "verdict.json").write_text(verdict.to_json())
    page = write_demo_report(bag, tmp_path / "verdict.json", tmp_path / "report")
    text = page.read_text()
    assert 'id="verdict-status">PASS<' in text and 'id="fig-cameras"' in text and 'id="fig-positions"' in text
    assert_valid_pngs(page)
    sheet = cv2.imread(str(tmp_path / "report" / "cameras.png"))
    assert sheet is not None


def test_frames_from_the_recorders_ring(tmp_path):
    from robogym_ros.recorder.report.inputs import frames_from_ring
    from robogym_ros.recorder.ring import ImageRing
    ring = ImageRing(100, pixel_budget_bytes=10 * 32 * 24 * 3)
    for k in range(20):  # only the newest 10 keep their pixels
        ring.store(k * 10**8, 32, 24, 96, "rgb8", np.full((24, 32, 3), k, np.uint8).tobytes(), "overhead")
    frames = frames_from_ring(ring)["overhead"]
    assert [s for s, _ in frames] == [10 * 10**8, 15 * 10**8, 19 * 10**8]
    assert frames[-1][1].shape == (24, 32, 3) and int(frames[-1][1][0, 0, 0]) == 19


def test_the_recorder_writes_the_report_it_is_asked_for(tmp_path):
    """`robogym_recorder --bag BAG --report DIR`: the verdict, then report.html; a report folder
    that cannot be written is refused before anything else, exit 2."""
    import subprocess
    import sys

    from sim_bags import write_sim_bag
    write_sim_bag(tmp_path / "bag")
    cli = [sys.executable, "-m", "robogym_ros.nodes.recorder"]
    run = subprocess.run([*cli, "--bag", str(tmp_path / "bag"), "--report", str(tmp_path / "report")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"report: {tmp_path / 'report' / REPORT_HTML}" in run.stdout
    page = tmp_path / "report" / REPORT_HTML
    assert 'id="verdict-status">PASS<' in page.read_text()
    assert_valid_pngs(page)
    (tmp_path / "file").write_text("")
    run = subprocess.run([*cli, "--bag", str(tmp_path / "bag"), "--report", str(tmp_path / "file")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--report" in run.stderr and "is not a writable folder" in run.stderr, \
        run.stdout + run.stderr


def test_the_tick_grid_is_drawn_over_sim_time(truth, tmp_path):
    """The x axis is sim time (it was the message index): a dropped tick is marked at its own stamp."""
    _, stamps, q, _ = truth
    keep = np.ones(len(stamps), bool)
    keep[[40, 41, 90]] = False  # three ticks dropped, two places
    verdict, data = run(truth, stamps[keep], q[keep])
    fig = report_of(tmp_path, verdict, data).figure("tick_grid")
    assert fig.failed and "sim time" in fig.marks["x_axis"]
    assert fig.marks["dropped_at_s"] == pytest.approx((stamps[[40, 41, 90]] / 1e9).tolist())
    lo, hi = fig.marks["xlim_s"]
    assert lo <= stamps[0] / 1e9 and hi >= stamps[-1] / 1e9 and hi < stamps[-1] / 1e9 + 1.0


def test_an_exact_slot_is_drawn_at_zero(truth, tmp_path):
    """"Error per slot" drew every exact slot at 1e-12 on a log axis while the table said max 0: zero
    is drawn as zero, on a labelled 0 line, and the title states the same max as the check."""
    _, stamps, q, qd = truth
    verdict, data = run(truth, stamps, q.copy(), qd.copy())
    assert "max 0 over" in checks.by_name(verdict.results, "slot_error").summary
    fig = report_of(tmp_path, verdict, data).figure("slot_error")
    assert fig.marks["max_error"] == 0 and fig.marks["slots_exact"] == len(stamps)
    assert fig.marks["drawn_min"] == 0.0 and 0.0 in fig.marks["y_ticks"]
    assert "sim time" in fig.marks["x_axis"]
    # a slot off by 1e-6 is drawn where it is, beyond the tolerance
    off = q.copy()
    off[10, 3] += 1e-6
    fig = report_of(tmp_path / "off", *run(truth, stamps, off, qd.copy())).figure("slot_error")
    assert fig.failed and fig.marks["max_error"] == pytest.approx(1e-6) and fig.marks["slots_exact"] == len(stamps) - 1


def test_the_contact_sheet_stays_inside_the_judged_window(truth, tmp_path):
    """A sheet "first, middle, last" showed a "last" frame after the recording ended: frames outside
    the window the verdict judged are not drawn, and the sheet says the window."""
    from robogym_ros.contract import JointSpec, Spec
    from robogym_ros.recorder.judge import verdict_results
    physics, stamps, q, qd = truth
    spec = Spec(joints=tuple(JointSpec(n) for n in physics.joint_names), control_dt_ns=physics.control_dt_ns,
                decimation=physics.decimation)
    part = slice(20, 120)  # judged: ticks 20..119; kept frames run from tick 0 to 40 ticks past the end
    results = verdict_results(stamps[part], q[part], qd[part], stamps[part], q[part], qd[part], spec)
    verdict = Verdict(results)
    dt = physics.control_dt_ns
    after = [int(stamps[119] + k * dt) for k in (10, 40)]
    frames = {"overhead": [(int(s), np.full((24, 32, 3), OUTSIDE_RGB if s < stamps[20] or s > stamps[119] else 90,
                                            np.uint8)) for s in list(stamps[:120:15]) + after]}
    data = ReportData(tuple(physics.joint_names), dt, stamps[part], q[part], stamps[part], q[part], qd[part], qd[part],
                      physics.decimation, frames=frames)
    report = report_of(tmp_path, verdict, data)
    assert not shows_outside_frames(report.figure("cameras").path)  # what was drawn: no frame from outside
    sheet = report.figure("cameras").marks
    assert sheet["window_ns"] == [int(stamps[20]), int(stamps[119])]
    assert sheet["frames_shown"] == 3 and all(stamps[20] <= s <= stamps[119] for s in sheet["stamps_ns"]), sheet
    assert sheet["kept_outside_window"] == 2 + 2  # 2 before tick 20 (ticks 0, 15), 2 after the end
    assert "inside the judged window" in report.figure("cameras").caption


def test_the_lateness_figure_does_not_warn_beside_a_pass(truth, tmp_path):
    """No check judges the sim's pacing: its late steps are stated, never a WARN beside a PASS verdict."""
    _, stamps, q, qd = truth
    verdict, data = run(truth, stamps, q.copy(), qd.copy())
    report = write_report(tmp_path, verdict, data, diagnostics=DIAGNOSTICS)  # 3 late steps
    fig = report.figure("lateness")
    assert verdict.status == "pass" and fig.level == "ok"
    assert "3 late steps" in fig.marks["title"] and "WARN" not in fig.marks["title"]
    assert "WARN" not in report.html.read_text()


def test_a_stopped_stream_is_red_from_its_last_stamp_to_the_end(tmp_path):
    """The streams figure draws the streams check's own figures over sim time: a stream that stopped
    is a red span from its last stamp to where the recording ended; a live one is not."""
    from robogym_ros.checks import RunStateReport, StreamActivity, check_stream_end
    dead = StreamActivity("joint_states", 200, 2_000_000_000, 2.0, 5.0, first_stamp_ns=10_000_000,
                          first_arrival_s=0.01)
    live = StreamActivity("ground_truth/joint_states", 500, 4_990_000_000, 4.99, 5.0, True, 3,
                          first_stamp_ns=10_000_000, first_arrival_s=0.01)
    streams = check_stream_end([dead, live], [RunStateReport(False, 0, "start")], silence_s=1.0)
    finding = streams.findings[0]
    assert finding.figures["silent_to_ns"] == pytest.approx(5_000_000_000, abs=20_000_000)  # 3 s more at 1x
    report = write_report(tmp_path, Verdict([streams]), None)
    fig = report.figure("streams")
    assert fig.failed and fig.marks["x_axis"] == "sim time [s]" and fig.checks == ("streams",)
    (span,) = fig.marks["failures"]
    assert span["row"] == "joint_states" and span["from_s"] == 2.0
    assert span["to_s"] == pytest.approx(finding.figures["silent_to_ns"] / 1e9)
    png = cv2.imread(str(fig.path))  # the span is drawn red where the marks say
    x0, y0, x1, y1 = span["px"]
    box = png[y0 + 3:y1 - 3, x0 + 3:x1 - 3].reshape(-1, 3).astype(int)
    red = (box[:, 2] > 150) & (box[:, 1] < 90) & (box[:, 0] < 90)  # BGR: #c62828 and its white hatching
    assert red.mean() > 0.5, red.mean()
    text = report.html.read_text()
    assert '<figure class="figure fail" id="fig-streams"' in text
    assert '<td class="figure-link"><a href="#fig-streams">streams</a></td>' in text
    healthy = check_stream_end([live], [], silence_s=1.0)
    fig = write_report(tmp_path / "live", Verdict([healthy]), None).figure("streams")
    assert not fig.failed and fig.marks["failures"] == []


def report_of(out, verdict, data):
    return write_report(out, verdict, data)
