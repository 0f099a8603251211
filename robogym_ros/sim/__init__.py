"""Physics and everything the physics process needs (mujoco + numpy only: no ROS, no GL)."""
