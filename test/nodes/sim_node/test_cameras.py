"""Camera frames from the sim node: real node process, real DDS, real (software) rendering.

Every sim here renders at 320x240 or smaller. Figures quoted in comments were measured on the
2-core llvmpipe test machine (see the report that came with this file).
"""
from __future__ import annotations

import itertools
import json
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # must precede the first mujoco import

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from camera_frames import CameraObserver, render_offline, rgb, stamp_ns
from cpu_use import CpuWindow
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from simharness import SimProcessUnderTest, new_namespace, start_sim  # noqa: E402
from spinning import Spinning  # noqa: E402

from robogym_ros.camera.renderer import camera_pose_optical, is_software_gl  # noqa: E402
from robogym_ros.nodes.sim_node.node import SimNode  # noqa: E402
from robogym_ros.params import DEFAULT_CAMERAS, default  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402


def latest(obs, joint) -> float:
    msg = obs.snapshot(obs.joint_states)[-1]
    return msg.position[list(msg.name).index(joint)]


def mean_abs_diff(a: Image, b: Image) -> float:
    return float(np.mean(np.abs(rgb(a).astype(np.int16) - rgb(b).astype(np.int16))))


def start_camera_sim(namespace, log_dir, cameras=DEFAULT_CAMERAS, **params):
    if tuple(cameras) != DEFAULT_CAMERAS:
        params["cameras"] = list(cameras)
    return start_sim(namespace, log_dir, CameraObserver, (cameras,), **params)


@pytest.fixture
def make_cam_sim(make_sim):
    def start(cameras=DEFAULT_CAMERAS, **params):
        if tuple(cameras) != DEFAULT_CAMERAS:
            params["cameras"] = list(cameras)
        return make_sim(CameraObserver, (cameras,), **params)
    return start


@pytest.fixture(scope="module")
def recorded(ros, tmp_path_factory):
    """One default sim (3 cameras, 320x240 fisheye, 0.1 s, seed 0), run untouched for a
    second or so, then paused: the tests that share it only read what it sent."""
    sim, obs = start_camera_sim(new_namespace("cam"), tmp_path_factory.mktemp("recorded"), seed=0)
    try:
        for c in DEFAULT_CAMERAS:
            obs.wait_frames(c, 8)
        assert obs.call("pause").success
        time.sleep(0.5)  # the last frames land
        yield sim, obs
    finally:
        obs.close()
        assert sim.stop() == 0, sim.output()


# --- 1. format -----------------------------------------------------------------------------

def assert_image_format(img: Image, info: CameraInfo, entry: dict):
    w, h = entry["width"], entry["height"]
    assert (img.width, img.height) == (w, h)
    assert img.encoding == "rgb8"
    assert img.step == w * 3
    assert len(img.data) == img.step * img.height
    assert img.header.frame_id == entry["frame_id"] == f"{entry['name']}_optical_frame"
    assert (info.width, info.height) == (w, h)
    assert info.header.frame_id == img.header.frame_id
    assert info.header.stamp == img.header.stamp
    assert info.distortion_model == entry["distortion_model"]
    assert list(info.k) == entry["k"]
    assert list(info.d) == entry["d"]
    assert list(info.p) == entry["p"]


def test_fisheye_image_and_camera_info_match_the_spec(recorded):
    _, obs = recorded
    entries = {e["name"]: e for e in obs.spec["cameras"]}
    assert sorted(entries) == sorted(DEFAULT_CAMERAS)
    for name, entry in entries.items():
        assert (entry["width"], entry["height"]) == (320, 240)
        assert entry["distortion_model"] == "equidistant"
        assert entry["d"] == [0.0] * 4
        assert entry["image_topic"].endswith(f"/cameras/{name}/image_raw")
        assert entry["info_topic"].endswith(f"/cameras/{name}/camera_info")
        k = np.reshape(entry["k"], (3, 3))
        # equidistant: 160 px = f * (79.5 deg / 2), square pixels, centre (w-1)/2, (h-1)/2
        assert k[0, 0] == pytest.approx(160 / np.radians(39.75)) and k[1, 1] == k[0, 0]
        assert (k[0, 2], k[1, 2]) == (159.5, 119.5)
        infos = {stamp_ns(i.header.stamp): i for i in obs.snapshot(obs.infos[name])}
        frames = obs.frames(name)
        assert len(frames) >= 5
        for img in frames:
            assert_image_format(img, infos[stamp_ns(img.header.stamp)], entry)


