"""Frames from states, in two threads so that finishing one frame overlaps rendering the next.

The GL thread renders every camera of a frame into one mosaic buffer (CameraRenderer); the
finisher thread remaps each camera's view through the lens (cv2.remap releases the GIL, as do
MuJoCo's GL calls) and hands each image to the caller's ``emit``. Two mosaic buffers circulate
between them, so the GL thread renders frame k+1 while frame k is remapped and published.

Frames wait in a mailbox. ``keep_all`` (real_time_factor 0: the caller holds physics back so
the mailbox stays short) keeps every frame; otherwise a frame still waiting when the next
one arrives is dropped and handed back to the caller to count. No ROS here.
"""
from __future__ import annotations

import os
import queue
import threading
from collections import deque
from typing import Any, Callable, Protocol

import mujoco
import numpy as np

from robogym_ros.camera.lens import Lens

_MOSAICS = 2  # one being rendered, one being finished
# Below the thread that publishes every tick: on two busy cores the cameras (and the GL's worker
# threads, which inherit the render thread's niceness) must not take the CPU that drains the
# physics process's tick pipe, or physics waits for the cameras.
CAMERA_THREAD_NICE = 5


def lower_this_thread(nice: int = CAMERA_THREAD_NICE) -> None:
    """Raise the calling thread's niceness by ``nice`` (Linux: per thread; always allowed)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (OSError, AttributeError):  # not Linux: the priority stays as it is
        pass


class Frame(Protocol):
    """What the pipeline renders: anything with a state (a sim Tick)."""

    state: np.ndarray  # mjSTATE_INTEGRATION vector


class FramePipeline:
    """Renders submitted frames; calls ``emit(camera, rgb, frame)`` for each camera and then
    ``done(frame)``, both on the finisher thread, frames in order. ``rgb`` is a new array each
    time, or with ``reuse_output`` one array per camera, valid only during the call (an
    ``emit`` that copies the pixels anyway saves an allocation of a whole image per camera).

    An exception in either thread stops the pipeline: ``error`` says what happened and
    ``on_error(error)`` is called once. Rendering starts on a thread of its own at
    construction (the GL context belongs to it); a GL that cannot start raises RuntimeError.
    """

    def __init__(self, model: mujoco.MjModel, cameras: list[str], lens: Lens, *,
                 emit: Callable[[str, np.ndarray, Any], None], done: Callable[[Any], None],
                 on_error: Callable[[str], None], keep_all: bool, reuse_output: bool = False,
                 start_timeout_s: float = 60.0):
        self.cameras = list(cameras)
        self.lens = lens
        self.error = ""
        self.gl_renderer = ""
        self.shadows_and_msaa = False
        self._model = model
        self._emit, self._done, self._on_error = emit, done, on_error
        self._keep_all = keep_all
        self._reuse_output = reuse_output
        self._waiting: deque = deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._free: queue.Queue = queue.Queue()  # mosaics to render into; None = stop
        self._rendered: queue.Queue = queue.Queue()  # (frame, mosaic) to finish; None = stop
        self._renderer = None
        self._ready = threading.Event()
        self._gl_thread = threading.Thread(target=self._render_loop, name="camera_render", daemon=True)
        self._finisher = threading.Thread(target=self._finish_loop, name="camera_finish", daemon=True)
        self._gl_thread.start()
        self._ready.wait(start_timeout_s)
        if self.error or self._renderer is None:
            self.close()
            raise RuntimeError(f"cameras could not start: {self.error or 'GL did not start in time'}")
        self._finisher.start()

    # --- the mailbox (any thread) ------------------------------------------------------------
    def submit(self, frame: Frame) -> list:
        """Queue a frame; returns the frames this drops (never any with ``keep_all``)."""
        with self._cv:
            dropped = [] if self._keep_all else list(self._waiting)
            if dropped:
                self._waiting.clear()
            self._waiting.append(frame)
            self._cv.notify()
        return dropped

    def set_keep_all(self, keep_all: bool) -> list:
        """Switch policy; leaving keep_all drops all but the newest waiting frame (returned)."""
        with self._cv:
            self._keep_all = keep_all
            dropped = []
            while not keep_all and len(self._waiting) > 1:
                dropped.append(self._waiting.popleft())
        return dropped

    @property
    def waiting(self) -> int:
        with self._cv:
            return len(self._waiting)

    # --- the two threads ---------------------------------------------------------------------
    def _render_loop(self) -> None:
        from robogym_ros.camera.renderer import CameraRenderer  # GL context: created on this thread
        lower_this_thread()  # before the GL starts its worker threads: they inherit it
        try:
            renderer = CameraRenderer(self._model, self.cameras, self.lens)
        except Exception as exc:  # noqa: BLE001 - reported by the constructor
            self.error = f"{type(exc).__name__}: {exc}"
            self._ready.set()
            return
        self.gl_renderer = renderer.gl_renderer
        self.shadows_and_msaa = renderer.shadows_and_msaa
        for _ in range(_MOSAICS):
            self._free.put(renderer.new_mosaic())
        self._renderer = renderer
        self._ready.set()
        try:
            while True:
                # A buffer first, then the newest frame: while both buffers are busy, frames
                # wait in the mailbox, where a newer one may replace them.
                mosaic = self._free.get()
                if mosaic is None:
                    return
                with self._cv:
                    self._cv.wait_for(lambda: self._waiting or self._stopping)
                    if self._stopping:
                        return
                    frame = self._waiting.popleft()
                renderer.render_raw(frame.state, mosaic)
                self._rendered.put((frame, mosaic))
        except Exception as exc:  # noqa: BLE001 - a broken GL must not take the caller down
            self._fail(exc)
        finally:
            renderer.close()

    def _finish_loop(self) -> None:
        lower_this_thread()
        views = self._renderer.views
        distort = self.lens.distort
        shape = (self.lens.height_px, self.lens.width_px, 3)
        outs = [np.empty(shape, np.uint8) if self._reuse_output else None for _ in self.cameras]
        try:
            while True:
                item = self._rendered.get()
                if item is None:
                    return
                frame, mosaic = item
                images = [distort(view, bottom_up=True, out=out) for view, out in zip(views(mosaic), outs)]
                self._free.put(mosaic)
                for name, rgb in zip(self.cameras, images):
                    self._emit(name, rgb, frame)
                self._done(frame)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        with self._cv:
            first = not self.error and not self._stopping
            if first:
                self.error = f"{type(exc).__name__}: {exc}"
        if first:
            self._stop_threads()
            self._on_error(self.error)

    def _stop_threads(self) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._free.put(None)
        self._rendered.put(None)

    def close(self, timeout_s: float = 1.0) -> None:
        self._stop_threads()
        for thread in (self._gl_thread, self._finisher):
            if thread.is_alive():
                thread.join(timeout_s)
