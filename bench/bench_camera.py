"""Per-frame cost of the camera pipeline against a bare MuJoCo render (figures only).

    MUJOCO_GL=egl python bench/bench_camera.py [--model robogym_ros/task/models/so101_dual.xml]

1. The node's pipeline (the headline): the sim node's CameraPublisher, fed ticks as fast as
it takes them, renders every camera of the model (3 in the default scene) into one mosaic on
its GL thread while the previous frame is remapped and published on its finisher thread.
Time per frame (steady state) against a bare `mujoco.Renderer.update_scene + render()` of the
same cameras at the output size, one after the other, with the same shadow/multisampling
choice; measured in interleaved batches in the same run.

2. Stages of one frame of one camera, one after the other (where the time goes):
  state    mj_setState + mj_forward (once per observation, shared by all cameras)
  render   pinhole render + glReadPixels at the lens's source size
  remap    Lens.distort (fisheye resampling; a plain copy with --no-fisheye)
  build    sensor_msgs/Image with data = arr.tobytes()
  publish  rclpy publish, reliable depth 1, to a subscriber in another process
against the same bare render of that one camera.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# Must precede any mujoco / rclpy import. ROS traffic stays on this host: the bench must
# never talk to robots on the network.
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", "71")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_MODEL = REPO / "robogym_ros" / "sim" / "models" / "so101_dual.xml"
TOPIC = "/bench_camera/image"
PIPE_NS = "/bench_camera_pipe"

# Stand-in for the real scene: table, two capsule "arms", a block and a tray, lit with a
# shadow-casting light like a real scene would be, and an overhead camera.
STANDIN_XML = """
<mujoco model="standin">
  <visual><global offwidth="1280" offheight="960"/></visual>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".2 .3 .4" rgb2=".3 .4 .5" width="256" height="256"/>
    <material name="grid" texture="grid" texrepeat="8 8"/>
    <material name="arm" rgba=".9 .9 .9 1"/>
  </asset>
  <worldbody>
    <light pos="0 0 2" dir="0 0 -1" castshadow="true"/>
    <geom type="plane" size="2 2 .1" material="grid"/>
    <geom type="box" pos="0 0.15 .375" size=".5 .3 .02" rgba=".6 .45 .3 1"/>
    <body name="left_arm" pos="-0.2 0 .4">
      <joint name="l1" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0 0 .12" size=".025" material="arm"/>
      <body pos="0 0 .12"><joint name="l2" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 .11 0" size=".02" material="arm"/>
        <body pos="0 .11 0"><joint name="l3" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 .13 -.05" size=".018" material="arm"/></body></body>
    </body>
    <body name="right_arm" pos="0.2 0 .4">
      <joint name="r1" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0 0 .12" size=".025" material="arm"/>
      <body pos="0 0 .12"><joint name="r2" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 .11 0" size=".02" material="arm"/>
        <body pos="0 .11 0"><joint name="r3" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 .13 -.05" size=".018" material="arm"/></body></body>
    </body>
    <body name="block" pos="-0.15 .25 .42"><freejoint/>
      <geom type="box" size=".015 .015 .025" rgba=".9 .1 .1 1"/></body>
    <body name="tray" pos=".15 .25 .40"><freejoint/>
      <geom type="box" size=".06 .04 .005" rgba=".8 .1 .1 1"/></body>
    <camera name="overhead" pos="0 .2 1.2" xyaxes="1 0 0 0 1 0"/>
  </worldbody>
</mujoco>
"""


def _subscriber(topics: str) -> None:
    """Runs in a child process: counts images on the comma-separated topics until SIGTERM,
    then prints the count. Raw (serialized) subscriptions: delivery is real (the publisher
    does all its work), while this reader, which shares the machine's cores with what is
    measured, spends nothing on deserializing pixels it never looks at."""
    import rclpy
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node("bench_camera_sub")
    received = [0]
    for topic in topics.split(","):
        node.create_subscription(Image, topic, lambda _msg: received.__setitem__(0, received[0] + 1),
                                 QoSProfile(depth=1), raw=True)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    while running[0]:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(received[0], flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


class _TimedLens:
    """Wraps the renderer's lens so the remap can be timed apart from the GL work."""

    def __init__(self, lens):
        self._lens = lens
        self.seconds = 0.0

    def distort(self, raw, *, bottom_up=False):
        t0 = time.perf_counter()
        out = self._lens.distort(raw, bottom_up=bottom_up)
        self.seconds += time.perf_counter() - t0
        return out


