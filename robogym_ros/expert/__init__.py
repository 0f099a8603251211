"""A scripted expert for the handover (numpy + mujoco; no ROS, no Gymnasium).

``HandoverExpert`` maps what the env observes (joint positions, block and tray poses, gripper
efforts) to 12 servo targets; it plans with the scene's own MJCF (damped least-squares
inverse kinematics on MuJoCo's site Jacobians) and moves through phases whose grasp checks
react: a missed grasp is retried, and an episode that cannot go on names the phase it failed in.
"""
from robogym_ros.expert.kinematics import ArmKinematics
from robogym_ros.expert.percept import ExpertFailure, Percept
from robogym_ros.expert.policy import HandoverExpert

__all__ = ["ArmKinematics", "ExpertFailure", "HandoverExpert", "Percept"]