def test_pinhole_mode_says_plumb_bob_with_five_zeros(make_cam_sim):
    _, obs = make_cam_sim(cameras=("overhead",), start_paused=True, camera_fisheye=False,
                      camera_width_px=160, camera_height_px=120)
    (entry,) = obs.spec["cameras"]
    assert entry["distortion_model"] == "plumb_bob" and entry["d"] == [0.0] * 5
    k = np.reshape(entry["k"], (3, 3))
    assert k[0, 0] == pytest.approx(80 / np.tan(np.radians(39.75)))
    obs.wait_matched()
    assert obs.call("step").success  # the first tick is a camera tick
    obs.wait_for(lambda: obs.frames("overhead") and obs.snapshot(obs.infos["overhead"]), 10,
                 "the frame of the stepped tick")
    img, info = obs.frames("overhead")[0], obs.snapshot(obs.infos["overhead"])[0]
    assert_image_format(img, info, entry)
    assert (img.width, img.height) == (160, 120)
    assert info.distortion_model == "plumb_bob" and list(info.d) == [0.0] * 5
    assert stamp_ns(img.header.stamp) == obs.spec["control_dt_ns"]


# --- 2. stamps -----------------------------------------------------------------------------

def test_image_stamps_are_joint_states_stamps_on_the_tick_grid(recorded):
    _, obs = recorded
    dt = obs.spec["control_dt_ns"]
    js = {stamp_ns(m.header.stamp) for m in obs.snapshot(obs.joint_states)}
    first, last = min(js), max(js)
    by_camera = {}
    for name in DEFAULT_CAMERAS:
        stamps = [stamp_ns(m.header.stamp) for m in obs.frames(name)]
        assert all(s % dt == 0 for s in stamps), f"{name}: a stamp off the control-tick grid"
        # Ticks before the observer's discovery completed were never received: skip those.
        # On a loaded machine this observer also misses a joint_states now and then (seen:
        # 3 of 30 under load average 5), so most, not all, must match one it received.
        seen = [s for s in stamps if first <= s <= last]
        matched = [s for s in seen if s in js]
        assert len(matched) >= max(5, 0.8 * len(seen)), (
            f"{name}: image stamps that no received joint_states carried: "
            f"{sorted(set(seen) - set(matched))}")
        assert all(b > a for a, b in zip(stamps, stamps[1:])), f"{name}: stamps not increasing"
        by_camera[name] = set(stamps)
    # One frame = one state: every camera of a frame carries that tick's stamp.
    common = set.intersection(*by_camera.values())
    assert len(common) >= 5


# --- 3. fresh buffers ----------------------------------------------------------------------

