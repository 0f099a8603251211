"""Cameras without ROS: the U20CAM lens model and the renderer (mujoco + OpenCV)."""
