"""Messages built from a tick. Every call allocates a new message with new sequences.

``.tolist()`` hands rclpy fresh Python floats, which it packs into an ``array('d')`` owned
by that message alone: nothing in a message aliases MjData, the tick, or an earlier message.
"""
from __future__ import annotations

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, PoseArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robogym_ros.contract import WORLD_FRAME, join_stamp, split_stamp
from robogym_ros.sim.tick import Tick


def stamp_msg(stamp_ns: int) -> Time:
    sec, nanosec = split_stamp(stamp_ns)
    return Time(sec=sec, nanosec=nanosec)


def stamp_ns(stamp: Time) -> int:
    return join_stamp(stamp.sec, stamp.nanosec)


def joint_state(tick: Tick, names: list[str]) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp_msg(tick.stamp_ns)
    msg.name = list(names)
    msg.position = tick.position.tolist()
    msg.velocity = tick.velocity.tolist()
    msg.effort = tick.effort.tolist()
    return msg


def object_poses(tick: Tick) -> PoseArray:
    msg = PoseArray()
    msg.header.stamp = stamp_msg(tick.stamp_ns)
    msg.header.frame_id = WORLD_FRAME
    for x, y, z, qw, qx, qy, qz in tick.object_poses.tolist():  # contract.POSE_LAYOUT
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = x, y, z
        pose.orientation.w, pose.orientation.x = qw, qx
        pose.orientation.y, pose.orientation.z = qy, qz
        msg.poses.append(pose)
    return msg


def clock(tick: Tick) -> Clock:
    return Clock(clock=stamp_msg(tick.stamp_ns))