def test_every_frame_is_its_own_message_with_its_own_buffer(ros):
    """In-process node: keep what it *published* (serialized Images: bytes) and what came over
    DDS. While the wrist turns, frames differ, so a buffer reused and overwritten after
    publishing would show as a kept published frame that no longer equals what was received
    with its stamp."""
    ns = new_namespace("cam")
    node = SimNode(cli_args=["--ros-args", "-r", f"__ns:=/{ns}", "-p", "start_paused:=true",
                             "-p", "cameras:=['left_wrist']", "-p", "camera_period_s:=0.05"])
    published = []
    image_pub = node.cameras._pubs["left_wrist"][0]
    real_publish = image_pub.publish
    image_pub.publish = lambda msg: (published.append(msg), real_publish(msg))[1]
    spinning = Spinning(node)
    obs = CameraObserver(ns, ("left_wrist",))
    try:
        obs.wait_for(lambda: obs.spec is not None, 20, "spec")
        obs.wait_matched()
        obs.send(["left_wrist_roll"], [1.5])
        obs.wait_for(lambda: node.commands.accepted == 1, 10, "command accepted")
        obs.call("resume")
        obs.wait_frames("left_wrist", 8)
        obs.call("pause")
        time.sleep(0.5)
        received = obs.frames("left_wrist")
        kept_raw = list(published)
    finally:
        obs.close()
        spinning.close()
    assert all(type(m) is bytes for m in kept_raw), "the node publishes images serialized"
    for a, b in itertools.combinations(kept_raw, 2):
        assert a is not b, "one serialized Image published twice"
        assert not np.shares_memory(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8))
    # As they are now: a bytes object cannot change, but its pixels could have come from a
    # buffer the renderer reuses; then kept frames would equal each other or a later one.
    kept = [deserialize_message(m, Image) for m in kept_raw]
    assert len(kept) >= 8 and len(received) >= 8
    for group in (kept, received):
        for a, b in itertools.combinations(group, 2):
            assert a is not b, "one Image message published twice"
            assert not np.shares_memory(np.frombuffer(a.data, np.uint8),
                                        np.frombuffer(b.data, np.uint8)), "frames share memory"
    # The wrist moved while these were rendered, so a buffer overwritten after publishing
    # would show: every kept frame, oldest first, still equals what arrived with its stamp.
    assert max(mean_abs_diff(kept[0], m) for m in kept[1:]) > 5.0, "nothing moved: no power"
    rx = {stamp_ns(m.header.stamp): m for m in received}
    assert set(rx) <= {stamp_ns(m.header.stamp) for m in kept}, "received a frame not published"
    both = [m for m in kept if stamp_ns(m.header.stamp) in rx]
    assert len(both) >= max(5, 0.8 * len(kept)), f"only {len(both)} of {len(kept)} arrived"
    for msg in both:
        assert bytes(msg.data) == bytes(rx[stamp_ns(msg.header.stamp)].data), (
            "a published frame changed after publishing")


# --- 4. the image shows the state of its stamp ---------------------------------------------



@pytest.mark.long
def test_wrist_image_follows_its_arm_and_is_the_state_of_its_stamp(make_cam_sim):
    _, obs = make_cam_sim(cameras=("left_wrist", "right_wrist"), start_paused=True)
    dt = obs.spec["control_dt_ns"]
    obs.wait_matched()
    obs.call("resume")
    before_left = obs.wait_frames("left_wrist", 3)[-1]
    before_right = obs.frames("right_wrist")[-1]
    obs.send(["left_wrist_roll"], [1.2])
    obs.wait_for(lambda: abs(latest(obs, "left_wrist_roll") - 1.2) < 0.01, 10,
                 "left_wrist_roll at 1.2")
    after_left = obs.wait_frames("left_wrist", 3)[-1]
    obs.call("pause")
    time.sleep(0.3)
    rights = obs.frames("right_wrist")

    left_change = mean_abs_diff(before_left, after_left)
    right_change = max(mean_abs_diff(before_right, r) for r in rights)
    print(f"left_wrist change {left_change:.2f}, right_wrist change {right_change:.4f}")
    # Measured: left ~25 (mean |difference| over pixels and channels, in grey levels), right
    # 0.0002 (a still arm renders all but bit-identical frames). Room on both sides.
    assert left_change > 10.0, "left_wrist view did not follow its wrist"
    assert right_change < 0.5, "right_wrist view changed though the right arm stood still"

    # Each frame is the state of its stamp: render joint_states + object poses of that stamp
    # (and of the ticks either side) here, with the same model and lens. Frames in the move.
    js = {stamp_ns(m.header.stamp): m for m in obs.snapshot(obs.joint_states)}
    objs = {stamp_ns(m.header.stamp): m for m in obs.snapshot(obs.objects)}
    moving = [f for f in obs.frames("left_wrist")
              if stamp_ns(before_left.header.stamp) < stamp_ns(f.header.stamp)
              < stamp_ns(after_left.header.stamp)
              # (a loaded observer may miss a tick: need this one and both neighbours)
              and all(stamp_ns(f.header.stamp) + k * dt in js and stamp_ns(f.header.stamp)
                      + k * dt in objs for k in (-1, 0, 1))]
    roll = list(obs.snapshot(obs.joint_states)[0].name).index("left_wrist_roll")
    speeds = [abs(js[stamp_ns(f.header.stamp)].velocity[roll]) for f in moving]
    i = int(np.argmax(speeds))  # the frame where neighbouring ticks differ most
    frame = moving[i]
    assert speeds[i] > 1.0, f"no frame while the wrist turned fast: {speeds} rad/s"
    s = stamp_ns(frame.header.stamp)
    ticks = [s - dt, s, s + dt]
    renders = render_offline([js[t] for t in ticks], [objs[t] for t in ticks], ["left_wrist"],
                             obs.spec["cameras"][0])
    errors = [float(np.mean(np.abs(r["left_wrist"].astype(np.int16) - rgb(frame))))
              for r in renders]
    print(f"frame vs offline render of ticks s-1, s, s+1: {errors}")
    # Measured: exactly 0 for its own tick, ~1 for the ticks either side.
    assert errors[1] < 0.02, f"frame is not the state of its stamp: {errors}"
    assert min(errors[0], errors[2]) > 4 * errors[1] + 0.05, (
        f"neighbouring ticks render as close as the stamped one - no power: {errors}")


