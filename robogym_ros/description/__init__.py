"""The scene as ROS tools describe it (mujoco + numpy, no ROS): the URDF of the loaded MJCF (urdf)
and the transforms only the sim knows, cameras' optical frames and the objects' poses (tf_frames)."""