def _states(mujoco, model, n_frames: int):
    """A sequence of distinct states: every hinge swings a little, free bodies slide."""
    import numpy as np
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    size = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)
    qpos0 = data.qpos.copy()
    hinge = model.jnt_qposadr[model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    free = model.jnt_qposadr[model.jnt_type == mujoco.mjtJoint.mjJNT_FREE]
    states = []
    for i in range(n_frames):
        phase = 2 * np.pi * i / n_frames
        data.qpos[:] = qpos0
        data.qpos[hinge] += 0.3 * np.sin(phase)
        for adr in free:
            data.qpos[adr] += 0.02 * np.cos(phase)
        state = np.empty(size)
        mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        states.append(state)
    return states


def _load(mujoco, path):
    return mujoco.MjModel.from_xml_path(path) if path else mujoco.MjModel.from_xml_string(STANDIN_XML)


def _bare_renderer(mujoco, path, w: int, h: int, shadows_and_msaa: bool):
    """(model, mujoco.Renderer, data) of the baseline: its own model copy at the output size,
    with the same shadow/MSAA choice as the pipeline."""
    model = _load(mujoco, path)
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, w)
    model.vis.global_.offheight = max(model.vis.global_.offheight, h)
    if not shadows_and_msaa:
        model.vis.quality.offsamples = 0
    renderer = mujoco.Renderer(model, h, w)
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows_and_msaa
    return model, renderer, mujoco.MjData(model)