def red_components(img: np.ndarray):
    r, g, b = (img[..., i].astype(np.int32) for i in range(3))
    mask = ((r > 40) & (r > 2 * g) & (r > 2 * b)).astype(np.uint8)  # lit top, shaded sides
    return cv2.connectedComponentsWithStats(mask, connectivity=8)


def project(points_world, k, d, R, t) -> np.ndarray:
    """Pixels (N, 2) of world points through the overhead camera's pose and a fisheye K, D."""
    p_cam = (np.asarray(points_world, float).reshape(-1, 3) - t) @ R  # R.T @ (p - t), row-wise
    assert np.all(p_cam[:, 2] > 0)
    px, _ = cv2.fisheye.projectPoints(p_cam.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), k, d)
    return px.reshape(-1, 2)


def silhouette_centroid(corners_px: np.ndarray) -> np.ndarray:
    """Area centroid of the convex hull of a box's projected corners: what a camera sees of it."""
    hull = cv2.convexHull(corners_px.astype(np.float32))
    m = cv2.moments(hull)
    return np.array([m["m10"] / m["m00"], m["m01"] / m["m00"]])


def test_block_centre_projects_onto_the_red_block_with_the_published_lens(recorded):
    _, obs = recorded
    entry = next(e for e in obs.spec["cameras"] if e["name"] == "overhead")
    k = np.reshape(entry["k"], (3, 3))
    d = np.asarray(entry["d"], float)
    model = mujoco.MjModel.from_xml_path(default_model_path())
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    R, t = camera_pose_optical(model, data, "overhead")  # a world-fixed camera
    half = model.geom("block").size.copy()

    frame = obs.frames("overhead")[-1]
    s = stamp_ns(frame.header.stamp)
    pose = next(m for m in obs.snapshot(obs.objects) if stamp_ns(m.header.stamp) == s).poses[0]
    centre = np.array([pose.position.x, pose.position.y, pose.position.z])
    rot = np.empty(9)
    q = pose.orientation
    mujoco.mju_quat2Mat(rot, np.array([q.w, q.x, q.y, q.z]))
    corners = centre + (np.array(list(itertools.product((-1, 1), repeat=3))) * half) @ \
        rot.reshape(3, 3).T
    img = rgb(frame)
    n, labels, stats, centroids = red_components(img)

    def check(k_used):
        u, v = project([centre], k_used, d, R, t)[0]
        iu, iv = int(round(u)), int(round(v))
        label = int(labels[iv, iu]) if 0 <= iu < img.shape[1] and 0 <= iv < img.shape[0] else 0
        seen = silhouette_centroid(project(corners, k_used, d, R, t))
        return (u, v), label, seen

    (u, v), label, seen = check(k)
    assert label > 0, f"block centre projects to ({u:.1f}, {v:.1f}), not onto red pixels"
    area = int(stats[label, cv2.CC_STAT_AREA])
    areas = sorted(stats[1:, cv2.CC_STAT_AREA].tolist())
    centre_error = float(np.hypot(*(centroids[label] - (u, v))))
    silhouette_error = float(np.hypot(*(centroids[label] - seen)))
    print(f"block centre at ({u:.2f}, {v:.2f}) px; red component area {area} px (all: {areas}); "
          f"its centroid is {centre_error:.2f} px from the projected centre and "
          f"{silhouette_error:.2f} px from the projected silhouette's centroid")
    # Measured (seed 0, block lying): block 152 px, tray 1361 px; the block's centroid is
    # 0.62 px from the projected centre and 0.35 px from the projected box's silhouette
    # (a box seen ~25 deg off axis shows more of one side: its centroid is not its centre).
    # With f 10 % too long both are ~9 px off and the centre misses the block.
    assert 30 <= area <= 400, f"red component of {area} px is not block-sized"
    assert max(areas) > 4 * area, "the tray is not in view: the size test proves nothing"
    assert centre_error < 2.0, f"block centroid {centre_error:.2f} px from its projected centre"
    assert silhouette_error < 1.0, f"block {silhouette_error:.2f} px from its projected silhouette"

    # Negative control: f 10 % too long lands off the block.
    k_bad = k.copy()
    k_bad[0, 0] *= 1.1
    k_bad[1, 1] *= 1.1
    (ub, vb), bad_label, bad_seen = check(k_bad)
    bad_centre = float(np.hypot(*(centroids[label] - (ub, vb))))
    bad_silhouette = float(np.hypot(*(centroids[label] - bad_seen)))
    print(f"with f x 1.1: centre at ({ub:.2f}, {vb:.2f}) px (on component {bad_label}), "
          f"{bad_centre:.2f} px from the block centroid; silhouette {bad_silhouette:.2f} px off")
    assert bad_label != label and bad_centre > 2.0 and bad_silhouette > 1.0


