"""robogym_ros: a real-time MuJoCo sim of two SO-101 arms for ROS 2, and a recorder that proves its data."""