def _bench_resolution(args, mujoco, camera, w, h, publisher, stamp_clock):
    import numpy as np
    from sensor_msgs.msg import Image

    from robogym_ros.camera.lens import Lens
    from robogym_ros.camera.renderer import CameraRenderer

    model = _load(mujoco, args.model)
    lens = Lens(w, h, fisheye=not args.no_fisheye, source_scale=args.source_scale)
    states = _states(mujoco, model, args.frames)
    renderer = CameraRenderer(model, [camera], lens)
    timed = _TimedLens(lens)
    renderer.lens = timed

    # Bare baseline: own model copy, output size, same shadow/MSAA choice as the pipeline.
    bare_model, bare, bare_data = _bare_renderer(mujoco, args.model, w, h, renderer.shadows_and_msaa)

    # First frames pay for shader and texture upload.
    renderer.render(states[0])
    bare.update_scene(bare_data, camera)
    bare.render()

    stages = ("state", "render", "remap", "build", "publish", "pipeline", "bare")
    ms = {k: [] for k in stages}
    for state in states:
        # Pipeline and bare alternate frame by frame, so load from other processes on this
        # machine hits both alike and the ratio stays meaningful.
        mujoco.mj_setState(bare_model, bare_data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(bare_model, bare_data)
        t0 = time.perf_counter()
        bare.update_scene(bare_data, camera)
        bare.render()
        ms["bare"].append(time.perf_counter() - t0)

        # render() does set_state + forward itself; time that part alone on a scratch MjData.
        t0 = time.perf_counter()
        mujoco.mj_setState(model, bare_data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(model, bare_data)
        t_state = time.perf_counter() - t0

        timed.seconds = 0.0
        t1 = time.perf_counter()
        img = renderer.render(state)[camera]
        t2 = time.perf_counter()
        msg = Image()
        msg.header.stamp = stamp_clock.now().to_msg()
        msg.header.frame_id = f"{camera}_optical_frame"
        msg.height, msg.width, msg.encoding, msg.is_bigendian, msg.step = h, w, "rgb8", 0, w * 3
        msg.data = img.tobytes()  # bytes -> array.array is a memcpy; a memoryview is not
        t3 = time.perf_counter()
        publisher.publish(msg)
        t4 = time.perf_counter()
        ms["state"].append(t_state)
        ms["remap"].append(timed.seconds)
        ms["render"].append(t2 - t1 - timed.seconds - t_state)
        ms["build"].append(t3 - t2)
        ms["publish"].append(t4 - t3)
        ms["pipeline"].append(t4 - t1)
    gl, shadows = renderer.gl_renderer, renderer.shadows_and_msaa
    renderer.close()
    bare.close()

    med = {k: 1e3 * float(np.median(v)) for k, v in ms.items()}
    mean = {k: 1e3 * float(np.mean(v)) for k, v in ms.items()}
    print(f"\n{w}x{h}  lens={'fisheye' if lens.fisheye else 'pinhole'}  source "
          f"{lens.source_width_px}x{lens.source_height_px} (scale {args.source_scale})  "
          f"fovy {lens.source_fovy_deg:.2f} deg  frames {len(states)}   [median / mean ms]")
    notes = dict(render="pinhole render + readPixels", remap="Lens.distort",
                 build="Image, data = tobytes()", publish="rclpy publish",
                 state="mj_setState + mj_forward")
    for k in ("state", "render", "remap", "build", "publish"):
        print(f"  {k:8s} {med[k]:7.3f} / {mean[k]:7.3f}   {notes[k]}")
    print(f"  pipeline {med['pipeline']:7.3f} / {mean['pipeline']:7.3f}")
    print(f"  bare     {med['bare']:7.3f} / {mean['bare']:7.3f}   mujoco.Renderer update_scene+render at {w}x{h}")
    print(f"  ratio pipeline/bare: {med['pipeline'] / med['bare']:.2f}x median, "
          f"{mean['pipeline'] / mean['bare']:.2f}x mean (target <= 1.5x)")
    return gl, shadows


def _bench_pipeline(args, mujoco, w, h, node, batches: int = 5, batch: int = 24) -> tuple[float, float]:
    """Median ms per frame of (node pipeline, bare renders) for every camera of the model."""
    import numpy as np

    from robogym_ros.camera.lens import Lens
    from robogym_ros.camera.lookup import camera_names
    from robogym_ros.nodes.sim_node.cameras import CameraPublisher
    from robogym_ros.sim.tick import Tick

    model = _load(mujoco, args.model)
    cameras = camera_names(model)
    lens = Lens(w, h, fisheye=not args.no_fisheye, source_scale=args.source_scale)
    dt_ns = 10_000_000
    pub = CameraPublisher(node, model, cameras, lens, dt_ns * 1e-9, control_dt_ns=dt_ns,
                          hold_physics=lambda tick: None, every_frame=True)  # a frame every tick
    bare_model, bare, bare_data = _bare_renderer(mujoco, args.model, w, h, pub.shadows_and_msaa)
    states = _states(mujoco, model, batch)
    empty = np.zeros(0)
    index = [0]

    def pipeline_batch() -> float:
        start = pub.rendered
        t0 = time.perf_counter()
        for state in states:
            index[0] += 1
            pub.offer(Tick(index[0], index[0] * dt_ns, 0, empty, empty, empty, np.zeros((0, 7)), state))
        while pub.rendered < start + len(states):
            if pub.error:
                raise RuntimeError(pub.error)
            time.sleep(0.0005)
        return (time.perf_counter() - t0) / len(states)

    def bare_batch() -> float:
        t0 = time.perf_counter()
        for state in states:
            mujoco.mj_setState(bare_model, bare_data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
            mujoco.mj_forward(bare_model, bare_data)
            for camera in cameras:
                bare.update_scene(bare_data, camera)
                bare.render()
        return (time.perf_counter() - t0) / len(states)

    pipeline_batch(), bare_batch()  # shaders, textures, caches
    pipe_s, bare_s = [], []
    for _ in range(batches):
        pipe_s.append(pipeline_batch())
        bare_s.append(bare_batch())
    pub.close()
    bare.close()
    pipe_ms, bare_ms = 1e3 * float(np.median(pipe_s)), 1e3 * float(np.median(bare_s))
    print(f"\n{w}x{h}  node pipeline, {len(cameras)} cameras ({', '.join(cameras)}), every frame, "
          f"{batches} x {batch} frames  [median ms per frame of all cameras]")
    print(f"  pipeline {pipe_ms:7.3f}   CameraPublisher: mosaic render | remap + Image + publish, overlapped "
          f"({1e3 / pipe_ms:.1f} frames/s)")
    print(f"  bare     {bare_ms:7.3f}   mujoco.Renderer update_scene+render x {len(cameras)} at {w}x{h} "
          f"({1e3 / bare_ms:.1f} frames/s)")
    print(f"  ratio pipeline/bare: {pipe_ms / bare_ms:.2f}x (target <= 1.4x)")
    return pipe_ms, bare_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(DEFAULT_MODEL) if DEFAULT_MODEL.exists() else None,
                    help="MJCF to render (default: the scene file if present, else a stand-in)")
    ap.add_argument("--standin", action="store_true", help="use the stand-in MJCF even if the scene exists")
    ap.add_argument("--camera", default="overhead")
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--batches", type=int, default=7,
                    help="interleaved batches of 24 frames, pipeline and bare, in the headline")
    ap.add_argument("--source-scale", type=float, default=1.0)
    ap.add_argument("--no-fisheye", action="store_true")
    ap.add_argument("--no-subscriber", action="store_true", help="publish with nobody listening")
    ap.add_argument("--subscriber", metavar="TOPIC", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.subscriber:
        _subscriber(args.subscriber)
        return
    if args.standin:
        args.model = None

    import mujoco
    import rclpy
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    print(f"model: {args.model or 'stand-in MJCF'}  camera: {args.camera}  "
          f"MUJOCO_GL={os.environ['MUJOCO_GL']}  ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}")

    from robogym_ros import contract
    from robogym_ros.camera.lookup import camera_names
    cams = camera_names(_load(mujoco, args.model))
    pipe_topics = [f"{PIPE_NS}/{contract.image_topic(c)}" for c in cams]
    sub = None
    if not args.no_subscriber:
        sub = subprocess.Popen([sys.executable, __file__, "--subscriber", ",".join([TOPIC, *pipe_topics])],
                               stdout=subprocess.PIPE, text=True)
    rclpy.init()
    node = rclpy.create_node("bench_camera_pub")
    pipe_node = rclpy.create_node("bench_camera_pipeline", namespace=PIPE_NS)
    publisher = node.create_publisher(Image, TOPIC, QoSProfile(depth=1))
    if sub is not None:
        deadline = time.monotonic() + 15.0
        while (publisher.get_subscription_count() == 0
               or any(pipe_node.count_subscribers(t) == 0 for t in pipe_topics)) and time.monotonic() < deadline:
            time.sleep(0.05)
    listeners = publisher.get_subscription_count()
    print(f"publishers: reliable, {listeners} subscriber(s) "
          f"{'in another process' if listeners else '(none)'}")

    try:
        for w, h in ((320, 240), (640, 480)):
            _bench_pipeline(args, mujoco, w, h, pipe_node, batches=args.batches)
        print("\n-- stages of one camera, one after the other --")
        for w, h in ((320, 240), (640, 480)):
            gl, shadows = _bench_resolution(args, mujoco, args.camera, w, h, publisher,
                                            node.get_clock())
        print(f"\nGL_RENDERER: {gl}; shadows+MSAA {'on' if shadows else 'off'} (both pipeline and bare)")
    finally:
        if sub is not None:
            time.sleep(0.3)  # let the last samples arrive before counting
            sub.send_signal(signal.SIGTERM)
            out, _ = sub.communicate(timeout=10)
            print(f"subscriber received {out.strip() or '?'} images")
        node.destroy_node()
        pipe_node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