# --- 5. camera clock vs decimation ---------------------------------------------------------

def test_camera_period_is_in_sim_seconds_whatever_the_decimation(make_cam_sim):
    periods = {}
    for decimation in (2, 8):
        _, obs = make_cam_sim(cameras=("overhead",), decimation=decimation, physics_dt_s=0.002,
                          start_paused=True, camera_period_s=0.1)
        dt = decimation * 2_000_000
        assert obs.spec["control_dt_ns"] == dt
        assert obs.spec["cameras"][0]["period_s"] == pytest.approx(0.1)
        obs.wait_matched()  # nothing is missed from the first tick on
        obs.call("resume")
        obs.wait_frames("overhead", 13)
        obs.call("pause")
        obs.wait_for(lambda: obs.diag_values().get("paused") == "True", 5, "paused, in diag")
        diag = obs.diag_values()
        skipped = int(diag["camera_frames_skipped"])
        # The joint_states period is the control dt: the sim published one per tick, and what
        # arrived is spaced by dt. (At 250 Hz on a loaded 2-core machine this observer has
        # missed up to a fifth of them: gaps of whole ticks are allowed here.)
        assert int(diag["ticks_published"]) == round(float(diag["sim_time_s"]) * 1e9 / dt)
        assert diag["publish_errors"] == "0"
        js = [stamp_ns(m.header.stamp) for m in obs.snapshot(obs.joint_states)]
        js_diffs = np.diff(js)
        assert np.all(js_diffs % dt == 0) and js_diffs.min() == dt, sorted(set(js_diffs))
        assert np.median(js_diffs) == dt, f"{np.sum(js_diffs != dt)} gaps in {len(js)}"
        stamps = [stamp_ns(m.header.stamp) for m in obs.frames("overhead")]
        # Each frame is the first tick at or after a multiple of 0.1 s (for 0 s: the first tick)
        assert all(s == dt or (s % dt == 0 and s % 100_000_000 < dt) for s in stamps), stamps
        # ... one per multiple, bar those the sim says it skipped (render thread busy: seen
        # once under load average 6) ...
        slots = np.array(stamps) // 100_000_000
        missing = int(slots[-1] + 1 - len(slots))
        assert np.all(np.diff(slots) >= 1) and missing <= skipped, (missing, skipped, stamps)
        # ... so the mean period is 0.1 s, to within one control tick.
        diffs = np.diff(stamps)[np.diff(slots) == 1]
        mean = float(np.mean(diffs))
        assert abs(mean - 100_000_000) <= dt, (decimation, mean)
        periods[decimation] = (mean * 1e-9, dt * 1e-9, sorted(set(diffs.tolist())),
                               f"{np.sum(js_diffs != dt)} joint_states gaps, {skipped} skipped")
    print("image period, joint_states period [s], distinct image periods [ns]:", periods)


