"""The env's ROS modes: a client of a running sim over its topics (the only part of envs/ that
imports rclpy).
"""
