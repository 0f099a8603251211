"""Camera images from one physics state (MuJoCo + lens; no ROS).

The renderer owns a *copy* of the model (it widens cam_fovy to the lens's source pinhole
and enlarges the offscreen buffer) and its own MjData, so it can sit in another thread or
process than physics and never disturbs the caller's model.

It drives MuJoCo's GL calls itself instead of going through ``mujoco.Renderer`` for two
reasons: multisampling has to be chosen before the MjrContext exists, which is only
possible once the GL renderer is known; and OpenGL returns rows bottom-up, which the
lens's remap can absorb for free instead of a full-image flip.

MUJOCO_GL must be set (e.g. ``egl``) before mujoco is first imported. A GL context is
current on one thread at a time: use one CameraRenderer from one thread.
"""
from __future__ import annotations

import copy
import logging
from typing import Iterable

import mujoco
import numpy as np

from robogym_ros.camera.lens import Lens
from robogym_ros.camera.lookup import camera_id

try:
    from mujoco.rendering.classic.gl_context import GLContext
except ImportError:  # mujoco < 4
    from mujoco.gl_context import GLContext

_log = logging.getLogger(__name__)  # no ROS here; the node reports what matters

# MuJoCo camera axes (x right, y up, looking along -z) -> ROS optical (x right, y down, z fwd).
_MJ_FROM_OPTICAL = np.diag([1.0, -1.0, -1.0])
_SOFTWARE_GL_MARKERS = ("llvmpipe", "softpipe", "swrast", "software", "lavapipe", "swiftshader")


def camera_pose_optical(model: mujoco.MjModel, data: mujoco.MjData, name: str
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(R_world_from_optical 3x3, t_world_m 3) of a camera; needs kinematics done on data.

    A world point p has optical coordinates R.T @ (p - t).
    """
    cam_id = camera_id(model, name)
    R_world_from_mj = data.cam_xmat[cam_id].reshape(3, 3)
    return R_world_from_mj @ _MJ_FROM_OPTICAL, data.cam_xpos[cam_id].copy()


def _gl_renderer_string() -> str:
    try:
        from OpenGL import GL  # PyOpenGL ships with mujoco's GL backends
        raw = GL.glGetString(GL.GL_RENDERER)
        return raw.decode() if raw else ""
    except Exception as exc:  # any failure just means "unknown"
        _log.warning("could not query GL_RENDERER (%s)", exc)
        return ""


def is_software_gl(gl_renderer: str) -> bool:
    """True for CPU rasterisers, and for an unknown renderer (see CameraRenderer)."""
    name = gl_renderer.lower()
    return not name or any(marker in name for marker in _SOFTWARE_GL_MARKERS)


class CameraRenderer:
    """Renders the named cameras of one model through one lens.

    shadows_and_msaa: None picks by GL renderer - on for a GPU, off for a software
    rasteriser (llvmpipe), where shadow maps and 4x multisampling make a frame ~10x
    slower. An unrecognised renderer counts as software: a frame without shadows beats
    one that misses its real-time deadline.
    """

    def __init__(self, model: mujoco.MjModel, camera_names: Iterable[str], lens: Lens,
                 *, shadows_and_msaa: bool | None = None, max_geom: int = 10000) -> None:
        self._gl = None
        self._con = None
        self.lens = lens
        self.camera_names = tuple(camera_names)
        if not self.camera_names:
            raise ValueError("camera_names is empty")

        m = copy.deepcopy(model)
        cam_ids = [camera_id(m, name) for name in self.camera_names]
        for name, cam_id in zip(self.camera_names, cam_ids):
            if m.cam_projection[cam_id] != mujoco.mjtProjection.mjPROJ_PERSPECTIVE:
                raise ValueError(f"camera {name!r} is not a perspective camera")
            m.cam_fovy[cam_id] = lens.source_fovy_deg
            # A nonzero sensor size makes MuJoCo ignore fovy in favour of focal/sensor data.
            m.cam_sensorsize[cam_id] = 0.0
        w, h = lens.source_width_px, lens.source_height_px
        m.vis.global_.offwidth = max(int(m.vis.global_.offwidth), w)
        m.vis.global_.offheight = max(int(m.vis.global_.offheight), h)
        self._model = m
        self._data = mujoco.MjData(m)
        self._state_size = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION)

        self._gl = GLContext(w, h)
        self._gl.make_current()
        self.gl_renderer = _gl_renderer_string()
        if shadows_and_msaa is None:
            shadows_and_msaa = not is_software_gl(self.gl_renderer)
        self.shadows_and_msaa = bool(shadows_and_msaa)
        if not self.shadows_and_msaa:
            m.vis.quality.offsamples = 0  # read by MjrContext when it builds the offscreen FBO

        self._scene = mujoco.MjvScene(m, maxgeom=max_geom)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = self.shadows_and_msaa
        self._option = mujoco.MjvOption()
        # Sites are debug markers, not things a real camera sees.
        self._option.sitegroup[:] = 0
        self._con = mujoco.MjrContext(m, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._con)
        self._rect = mujoco.MjrRect(0, 0, w, h)
        self._cams = []
        for cam_id in cam_ids:
            cam = mujoco.MjvCamera()
            cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
            cam.fixedcamid = cam_id
            self._cams.append(cam)
        # Scratch for glReadPixels; only ever read by the remap, never handed out.
        self._raw = np.empty((h, w, 3), dtype=np.uint8)

    @property
    def model(self) -> mujoco.MjModel:
        return self._model

    @property
    def data(self) -> mujoco.MjData:
        """The renderer's MjData, holding the state of the last render()."""
        return self._data

    def render(self, state: np.ndarray) -> dict[str, np.ndarray]:
        """Images (h, w, 3) uint8 of every camera, all from this one mjSTATE_INTEGRATION state."""
        if self._con is None:
            raise RuntimeError("render() after close()")
        state = np.asarray(state, dtype=np.float64)
        if state.shape != (self._state_size,):
            raise ValueError(
                f"state must be the mjSTATE_INTEGRATION vector of {self._state_size} numbers, "
                f"got shape {state.shape}")
        m, d = self._model, self._data
        mujoco.mj_setState(m, d, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(m, d)
        self._gl.make_current()
        images = {}
        for name, cam in zip(self.camera_names, self._cams):
            mujoco.mjv_updateScene(m, d, self._option, None, cam, mujoco.mjtCatBit.mjCAT_ALL,
                                   self._scene)
            mujoco.mjr_render(self._rect, self._scene, self._con)
            mujoco.mjr_readPixels(self._raw, None, self._rect, self._con)
            images[name] = self.lens.distort(self._raw, bottom_up=True)
        return images

    def camera_pose_optical(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Pose of a camera at the last rendered state; see module-level camera_pose_optical."""
        return camera_pose_optical(self._model, self._data, name)

    def close(self) -> None:
        if self._con is not None:
            self._gl.make_current()  # GL objects must be freed in their own context
            self._con.free()
            self._con = None
        if self._gl is not None:
            self._gl.free()
            self._gl = None

    def __enter__(self) -> "CameraRenderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown may have torn GL down already
            pass