# --- 6. skipping, not queuing --------------------------------------------------------------

OVERLOAD_FRAME_S = 0.04  # 4 control ticks: ~75 % of the frames due every tick must be skipped


def overloading_source_scale(target_s: float = OVERLOAD_FRAME_S) -> tuple[float, float]:
    """(camera_source_scale, s per frame here): the smallest source scale at which rendering the
    three cameras here takes ``target_s`` or more (4.0, the range's top, at most).

    The overload is forced, not hoped for: the machine's speed varies ~2x between hours, and a
    fast llvmpipe renders 320x240 x3 at 12 ms, keeping up with 82 % of a 100 Hz camera. The
    source scale costs render time (pixels rendered grow with its square) while the published
    images stay 320x240, so transport and the observer carry what they carry at scale 1.
    """
    import statistics

    from robogym_ros.camera.lens import Lens
    from robogym_ros.camera.renderer import CameraRenderer
    model = mujoco.MjModel.from_xml_path(default_model_path())
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    state = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
    mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
    for scale in (1.0, 1.5, 2.0, 3.0, 4.0):
        with CameraRenderer(model, DEFAULT_CAMERAS, Lens(320, 240, source_scale=scale)) as renderer:
            mosaic = renderer.new_mosaic()
            renderer.render_raw(state, mosaic)  # the first frame sets things up
            times = []
            for _ in range(5):
                start = time.perf_counter()
                renderer.render_raw(state, mosaic)
                times.append(time.perf_counter() - start)
        frame_s = statistics.median(times)
        if frame_s >= target_s:
            break
    return scale, frame_s


