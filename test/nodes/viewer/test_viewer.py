"""robogym_viewer in headless Chromium (Debian's chromium over the DevTools pipe: test/browser.py)
against a real sim moved by the scripted motion: the picture changes while the sim runs and
not at all while it is paused, the page's Pause button pauses the sim (its run state says so),
and two viewers at once get the same frames, each encoded once."""
from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import pytest
from browser import Browser, chromium_path
from mcpharness import ProgramUnderTest, SimWatcher, free_port
from simharness import wait_for

pytestmark = pytest.mark.skipif(chromium_path() is None,
                                reason="chromium is not installed (apt-get install -y chromium)")


def open_page(browser: Browser, url: str) -> None:
    browser.events.clear()
    browser.call("Page.navigate", session=True, url=url)
    browser.wait_event("Page.loadEventFired")


def frames_shown(browser: Browser) -> int:
    return int(browser.evaluate("document.body.dataset.framesShown || 0"))


def frame_stamp(browser: Browser) -> int:
    return int(browser.evaluate("document.body.dataset.frameStamp || 0"))


def targets_moving(watcher: SimWatcher) -> bool:
    """The two newest servo targets the physics held differ: the motion's commands take effect."""
    held = watcher.snapshot(watcher.targets)[-2:]
    return len(held) == 2 and held[0].position.tolist() != held[1].position.tolist()


def shot(browser: Browser, path: Path) -> np.ndarray:
    return cv2.imread(str(browser.screenshot(path)), cv2.IMREAD_COLOR)


def canvas_of(browser: Browser, image: np.ndarray) -> np.ndarray:
    r = browser.evaluate("(() => { const r = document.getElementById('view').getBoundingClientRect();"
                         " return [r.left, r.top, r.width, r.height]; })()")
    x, y, w, h = (round(v) for v in r)
    return image[y:y + h, x:x + w]


def picture_differs(browser: Browser, before: np.ndarray, path: Path):
    """A predicate: the canvas now shows other pixels than ``before``."""
    return lambda: not np.array_equal(before, canvas_of(browser, shot(browser, path)))


def viewer_figures(port: int) -> dict:
    return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=10))["viewer"]


@pytest.mark.long
def test_two_viewers_watch_a_moving_sim_pause_it_with_the_button_and_see_it_still(make_sim, tmp_path):
    _sim, watcher = make_sim(SimWatcher)
    motion = ProgramUnderTest(["robogym_ros.nodes.motion", "--ros-args", "-r", f"__ns:=/{watcher.namespace}"])
    viewer = None
    try:
        port = free_port()
        viewer = ProgramUnderTest(["robogym_ros.nodes.viewer", "--namespace", watcher.namespace, "--port", str(port)],
                         ready="viewer of the sim")
        url = f"http://127.0.0.1:{port}/"
        assert motion.proc.poll() is None, motion.output()
        with Browser(1100, 480) as first, Browser(1100, 480) as second:
            for browser in (first, second):
                open_page(browser, url)
            wait_for(lambda: frames_shown(first) >= 5 and frames_shown(second) >= 5, 60, "frames in both viewers")
            assert first.evaluate("document.getElementById('run').textContent") == "running"

            # running, with motion: the picture changes, in both viewers. The motion node is a
            # process of its own that may start after the viewer shows frames (a static scene
            # renders the same pixels): first the physics holds moving targets, then the pictures.
            watcher.wait_for(lambda: targets_moving(watcher), 30, "the motion's targets held by the physics")
            for k, browser in enumerate((first, second)):
                # the frame's figures before the screenshot: a frame drawn in between is then newer
                # than them, not taken for the one "before" shows (CI's failure: the stamp was read
                # after a frame landed, and the picture "changed" to that same frame)
                stamp, shown = frame_stamp(browser), frames_shown(browser)
                before = canvas_of(browser, shot(browser, tmp_path / f"run{k}a.png"))
                assert before.shape[0] > 100 and before.std() > 5, "the canvas shows no picture"
                wait_for(picture_differs(browser, before, tmp_path / f"run{k}b.png"), 15,
                         f"viewer {k}'s picture to change while the sim runs with motion "
                         f"(frame of {stamp} ns, {shown} shown, at the start)")
                # and it changed because newer frames of the sim were drawn (bounded: the screenshot
                # may show a frame the page's figures already counted)
                wait_for(lambda: frame_stamp(browser) > stamp and frames_shown(browser) > shown, 15,
                         f"viewer {k} to draw a newer frame than {stamp} ns")
            f0 = viewer_figures(port)
            time.sleep(2.0)
            f1 = viewer_figures(port)
            assert f1["viewers"] == 2
            # each frame encoded once for both: more frames sent than encoded, never more encoded than offered
            encoded, sent = f1["frames_encoded"] - f0["frames_encoded"], f1["frames_sent"] - f0["frames_sent"]
            offered = f1["frames_offered"] - f0["frames_offered"]
            assert 0 < encoded <= offered + 1 and sent > encoded, (f0, f1)  # +1: one in the encoder at f0

            # the page's Pause button pauses the sim: its run state says so
            first.evaluate("document.getElementById('pause').click()")
            watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "pause", 10, "the sim's pause")
            assert watcher.snapshot(watcher.states)[-1].paused
            wait_for(lambda: first.evaluate("document.getElementById('answer').textContent") == "pause: paused", 10,
                     "the button's answer")
            wait_for(lambda: second.evaluate("document.getElementById('run').textContent") == "paused", 10,
                     "the other viewer showing the pause")

            # paused: nothing on either page changes (one diagnostics period first, for the last figures)
            time.sleep(2.5)
            sent = viewer_figures(port)["frames_sent"]
            still = [shot(b, tmp_path / f"pause{k}a.png") for k, b in enumerate((first, second))]
            time.sleep(1.0)
            later = [shot(b, tmp_path / f"pause{k}b.png") for k, b in enumerate((first, second))]
            for a, b in zip(still, later):
                assert np.array_equal(a, b), "the page changed while the sim was paused"
            assert viewer_figures(port)["frames_sent"] == sent  # nothing sent while nothing changed

            second.evaluate("document.getElementById('resume').click()")
            watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "resume", 10, "the sim's resume")
            shown = frames_shown(first)
            wait_for(lambda: frames_shown(first) > shown + 3, 30, "frames again after resume")
    finally:
        motion.stop()
        if viewer is not None:
            assert viewer.stop() == 0, viewer.text
