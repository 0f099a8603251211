"""Many envs at once: the native batched env, its scene batch and episode collector, a Ray
fleet of batched envs, and a fleet of sim processes for vectors of ROS-mode envs.
"""
