"""Camera frames for the sim node: rendered in a thread of the node, never in physics.

The pump thread offers every tick; a tick becomes a frame when the camera clock (its own
period in sim seconds, independent of decimation) says one is due. A one-slot mailbox sits
between the pump and the render thread: if a frame is still pending when the next one is
due, the older is dropped and counted. Nothing queues without bound, and physics, in its
own process, never waits for a frame.
"""
from __future__ import annotations

import logging
import threading

import mujoco
import numpy as np
from sensor_msgs.msg import CameraInfo, Image

from robogym_ros import interface as itf
from robogym_ros.lens import Lens
from robogym_ros.messages import stamp_msg
from robogym_ros.tick import Tick

log = logging.getLogger("robogym_ros.cameras")

DEFAULT_CAMERAS = ("left_wrist", "right_wrist", "overhead")


def select_cameras(requested: list[str], model_path: str) -> list[str]:
    """The cameras to render. The default set quietly shrinks to what another model has;
    a camera asked for by name that the model lacks is an error (raised by the pipeline)."""
    requested = [c for c in requested if c]
    if list(requested) != list(DEFAULT_CAMERAS):
        return requested
    model = mujoco.MjModel.from_xml_path(model_path)
    return [c for c in requested if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c) >= 0]


def optical_frame(camera: str) -> str:
    return f"{camera}_optical_frame"


class CameraClock:
    """Which ticks become frames: the first tick at or after each multiple of the period."""

    def __init__(self, period_ns: int):
        if period_ns <= 0:
            raise ValueError(f"camera period must be > 0 ns, got {period_ns}")
        self.period_ns = period_ns
        self._next_ns = 0

    def due(self, stamp_ns: int) -> bool:
        if stamp_ns < self._next_ns:
            return False
        # Advance on the fixed grid, not from this stamp: a period that is not a multiple of
        # the control dt jitters by up to one tick but keeps its mean exactly.
        self._next_ns += ((stamp_ns - self._next_ns) // self.period_ns + 1) * self.period_ns
        return True


class CameraPipeline:
    def __init__(self, node, model_path: str, cameras: list[str], lens: Lens, period_s: float):
        self.node = node
        self.cameras = list(cameras)
        self.lens = lens
        self.period_s = period_s
        self.clock = CameraClock(round(period_s * 1e9))
        self.rendered = 0
        self.skipped = 0  # due frames dropped because the renderer was still busy
        self.error = ""
        self._model = mujoco.MjModel.from_xml_path(model_path)
        have = [mujoco.mj_id2name(self._model, mujoco.mjtObj.mjOBJ_CAMERA, i)
                for i in range(self._model.ncam)]
        missing = [name for name in self.cameras if name not in have]
        if missing:  # fail now, in the node's constructor, naming the camera
            raise ValueError(f"no camera named {missing[0]!r} in the model; cameras: {have}")
        self.topics = {}
        self._pubs = {}
        for name in self.cameras:
            image = node.create_publisher(Image, f"cameras/{name}/image_raw", itf.IMAGE_QOS)
            info = node.create_publisher(CameraInfo, f"cameras/{name}/camera_info", itf.IMAGE_QOS)
            self._pubs[name] = (image, info)
            self.topics[name] = (image.topic_name, info.topic_name)
        self._pending: Tick | None = None
        self._cv = threading.Condition()
        self._stopping = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="camera_render", daemon=True)
        self._thread.start()
        self._ready.wait(60.0)
        if self.error:
            raise RuntimeError(f"cameras could not start: {self.error}")

    def offer(self, tick: Tick) -> None:
        """Called by the pump thread for every tick; cheap unless a frame is due."""
        if not self.clock.due(tick.stamp_ns):
            return
        with self._cv:
            if self._pending is not None:
                self.skipped += 1
            self._pending = tick
            self._cv.notify()

    def _run(self) -> None:
        from robogym_ros.renderer import CameraRenderer  # GL context: created on this thread
        try:
            renderer = CameraRenderer(self._model, self.cameras, self.lens)
        except Exception as exc:  # noqa: BLE001 - reported by the constructor
            self.error = f"{type(exc).__name__}: {exc}"
            self._ready.set()
            return
        self.gl_renderer = renderer.gl_renderer
        self.shadows_and_msaa = renderer.shadows_and_msaa
        self._ready.set()
        try:
            while True:
                with self._cv:
                    self._cv.wait_for(lambda: self._pending is not None or self._stopping)
                    if self._stopping:
                        return
                    tick, self._pending = self._pending, None
                images = renderer.render(tick.state)
                for name, rgb in images.items():
                    self._publish(name, rgb, tick.stamp_ns)
                self.rendered += 1
        except Exception as exc:  # noqa: BLE001 - a broken GL must not take the sim down
            self.error = f"{type(exc).__name__}: {exc}"
            log.error("camera rendering stopped: %s", self.error)
        finally:
            renderer.close()

    def _publish(self, name: str, rgb: np.ndarray, stamp_ns: int) -> None:
        image_pub, info_pub = self._pubs[name]
        h, w = rgb.shape[:2]
        image = Image(height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3)
        image.header.stamp = stamp_msg(stamp_ns)
        image.header.frame_id = optical_frame(name)
        image.data = rgb.tobytes()  # bytes: a memoryview here is ~1000x slower in rclpy
        info = self.camera_info(name)
        info.header.stamp = image.header.stamp
        image_pub.publish(image)
        info_pub.publish(info)

    def camera_info(self, name: str) -> CameraInfo:
        lens = self.lens
        info = CameraInfo(height=lens.height_px, width=lens.width_px,
                          distortion_model=lens.distortion_model)
        info.header.frame_id = optical_frame(name)
        info.d = lens.D.tolist()
        info.k = lens.K.ravel().tolist()
        info.r = lens.R.ravel().tolist()
        info.p = lens.P.ravel().tolist()
        return info

    def spec(self) -> list[dict]:
        lens = self.lens
        return [{
            "name": name, "image_topic": self.topics[name][0], "info_topic": self.topics[name][1],
            "width": lens.width_px, "height": lens.height_px, "encoding": "rgb8",
            "period_s": self.period_s, "frame_id": optical_frame(name),
            "distortion_model": lens.distortion_model, "k": lens.K.ravel().tolist(),
            "d": lens.D.tolist(), "p": lens.P.ravel().tolist(),
            "hfov_deg": lens.hfov_deg, "source_scale": lens.source_scale,
            "qos": itf.qos_dict(itf.IMAGE_QOS),
        } for name in self.cameras]

    def close(self) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify()
        self._thread.join(5.0)
