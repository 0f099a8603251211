"""real_time_factor 0 loses no frame: physics waits for the renderer instead of frames being
skipped. Real sim node, real DDS, real (software) rendering.

Counting is exact over a window defined by stamps: every camera must have one image at each
frame tick of the window (the first tick at or after each multiple of camera_period_s), no
more, no fewer, and the sim must announce no skipped frame. Images are taken with raw
subscriptions (a cheap callback, so this observer keeps up with a sim running as fast as it
can) and their stamps read with the recorder's CDR decoder.
"""
from __future__ import annotations

import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # must precede the first mujoco import

import pytest  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from simharness import Observer, new_namespace  # noqa: E402
from spinning import Spinning  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from robogym_ros import contract  # noqa: E402
from robogym_ros.camera.clock import CameraClock, frame_tick, next_frame_tick  # noqa: E402
from robogym_ros.nodes.sim_node.node import SimNode  # noqa: E402
from robogym_ros.params import DEFAULT_CAMERAS  # noqa: E402
from robogym_ros.ros import qos, stamps  # noqa: E402
from robogym_ros.wire import decode  # noqa: E402

DT_NS = 10_000_000  # physics dt 2 ms x decimation 5, the defaults


# --- the grid, as pure functions ---------------------------------------------------------

def due_ticks(period_ns: int, dt_ns: int, first: int, last: int, after_ns: int = -1) -> list[int]:
    """The ticks in first..last that CameraClock makes frames of, offered one by one."""
    clock = CameraClock(period_ns, after_ns)
    return [k for k in range(first, last + 1) if clock.due(k * dt_ns)]


@pytest.mark.parametrize("period_ns", [100_000_000, 30_000_000, 25_000_000, 10_000_000, 4_000_000])
def test_next_frame_tick_is_the_clocks_next_due_tick(period_ns):
    due = due_ticks(period_ns, DT_NS, 1, 400)
    assert due[0] == 1  # grid point 0: the first tick
    for a, b in zip(due, due[1:]):
        assert next_frame_tick(a, period_ns, DT_NS) == b
    clock = CameraClock(period_ns)
    for k in range(1, 50):
        if clock.due(k * DT_NS):
            assert frame_tick(clock.next_ns, DT_NS) == next_frame_tick(k, period_ns, DT_NS)


def test_a_new_period_starts_on_its_grid_after_the_last_tick_no_burst():
    # At tick 123 (1.23 s) the period becomes 0.5 s: the next frame is at 1.5 s, not at once.
    assert due_ticks(500_000_000, DT_NS, 124, 260, after_ns=123 * DT_NS) == [150, 200, 250]
    # On a grid point exactly: that point was the last tick's, so the next is one period on.
    assert due_ticks(100_000_000, DT_NS, 121, 140, after_ns=120 * DT_NS) == [130, 140]


# --- the real sim --------------------------------------------------------------------------

class FrameCounter(Observer):
    """The harness's observer plus, per camera, the stamp of every image (raw subscription),
    and every announcement of a skipped frame."""

    def __init__(self, namespace: str, cameras=DEFAULT_CAMERAS):
        super().__init__(namespace)
        self.stamps = {c: [] for c in cameras}
        self.skips: list[Header] = []
        depth = qos.profile(contract.QosSpec(depth=1000))
        for c in cameras:
            self.node.create_subscription(Image, contract.image_topic(c), self._on_image(c), depth, raw=True)
        self.node.create_subscription(Header, contract.CAMERA_SKIPS_TOPIC, self._keep(self.skips), qos.STREAM_QOS)

    def _on_image(self, camera):
        store = self.stamps[camera]

        def callback(data: bytes):
            store.append(decode.decode_header(data)[0])
        return callback

    def wait_matched(self, timeout_s=10.0):
        topics = [f"/{self.namespace}/{contract.image_topic(c)}" for c in self.stamps]
        self.wait_for(lambda: all(self.node.count_publishers(t) >= 1 for t in topics), timeout_s,
                      "image publishers")
        time.sleep(0.3)  # discovered is not yet matched

    def latest_stamp_ns(self) -> int:
        js = self.snapshot(self.joint_states)
        return stamps.stamp_ns(js[-1].header.stamp) if js else -1

    def frames_in(self, camera: str, lo_ns: int, hi_ns: int) -> list[int]:
        return sorted(s for s in self.snapshot(self.stamps[camera]) if lo_ns <= s < hi_ns)


