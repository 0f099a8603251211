"""What the sim's cameras publish, taken in this process, and the same frames rendered offline from the
physics state of their tick, to compare pixel for pixel."""
from __future__ import annotations

import time

import mujoco
import numpy as np
from sensor_msgs.msg import CameraInfo, Image
from simharness import Observer

from robogym_ros.params import DEFAULT_CAMERAS
from robogym_ros.ros import qos
from robogym_ros.ros import stamps as ros_stamps
from robogym_ros.task.scene import default_model_path

stamp_ns = ros_stamps.stamp_ns


class CameraObserver(Observer):
    """The harness's observer plus every image and camera_info of the named cameras.

    For each image it also notes wall time of arrival minus its stamp: constant up to jitter
    while the sim runs at real time, growing without bound if frames queue up.
    """

    def __init__(self, namespace: str, cameras=DEFAULT_CAMERAS):
        super().__init__(namespace)
        self.namespace = namespace
        self.images = {c: [] for c in cameras}
        self.infos = {c: [] for c in cameras}
        self.arrival_minus_stamp_s = {c: [] for c in cameras}
        for c in cameras:
            self.node.create_subscription(Image, f"cameras/{c}/image_raw", self._on_image(c),
                                          qos.IMAGE_QOS)
            self.node.create_subscription(CameraInfo, f"cameras/{c}/camera_info",
                                          self._keep(self.infos[c]), qos.IMAGE_QOS)

    def _on_image(self, camera):
        def callback(msg):
            with self._lock:
                self.images[camera].append(msg)
                self.arrival_minus_stamp_s[camera].append(
                    time.monotonic() - stamp_ns(msg.header.stamp) * 1e-9)
        return callback

    def wait_matched(self, timeout_s=10.0):
        """Until every image topic has its publisher: then no frame from now on is missed."""
        topics = [f"/{self.namespace}/cameras/{c}/image_raw" for c in self.images]
        self.wait_for(lambda: all(self.node.count_publishers(t) >= 1 for t in topics),
                      timeout_s, "image publishers")
        time.sleep(0.2)  # discovered is not yet matched

    def frames(self, camera) -> list[Image]:
        return self.snapshot(self.images[camera])

    def wait_frames(self, camera, n, timeout_s=20.0):
        start = len(self.frames(camera))
        self.wait_for(lambda: len(self.frames(camera)) >= start + n, timeout_s,
                      f"{n} more {camera} frames")
        return self.frames(camera)


def rgb(msg: Image) -> np.ndarray:
    return np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)


def render_offline(joint_msg, poses_msg, cameras, spec_entry):
    """Render the state named by joint_states + object poses, as the node would."""
    from robogym_ros.camera.lens import Lens
    from robogym_ros.camera.renderer import CameraRenderer
    model = mujoco.MjModel.from_xml_path(default_model_path())
    data = mujoco.MjData(model)
    lens = Lens(spec_entry["width"], spec_entry["height"],
                fisheye=spec_entry["distortion_model"] == "equidistant")
    assert lens.K.ravel().tolist() == spec_entry["k"]
    renderer = CameraRenderer(model, cameras, lens)
    try:
        out = []
        for js, poses in zip(joint_msg, poses_msg):
            for name, q in zip(js.name, js.position):
                data.joint(name).qpos = q
            for body, p in zip(("block_free", "tray_free"), poses.poses):
                data.joint(body).qpos = [p.position.x, p.position.y, p.position.z,
                                         p.orientation.w, p.orientation.x, p.orientation.y,
                                         p.orientation.z]
            state = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION))
            mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
            out.append(renderer.render(state))
        return out
    finally:
        renderer.close()