def test_a_too_fast_camera_skips_frames_and_leaves_physics_alone(make_cam_sim):
    scale, frame_s = overloading_source_scale()
    print(f"camera_source_scale {scale}: {frame_s * 1e3:.1f} ms per frame here")
    sim, obs = make_cam_sim(start_paused=True, camera_period_s=0.01,  # every tick is due
                            camera_source_scale=scale)
    obs.wait_matched()
    obs.call("resume")
    obs.wait_for(lambda: obs.diag_values().get("real_time_factor_achieved", "nan") != "nan",
                 10, "a first rtf in diagnostics")
    base = obs.diag_values()
    counts = {c: len(obs.frames(c)) for c in DEFAULT_CAMERAS}
    window_wall_s = 3.2
    cpu = CpuWindow(sim.proc.pid)
    time.sleep(window_wall_s)
    end = obs.diag_values()
    print(cpu.report())

    def delta(key):
        return int(end[key]) - int(base[key])

    rendered, skipped = delta("camera_frames_rendered"), delta("camera_frames_skipped")
    ticks = delta("ticks_published")
    steps = ticks * obs.spec["decimation"]
    late = delta("late_steps")
    rtf = float(end["real_time_factor_achieved"])
    arrived = {c: len(obs.frames(c)) - counts[c] for c in DEFAULT_CAMERAS}
    # How much later (wall) than its stamp (sim) each frame of the window arrived, relative
    # to the window's first frame: the age a queue would add.
    delays = {c: np.ptp(obs.snapshot(obs.arrival_minus_stamp_s[c])[counts[c]:])
              for c in DEFAULT_CAMERAS}
    max_lateness_s = float(end["max_lateness_s"])
    decades = [b - a for a, b in zip(json.loads(base["lateness_histogram"])["counts"],
                                     json.loads(end["lateness_histogram"])["counts"])]
    print(f"over {ticks} ticks: rendered {rendered}, skipped {skipped}, arrived {arrived}, "
          f"late steps {late} of {steps} (by lateness <10us/<100us/<1ms/<10ms/more: {decades}; "
          f"max {max_lateness_s * 1e3:.1f} ms; physics {obs.spec['physics_scheduling']!r}), "
          f"rtf {rtf:.4f}, arrival delay spread {[round(v, 3) for v in delays.values()]} s")
    assert end["camera_error"] == ""
    # Measured 30..114 frames in the window; 6 once, with another session's tests at 100 % CPU.
    assert rendered >= 3 and all(n >= 3 for n in arrived.values()), "frames stopped"
    # Physics in its own process keeps its pace: the cameras never make it wait. Physics made to
    # wait for the cameras covers less sim time than the wall time that passed. Measured with the
    # fault injected: held to each frame's tick as at real_time_factor 0, 0.41 sim s in the window
    # (rtf 0.13); the pump rendering before it reads the next tick, so that physics blocks on a
    # full tick pipe, 0.03..0.41 sim s (and diagnostics went stale: their rtf read 1.0..1.19, so
    # the window is judged by this test's own clock). Without a fault: 3.0. The two diagnostics
    # bounding the window are up to one period older than the wall instants they were read at.
    period_s = default("diagnostics_period_s")
    sim_span_s = float(end["sim_time_s"]) - float(base["sim_time_s"])
    assert sim_span_s >= window_wall_s - period_s - 0.3, (
        f"{sim_span_s:.2f} sim s in {window_wall_s} wall s: physics waited for the cameras")
    assert rtf == pytest.approx(1.0, abs=0.02)
    # Late steps (begun > 1 physics dt after the deadline) are printed, not bounded: they are the
    # machine's, not the cameras'. Neither fault above made a step late (max lateness 0.4 ms:
    # a held or blocked physics restarts its schedule), and the count follows the machine:
    # 0..12 of 1500 here, quiet or beside CPU burners, at SCHED_FIFO or nice -10, but 76 (all
    # under 10 ms) on a CI machine whose two cores the renderer kept busy.
    # Every due frame (here: every tick) is rendered or counted skipped; two may be in flight.
    assert abs(int(end["ticks_published"]) - int(end["camera_frames_rendered"])
               - int(end["camera_frames_skipped"])) <= 3
    # Not queued: a frame arrives a bounded time after its tick: the spread of that delay is a
    # few render times (measured 0.04..0.46 s, the top under load average 5; 0.60 s beside a
    # training and the rest of the suite). A queue grows it by (1 - rendered / due) * window,
    # ~2.5 s here.
    window_s = ticks * obs.spec["control_dt_s"]
    bound_s = 3 * window_s / rendered + 0.6
    assert bound_s < 0.75 * window_s, "too few frames to tell a queue from slow rendering"
    assert all(v < bound_s for v in delays.values()), (delays, bound_s)
    # A frame costs >= 4 ticks here (scale chosen above): ~75 % skipped; > 25 % leaves 3x for
    # the machine's speed to change between the measurement and the window. Measured: at scale
    # 1.0, 186..271 skipped of 300 on a slow llvmpipe, 52..58 on a fast one (which failed here);
    # at the chosen scale, see the report of issue 19. A GPU may keep up even at scale 4.
    if not is_software_gl(local_gl_renderer()):
        pytest.skip(f"a hardware GL rendered {rendered} of {ticks} due frames")
    assert skipped > ticks // 4, (f"{skipped} of {ticks} skipped although a frame takes {frame_s * 1e3:.0f} ms "
                                  f"here: frames queued or the renderer skipped nothing")


def local_gl_renderer() -> str:
    """GL_RENDERER here, which is what the node on this machine gets too."""
    from robogym_ros.camera.renderer import GLContext, gl_renderer_string
    ctx = GLContext(16, 16)
    try:
        ctx.make_current()
        return gl_renderer_string()
    finally:
        ctx.free()


# --- 7. a camera that isn't there ----------------------------------------------------------

def test_an_unknown_camera_is_named_and_the_node_exits_non_zero(ros, tmp_path):
    sim = SimProcessUnderTest(new_namespace("cam"), tmp_path, cameras=["nope"])
    try:
        rc = sim.proc.wait(30)
    except Exception:
        sim.stop()
        raise
    out = sim.output()
    sim.stop()
    assert rc != 0, out
    assert "'nope'" in out, out
    assert all(f"'{c}'" in out for c in DEFAULT_CAMERAS), out
    assert "Traceback" not in out, out
