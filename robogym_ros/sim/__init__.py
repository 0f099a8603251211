"""The physics process and what it runs (mujoco + numpy only: no ROS, no GL): the physics of the
task's scene, the real-time loop and its lateness figures, the process proxy, the tick record,
trajectories followed in the physics, the scene's entities, and the validation of what a command
may ask of the physics (commands)."""
