"""The live recorder's ``--report``: a camera contact sheet without being asked for pixels, inside
the window the verdict judged; and the report of a sim killed mid-run, opened in headless
Chromium, shows where the streams stopped.

``--report`` alone keeps the newest frames' pixels (REPORT_PIXELS_MB) for the sheet; an explicit
``--keep-pixels-mb 0`` keeps none, and the page then says why it has no sheet."""
from __future__ import annotations

import re
import time

import cv2
import numpy as np
import pytest
from browser import Browser, chromium_path
from recorder_runs import finding, fresh_ns
from stand_in_sim import camera_spec, record_and_kill_the_sim, run_stand_in

from robogym_ros.nodes.recorder.cli import parse_args
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.recorder.ring_memory import REPORT_PIXELS_MB

N_TICKS = 60


@pytest.mark.parametrize("argv, kept_mb", [
    (["--report", "r"], REPORT_PIXELS_MB),
    (["--report", "r", "--keep-pixels-mb", "0"], 0.0),
    (["--report", "r", "--keep-pixels-mb", "2.5"], 2.5),
    ([], 0.0),
    (["--bag", "b", "--report", "r"], 0.0),  # offline: the sheet comes from the bag's own images
])
def test_report_keeps_pixels_unless_told(argv, kept_mb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_args(argv).keep_pixels_mb == kept_mb


def test_a_live_report_has_a_contact_sheet_by_default(ros, long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    ns = fresh_ns("sheet")
    part = ticks[1:1 + N_TICKS]

    def script(sim):
        sim.state(False, 0, "start")
        for t in part:
            sim.tick(t, names)
            time.sleep(0.005)

    report = tmp_path / "report"
    rc, out, verdict = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", str(N_TICKS),
                                    "--report", str(report))
    page = (report / "report.html").read_text()
    assert 'id="fig-cameras"' in page and (report / "cameras.png").is_file(), out
    assert 'id="no-contact-sheet"' not in page
    assert "inside the judged window" in page


def test_a_live_contact_sheet_shows_no_frame_after_the_judged_window(ros, long_ticks, tmp_path):
    """The ring keeps the newest frames, and frames go on arriving after the end (the grace in which
    the last ticks' truth catches up): the sheet's "last" frame was one of those, after the end of
    what was judged. Here the stand-in goes on publishing frames, magenta, 40 ticks past --ticks."""
    from contact_sheets import OUTSIDE_RGB, shows_outside_frames
    from sensor_msgs.msg import Image

    from robogym_ros.ros import stamps
    physics, ticks = long_ticks
    names = physics.joint_names
    ns = fresh_ns("sheetwin")
    part, more = ticks[1:1 + N_TICKS], ticks[1 + N_TICKS:1 + N_TICKS + 40]
    magenta = bytes(OUTSIDE_RGB) * 48

    def script(sim):
        sim.state(False, 0, "start")
        for t in part:
            sim.tick(t, names)
            time.sleep(0.005)
        time.sleep(0.1)
        for t in more:  # after the end: truth and frames (joint_states are not stored after it anyway)
            sim.pub["gt"].publish(tick_messages.joint_state(t, names))
            if t.stamp_ns % 50_000_000 == 0:
                for cam in ("left_wrist", "overhead"):
                    img = Image(height=6, width=8, encoding="rgb8", step=24, data=magenta)
                    img.header.stamp = stamps.stamp_msg(t.stamp_ns)
                    sim.pub[f"img:{cam}"].publish(img)
            time.sleep(0.002)

    report = tmp_path / "report"
    rc, out, verdict = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", str(N_TICKS),
                                    "--report", str(report))
    assert (report / "cameras.png").is_file(), out
    assert not shows_outside_frames(report / "cameras.png"), "the sheet shows a frame from after the recording"
    images = [c for c in verdict["checks"] if c["name"] == "images"][0]
    lo, hi = images["figures"]["frames_window_ns"]
    assert hi <= part[-1].stamp_ns, images["summary"]
    page = (report / "report.html").read_text()
    caption = re.search(r'<figure class="figure[^"]*" id="fig-cameras">.*?<figcaption>(.*?)</figcaption>',
                        page).group(1)
    assert f"inside the judged window {lo / 1e9:.3f}..{hi / 1e9:.3f} s" in caption, caption
    shown = [float(t) for t in re.findall(r"(\d+\.\d{3})(?:,| s)", caption.split("): ", 1)[1])]
    assert len(shown) == 6, caption  # first, middle, last of two cameras
    assert all(lo / 1e9 <= t <= hi / 1e9 for t in shown), (shown, lo, hi)


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (.ci/run installs Debian's "
                    "chromium package; apt-get install -y chromium)")
