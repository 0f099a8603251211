"""Camera frames for the sim node: rendered in a thread of the node, never in physics.

The pump thread offers every tick; a tick becomes a frame when the camera clock (its own
period in sim seconds, independent of decimation) says one is due. A one-slot mailbox sits
between the pump and the render thread: if a frame is still pending when the next one is
due, the older is dropped and counted. Nothing queues without bound, and physics, in its
own process, never waits for a frame.
"""
from __future__ import annotations

import threading
from typing import Callable

import mujoco
import numpy as np
from sensor_msgs.msg import CameraInfo, Image

from robogym_ros import contract
from robogym_ros.camera.clock import CameraClock
from robogym_ros.camera.lens import Lens
from robogym_ros.camera.lookup import select_cameras
from robogym_ros.contract import CameraSpec, optical_frame
from robogym_ros.nodes.messages import stamp_msg
from robogym_ros.nodes.qos import IMAGE_QOS
from robogym_ros.sim.tick import Tick


def start_cameras(node, model_path: str, requested: list[str], lens: Lens, period_s: float, *,
                  control_dt_ns: int, hold_physics: Callable[[int | None], None],
                  every_frame: bool) -> "CameraPublisher | None":
    """The camera publisher, or None when the model has none of the requested cameras (the
    default set shrinks to what a model has; a camera named that it lacks is a ValueError)."""
    model = mujoco.MjModel.from_xml_path(model_path)
    cameras = select_cameras(requested, model)
    if not cameras:
        return None
    return CameraPublisher(node, model, cameras, lens, period_s, control_dt_ns=control_dt_ns,
                           hold_physics=hold_physics, every_frame=every_frame)


class CameraPublisher:
    """Renders the named cameras of a model and publishes Image + CameraInfo per frame."""

    def __init__(self, node, model: mujoco.MjModel, cameras: list[str], lens: Lens, period_s: float, *,
                 control_dt_ns: int, hold_physics: Callable[[int | None], None], every_frame: bool):
        """``hold_physics(tick)`` lets physics complete ticks up to ``tick`` on its own (None: no
        limit); with ``every_frame`` (real_time_factor 0) the publisher uses it so that physics
        never runs past the next frame's tick before the current frame is published."""
        self.node = node
        self.control_dt_ns = control_dt_ns
        self._hold_physics = hold_physics
        self.every_frame = every_frame
        self.lens = lens
        self.rendered = 0
        self.skipped = 0  # due frames dropped because the renderer was still busy
        self.error = ""
        self._model = model
        self.cameras = list(cameras)
        self.period_s = period_s
        self.clock = CameraClock(round(period_s * 1e9)) if period_s > 0 else None
        self._pubs = {name: (node.create_publisher(Image, contract.image_topic(name), IMAGE_QOS),
                             node.create_publisher(CameraInfo, contract.info_topic(name), IMAGE_QOS))
                      for name in self.cameras}
        self._pending: Tick | None = None
        self._cv = threading.Condition()
        self._stopping = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="camera_render", daemon=True)
        self._thread.start()
        self._ready.wait(60.0)
        if self.error:
            raise RuntimeError(f"cameras could not start: {self.error}")

    @property
    def mode(self) -> str:
        """What the spec says of frames: every due frame, or skip (and count) while busy."""
        return "every_frame" if self.every_frame else "skip_when_busy"

    def set_every_frame(self, every_frame: bool) -> None:
        """Every frame (real_time_factor 0: physics waits) or skip when busy (real time)."""
        self.every_frame = every_frame

    def set_period(self, period_s: float) -> None:
        """A new frame period [s, sim] from the next tick on; 0 stops rendering."""
        self.clock = CameraClock(round(period_s * 1e9)) if period_s > 0 else None
        self.period_s = period_s

    def offer(self, tick: Tick) -> None:
        """Called by the pump thread for every tick; cheap unless a frame is due."""
        clock = self.clock
        if clock is None or not clock.due(tick.stamp_ns):
            return
        with self._cv:
            if self._pending is not None:
                self.skipped += 1
            self._pending = tick
            self._cv.notify()

    def _run(self) -> None:
        from robogym_ros.camera.renderer import CameraRenderer  # GL context: created on this thread
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
            if not self._stopping:
                self.node.get_logger().error(f"camera rendering stopped: {self.error}")
        finally:
            renderer.close()

    def _publish(self, name: str, rgb: np.ndarray, stamp_ns: int) -> None:
        image_pub, info_pub = self._pubs[name]
        h, w = rgb.shape[:2]
        image = Image(height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3)
        image.header.stamp = stamp_msg(stamp_ns)
        image.header.frame_id = optical_frame(name)
        image.data = rgb.tobytes()  # bytes: a memoryview here is ~1000x slower in rclpy
        info = self._camera_info(name)
        info.header.stamp = image.header.stamp
        image_pub.publish(image)
        info_pub.publish(info)

    def _camera_info(self, name: str) -> CameraInfo:
        lens = self.lens
        info = CameraInfo(height=lens.height_px, width=lens.width_px,
                          distortion_model=lens.distortion_model)
        info.header.frame_id = optical_frame(name)
        info.d = lens.D.tolist()
        info.k = lens.K.ravel().tolist()
        info.r = lens.R.ravel().tolist()
        info.p = lens.P.ravel().tolist()
        return info

    def spec(self) -> tuple[CameraSpec, ...]:
        lens = self.lens
        return tuple(CameraSpec(
            name=name, image_topic=image.topic_name, info_topic=info.topic_name,
            width=lens.width_px, height=lens.height_px, encoding="rgb8", period_s=self.period_s,
            frame_id=optical_frame(name), distortion_model=lens.distortion_model,
            k=tuple(lens.K.ravel().tolist()), d=tuple(lens.D.tolist()), p=tuple(lens.P.ravel().tolist()),
            hfov_deg=lens.hfov_deg, source_scale=lens.source_scale, qos=contract.IMAGE_QOS,
        ) for name, (image, info) in self._pubs.items())

    def close(self, timeout_s: float = 1.0) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify()
        self._thread.join(timeout_s)
