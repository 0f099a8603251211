"""Cameras without ROS: the U20CAM lens model and the renderer (mujoco + OpenCV).

Importing this package chooses EGL for MuJoCo when nothing is chosen and there is no display
(robogym_ros.camera.gl): MuJoCo reads MUJOCO_GL once, when it is first imported, and the
sim node imports its cameras, and the env package robogym_ros.camera.gl, before anything imports mujoco.
"""
from robogym_ros.camera.gl import headless_default  # noqa: F401  (importing it chooses)