@pytest.mark.long
def test_the_report_of_a_killed_sim_shows_where_it_stopped(ros, tmp_path):
    """A sim SIGKILLed mid-run: the verdict FAILs on streams, and the report, opened in headless
    Chromium, outlines the streams figure in red and draws the silence as a red span in sim seconds,
    from joint_states' last stamp to where the recording ended; the check's row links to it."""
    report = tmp_path / "report"
    rc, out, verdict = record_and_kill_the_sim(tmp_path, fresh_ns("killedreport"), "--duration", "5",
                                               "--report", str(report), wait_s=60)
    assert rc == 1, out
    stop = finding(verdict, "streams", "stream_stopped")["figures"]
    with Browser() as browser:
        browser.open(report / "report.html")
        browser.fit_page()  # positions measured below are the screenshot's pixels
        outlined = browser.evaluate("Array.from(document.querySelectorAll('figure.fail')).map(f => f.id)")
        img = browser.evaluate("""(() => {
            const img = document.querySelector('#fig-streams img');
            const r = img.getBoundingClientRect(), st = getComputedStyle(img);
            const link = document.querySelector('#check-streams .figure-link a');
            return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height, natural: img.naturalWidth,
                    outline: [st.outlineColor, st.outlineStyle, st.outlineWidth].join(' '),
                    failures: JSON.parse(img.dataset.failures), link: link && link.getAttribute('href')};
        })()""")
        shot = cv2.imread(str(browser.screenshot(tmp_path / "killed_report.png")))
    assert "fig-streams" in outlined and img["link"] == "#fig-streams", (outlined, img)
    assert img["outline"] == "rgb(198, 40, 40) solid 3px", img["outline"]
    span = [f for f in img["failures"] if f["row"] == "joint_states"][0]
    assert span["from_s"] == pytest.approx(stop["last_stamp_ns"] / 1e9)
    assert span["to_s"] == pytest.approx(stop["silent_to_ns"] / 1e9) and span["to_s"] - span["from_s"] > 0.5
    # what the browser drew: the span red where the marks place it, and the red outline around the image
    k = img["w"] / img["natural"]
    x0, y0, x1, y1 = (int(img["x"] + v * k) if i % 2 == 0 else int(img["y"] + v * k) for i, v in enumerate(span["px"]))
    inside = shot[y0 + 3:y1 - 3, x0 + 3:x1 - 3].reshape(-1, 3).astype(int)
    assert _red(inside).mean() > 0.5, _red(inside).mean()
    above = shot[int(img["y"]) - 2, int(img["x"]) + 5:int(img["x"] + img["w"]) - 5].astype(int)
    assert _red(above).mean() > 0.9, _red(above).mean()
    print(f"killed at sim time {span['from_s']:.3f} s; red span to {span['to_s']:.3f} s; screenshot "
          f"{tmp_path / 'killed_report.png'}")


def _red(bgr: np.ndarray) -> np.ndarray:
    """Pixels of FAIL_RGB (#c62828) and near it (BGR)."""
    return (bgr[..., 2] > 150) & (bgr[..., 1] < 90) & (bgr[..., 0] < 90)