def expected_frames(period_ns: int, lo_ns: int, hi_ns: int) -> list[int]:
    """Stamps of the frame ticks in [lo, hi): the first tick at or after each grid point."""
    ticks = due_ticks(period_ns, DT_NS, 1, hi_ns // DT_NS + 1)
    return [k * DT_NS for k in ticks if lo_ns <= k * DT_NS < hi_ns]


def run_until(obs, stamp_ns: int, timeout_s: float = 60.0) -> None:
    """Resume, let the sim pass ``stamp_ns`` (+ one frame period), pause, let the last images land."""
    obs.call("resume")
    obs.wait_for(lambda: obs.latest_stamp_ns() >= stamp_ns, timeout_s, f"sim time {stamp_ns * 1e-9} s")
    obs.call("pause")
    time.sleep(1.0)


def missing_and_extra(obs, period_ns: int, lo_ns: int, hi_ns: int) -> dict:
    want = expected_frames(period_ns, lo_ns, hi_ns)
    out = {}
    for camera in obs.stamps:
        got = obs.frames_in(camera, lo_ns, hi_ns)
        out[camera] = (sorted(set(want) - set(got)), sorted(set(got) - set(want)), len(got) - len(set(got)))
    return out


def test_real_time_factor_0_publishes_every_frame_of_every_camera(make_sim):
    n_sim_s, period_s = 4, 0.1
    _, obs = make_sim(FrameCounter, real_time_factor=0.0, start_paused=True)
    assert obs.spec["camera_frames"] == "every_frame"
    assert obs.spec["real_time_factor"] == 0.0
    obs.wait_matched()
    t0 = time.monotonic()
    run_until(obs, (n_sim_s + 1) * 1_000_000_000)
    wall_s = time.monotonic() - t0
    period_ns = round(period_s * 1e9)
    window = (0, n_sim_s * 1_000_000_000)
    counts = {c: len(obs.frames_in(c, *window)) for c in obs.stamps}
    print(f"{n_sim_s} sim s: images per camera {counts}, ran {obs.latest_stamp_ns() * 1e-9:.2f} sim s "
          f"in {wall_s:.1f} s wall (pause included)")
    # Exactly 3 cameras x N / period images, at the frame ticks (the grid), none twice.
    assert sum(counts.values()) == len(DEFAULT_CAMERAS) * round(n_sim_s / period_s)
    assert missing_and_extra(obs, period_ns, *window) == {c: ([], [], 0) for c in DEFAULT_CAMERAS}
    obs.wait_for(lambda: obs.diag_values().get("paused") == "True", 5, "paused, in diagnostics")
    diag = obs.diag_values()
    assert diag["camera_frames"] == "every_frame"
    assert diag["camera_frames_skipped"] == "0" and diag["camera_error"] == ""
    assert int(diag["camera_frames_rendered"]) >= round(n_sim_s / period_s)
    assert obs.snapshot(obs.skips) == []
    # As fast as possible means faster than real time here too (measured ~5x on 2 cores).
    assert float(diag["sim_time_s"]) > n_sim_s


class InProcessSim:
    """The sim node in this process, so a test can reach into its camera publisher."""

    def __init__(self, **params):
        self.namespace = new_namespace("noskip")
        args = ["--ros-args", "-r", f"__ns:=/{self.namespace}"]
        for k, v in params.items():
            args += ["-p", f"{k}:={v}"]
        self.node = SimNode(cli_args=args)
        self._spinning = Spinning(self.node)
        self.obs = FrameCounter(self.namespace, self.node.cameras.cameras)
        self.obs.wait_for(lambda: self.obs.spec is not None, 20, "spec")
        self.obs.wait_matched()

    def set(self, name: str, value) -> None:
        result = self.node.set_parameters([Parameter(name, value=value)])[0]
        assert result.successful, result.reason

    def close(self):
        self.obs.close()
        self._spinning.close()


@pytest.fixture
def in_process_sim(ros):
    sims = []

    def start(**params):
        sims.append(InProcessSim(**params))
        return sims[-1]
    yield start
    for sim in sims:
        sim.close()


def test_without_the_hold_real_time_factor_0_skips_and_the_count_shows_it(in_process_sim):
    """Positive control for the test above: the same count, with the publisher's hold on
    physics cut and frames skipped when busy (the behaviour before every_frame), finds
    missing frames, and each was announced as skipped."""
    # A frame every tick: without the hold, physics outruns three cameras by far.
    sim = in_process_sim(real_time_factor=0.0, start_paused="true", camera_period_s=0.01)
    sim.node.cameras._hold_physics = lambda tick: sim.node.sim.set_tick_limit(None)
    sim.node.sim.set_tick_limit(None)
    sim.node.cameras.pipeline.set_keep_all(False)
    run_until(sim.obs, 1_200_000_000)
    found = missing_and_extra(sim.obs, 10_000_000, 0, 1_000_000_000)
    missing = {c: len(m) for c, (m, _, _) in found.items()}
    print("missing frames without the hold:", missing, "skips announced:", len(sim.obs.snapshot(sim.obs.skips)))
    assert all(n > 0 for n in missing.values())
    assert sim.node.cameras.skipped > 0 and len(sim.obs.snapshot(sim.obs.skips)) > 0
    skipped = {stamps.stamp_ns(h.stamp) for h in sim.obs.snapshot(sim.obs.skips)}
    assert {h.frame_id for h in sim.obs.snapshot(sim.obs.skips)} == {",".join(DEFAULT_CAMERAS)}
    # Every missing frame of the window was announced as skipped: lost on the way is none.
    assert set().union(*(set(m) for m, _, _ in found.values())) <= skipped


def test_with_the_hold_a_frame_every_tick_loses_none_either(in_process_sim):
    """The control above with the hold in place: the same count finds nothing missing."""
    sim = in_process_sim(real_time_factor=0.0, start_paused="true", camera_period_s=0.01)
    run_until(sim.obs, 1_200_000_000)
    assert missing_and_extra(sim.obs, 10_000_000, 0, 1_000_000_000) == {c: ([], [], 0) for c in DEFAULT_CAMERAS}
    assert sim.node.cameras.skipped == 0 and sim.obs.snapshot(sim.obs.skips) == []


def test_live_switches_keep_every_frame_and_the_grid(in_process_sim):
    """Real time, then real_time_factor 0 (every frame from then on), then a new period while
    running (its frames on its own grid from the next grid point: no burst)."""
    sim = in_process_sim(start_paused="true", cameras="['overhead']", camera_width_px=160,
                         camera_height_px=120)
    obs = sim.obs
    assert obs.spec["camera_frames"] == "skip_when_busy"
    sim.set("real_time_factor", 0.0)
    obs.wait_for(lambda: obs.spec["camera_frames"] == "every_frame", 5, "every_frame in the spec")
    run_until(obs, 2_000_000_000)
    switch_ns = obs.latest_stamp_ns()
    sim.set("camera_period_s", 0.05)
    run_until(obs, switch_ns + 2_000_000_000)
    end_ns = obs.latest_stamp_ns()
    before = obs.frames_in("overhead", 0, switch_ns + 1)
    after = obs.frames_in("overhead", switch_ns + 1, end_ns + 1)
    assert before == expected_frames(100_000_000, 0, switch_ns + 1)
    first = (switch_ns // 50_000_000 + 1) * 50_000_000
    want_after = [frame_tick(g, DT_NS) * DT_NS for g in range(first, end_ns + 1, 50_000_000)]
    assert after == want_after, (switch_ns, after[:5], want_after[:5])
    assert sim.node.cameras.skipped == 0 and obs.snapshot(obs.skips) == []


def test_a_render_error_releases_physics(in_process_sim):
    """Every-frame mode holds physics for the renderer; a renderer that fails must let go,
    or the sim would stop for good."""
    sim = in_process_sim(real_time_factor=0.0, start_paused="true", cameras="['overhead']",
                         camera_width_px=160, camera_height_px=120)
    cams = sim.node.cameras
    renderer = cams.pipeline._renderer

    def broken(state, mosaic):
        raise RuntimeError("GL context lost (injected)")
    renderer.render_raw = broken
    run_until(sim.obs, 3_000_000_000, timeout_s=30)  # would time out if physics stayed held
    assert "GL context lost (injected)" in cams.error
    sim.obs.wait_for(lambda: sim.obs.diag_values().get("camera_error", "") != "", 5, "camera_error")
    assert sim.obs.diag_values()["camera_error"] == cams.error
