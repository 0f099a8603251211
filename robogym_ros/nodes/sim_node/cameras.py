"""Camera frames for the sim node: rendered in threads of the node, never in physics.

The pump thread offers every tick; a tick becomes a frame when the camera clock (its own
period in sim seconds, independent of decimation) says one is due. Frames go through a
FramePipeline (robogym_ros.camera.pipeline): render on a GL thread, remap and publish on
another, overlapped. Two modes, named in the spec's ``camera_frames`` and in diagnostics:

- ``skip_when_busy`` (real_time_factor > 0): physics never waits. A frame still waiting when
  the next is due is dropped, counted, and announced on ``cameras/skipped``.
- ``every_frame`` (real_time_factor 0): nothing is dropped; physics is held instead. A frame
  due at tick k is published before physics runs past the tick of the next frame: the tick
  limit is always the tick of the frame after the oldest frame not yet published, so the
  render of frame k overlaps the physics up to the next frame's tick. A render error
  releases the hold, so physics never deadlocks on a dead renderer.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Callable

import mujoco
import numpy as np
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from robogym_ros import contract
from robogym_ros.camera.clock import CameraClock, frame_tick, next_frame_tick
from robogym_ros.camera.lens import Lens
from robogym_ros.camera.lookup import select_cameras
from robogym_ros.camera.pipeline import FramePipeline
from robogym_ros.contract import CameraSpec, optical_frame
from robogym_ros.ros.qos import IMAGE_QOS, STREAM_QOS
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.sim.tick import Tick
from robogym_ros.wire.encode import CameraInfoEncoder, ImageEncoder

EVERY_FRAME = "every_frame"
SKIP_WHEN_BUSY = "skip_when_busy"


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
        self.rendered = 0  # frames whose every camera is published
        self.skipped = 0  # due frames dropped because the renderer was still busy
        self.cameras = list(cameras)
        self.period_s = period_s
        self.clock = CameraClock(round(period_s * 1e9)) if period_s > 0 else None
        self._pubs = {name: (node.create_publisher(Image, contract.image_topic(name), IMAGE_QOS),
                             node.create_publisher(CameraInfo, contract.info_topic(name), IMAGE_QOS))
                      for name in self.cameras}
        self._pub_skipped = node.create_publisher(Header, contract.CAMERA_SKIPS_TOPIC, STREAM_QOS)
        self._skipped_frame_id = ",".join(self.cameras)
        self._encoders = {name: self._encoders_of(name) for name in self.cameras}
        self._lock = threading.Lock()  # the frames in flight and the limit sent to physics
        self._in_flight: deque[int] = deque()  # tick indices of due frames not yet published
        self._limit: int | None = None
        # The limit travels to physics on a thread of its own: a request to the physics process
        # can wait behind another caller's (say, a status request while physics is blocked on a
        # full tick pipe), and the pump thread, which drains that pipe, must never wait on it.
        self._hold_cv = threading.Condition()
        self._hold_to_send: list = []  # [limit] while one is waiting to be sent
        self._hold_stopping = False
        self._hold_thread = threading.Thread(target=self._send_holds, name="camera_hold", daemon=True)
        self._last_stamp_ns = -1
        self._error = ""
        self._closed = False
        self.pipeline = FramePipeline(model, self.cameras, lens, emit=self._publish, done=self._frame_done,
                                      on_error=self._on_error, keep_all=every_frame, reuse_output=True)
        self.gl_renderer = self.pipeline.gl_renderer
        self.shadows_and_msaa = self.pipeline.shadows_and_msaa
        self._hold_thread.start()
        with self._lock:
            self._update_hold()

    @property
    def mode(self) -> str:
        """What the spec says of frames: every due frame, or skip (and count) while busy."""
        return EVERY_FRAME if self.every_frame else SKIP_WHEN_BUSY

    @property
    def error(self) -> str:
        return self._error

    def set_every_frame(self, every_frame: bool) -> None:
        """Every frame (real_time_factor 0: physics waits) or skip when busy (real time)."""
        with self._lock:
            self.every_frame = every_frame
            dropped = self.pipeline.set_keep_all(every_frame)
            self._forget(dropped)
            self._update_hold()
        self._announce_skipped(dropped)

    def set_period(self, period_s: float) -> None:
        """A new frame period [s, sim] from the next tick on; 0 stops rendering. The first
        frame of the new period is its first grid point after the last tick seen."""
        with self._lock:
            self.clock = CameraClock(round(period_s * 1e9), self._last_stamp_ns) if period_s > 0 else None
            self.period_s = period_s
            self._update_hold()

    # --- the pump thread ---------------------------------------------------------------------
    def offer(self, tick: Tick) -> None:
        """Called by the pump thread for every tick; cheap unless a frame is due."""
        self._last_stamp_ns = tick.stamp_ns
        clock = self.clock
        if clock is None or not clock.due(tick.stamp_ns):
            return
        with self._lock:
            self._in_flight.append(tick.index)
            dropped = self.pipeline.submit(tick)
            self._forget(dropped)
            self._update_hold()
        self._announce_skipped(dropped)

    # --- holding physics (caller holds self._lock) -------------------------------------------
    def _update_hold(self) -> None:
        clock = self.clock
        if not self.every_frame or clock is None or self._error or self._closed:
            limit = None
        else:
            dt = self.control_dt_ns
            oldest = self._in_flight[0] if self._in_flight else frame_tick(clock.next_ns, dt)
            limit = next_frame_tick(oldest, clock.period_ns, dt)
        if limit != self._limit:
            self._limit = limit
            with self._hold_cv:
                self._hold_to_send[:] = [limit]  # only the newest limit matters
                self._hold_cv.notify()

    def _send_holds(self) -> None:
        while True:
            with self._hold_cv:
                self._hold_cv.wait_for(lambda: self._hold_to_send or self._hold_stopping)
                if not self._hold_to_send:
                    return
                (limit,) = self._hold_to_send
                self._hold_to_send.clear()
            try:
                self._hold_physics(limit)
            except (RuntimeError, OSError):  # physics is gone; the pump reports that
                pass

    def _forget(self, dropped: list) -> None:
        for tick in dropped:
            self._in_flight.remove(tick.index)
        self.skipped += len(dropped)

    def _announce_skipped(self, dropped: list) -> None:
        for tick in dropped:
            self._pub_skipped.publish(Header(stamp=stamp_msg(tick.stamp_ns), frame_id=self._skipped_frame_id))

    # --- the pipeline's finisher thread ------------------------------------------------------
    def _publish(self, name: str, rgb: np.ndarray, tick: Tick) -> None:
        """Image and CameraInfo as serialized bytes: a new bytes object per message (the pixels
        copied once, from the pipeline's reused output), sent as is by rclpy."""
        image_pub, info_pub = self._pubs[name]
        image, info = self._encoders[name]
        image_pub.publish(image.encode(tick.stamp_ns, rgb))
        info_pub.publish(info.encode(tick.stamp_ns))

    def _frame_done(self, tick: Tick) -> None:
        with self._lock:
            self.rendered += 1
            self._in_flight.remove(tick.index)
            self._update_hold()

    def _on_error(self, error: str) -> None:
        with self._lock:
            self._error = error
            self._update_hold()  # releases physics
        self.node.get_logger().error(f"camera rendering stopped: {error}")

    def _encoders_of(self, name: str) -> tuple[ImageEncoder, CameraInfoEncoder]:
        lens, frame_id = self.lens, optical_frame(name)
        w, h = lens.width_px, lens.height_px
        return (ImageEncoder(frame_id, h, w, "rgb8", 3 * w),
                CameraInfoEncoder(frame_id, h, w, lens.distortion_model, lens.D, lens.K, lens.R, lens.P))

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
        self.pipeline.close(timeout_s)
        with self._lock:
            self._closed = True
            self._update_hold()  # never leave physics held by a publisher that is gone
        with self._hold_cv:
            self._hold_stopping = True
            self._hold_cv.notify()
        self._hold_thread.join(timeout_s)
