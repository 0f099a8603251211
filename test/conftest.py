"""Test environment: DDS stays on this host, each run gets its own domain, GL is headless.

Set before anything imports rclpy or mujoco, and inherited by every process a test starts.
"""
import os

# Fast DDS would otherwise multicast on the network interface, which this workplace forbids.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
# Parallel runs on one machine must never hear each other: a domain per run (0..101 is the
# portable range; 1..99 keeps clear of 0, the default every stray ROS process uses).
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYTHONUNBUFFERED", "1")
