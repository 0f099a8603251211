"""The ROS 2 standard simulation API (simulation_interfaces) on the sim node, where it is installed.
"""
