"""FollowJointTrajectory action servers with ros2_control's JointTrajectoryController semantics:
the controllers (ROS), each goal's validation and its monitor (no ROS).
"""
