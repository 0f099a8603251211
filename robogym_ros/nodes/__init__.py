"""The ROS 2 nodes: everything that imports rclpy lives here."""
