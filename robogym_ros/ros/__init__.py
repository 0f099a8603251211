"""rclpy glue that every ROS program of the package shares, the nodes and the env's ROS backend
alike: QoS profiles made from the contract, message stamps.
"""
