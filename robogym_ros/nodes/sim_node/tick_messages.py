"""Messages built from a tick. Every call allocates a new message with new sequences.

Two forms. Message objects (``joint_state``, ``object_poses``, ``clock``) for code that wants
them. And :class:`TickMessages`, the sim node's per-tick path: joint_states, ground truth,
the servo targets, object poses and /clock as serialized CDR (``bytes``), which ``Publisher.publish`` sends
without building a Python message and without rclpy's conversion. Every call returns a new
object; nothing in one aliases MjData, the tick, or an earlier message (numbers are copied
out with ``tobytes``; DDS copies what is published).
"""
from __future__ import annotations

from array import array

import numpy as np
from geometry_msgs.msg import Pose, PoseArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robogym_ros.contract import WORLD_FRAME
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.sim.tick import Tick
from robogym_ros.wire.encode import JointStateEncoder, PoseArrayEncoder, encode_time

_F64 = np.dtype("<f8")


def _doubles(values) -> array:
    # An array('d') goes into the message as it is (a list is type-checked element by element);
    # built from a copy of the bytes, so it owns its memory.
    return array("d", np.asarray(values, _F64).tobytes())


def joint_state(tick: Tick, names: list[str]) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp_msg(tick.stamp_ns)
    msg.name = list(names)
    msg.position = _doubles(tick.position)
    msg.velocity = _doubles(tick.velocity)
    msg.effort = _doubles(tick.effort)
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


class TickMessages:
    """The messages of one sim's ticks: names and frame ids encoded once, numbers per tick.

    All go out as CDR bytes, which costs the node less than half as much per message
    (bench/bench_sim.py); joint_states as a message object cost a third of the node's time
    per lockstep step (bench/bench_env.py).
    """

    def __init__(self, joint_names: list[str], target_columns: np.ndarray | None = None):
        self.joint_names = list(joint_names)
        self._joint_state = JointStateEncoder(self.joint_names)
        self._poses = PoseArrayEncoder(WORLD_FRAME)
        # Where each joint's servo target (MjData.ctrl) sits in a tick's state vector, in joint
        # order (robogym_ros.sim.physics.ctrl_columns); None: no targets message.
        self._target_columns = None if target_columns is None else np.asarray(target_columns, np.int64)
        if self._target_columns is not None and len(self._target_columns) != len(self.joint_names):
            raise ValueError(f"{len(self._target_columns)} target columns for {len(self.joint_names)} joints")

    def joint_states(self, tick: Tick) -> bytes:
        """sensor_msgs/JointState, serialized (each call new bytes): joint_states and ground truth."""
        return self._joint_state.encode(tick.stamp_ns, tick.position, tick.velocity, tick.effort)

    def targets(self, tick: Tick) -> bytes:
        """sensor_msgs/JointState of the servo targets in force during the tick (position only;
        contract.TRUTH_TARGETS says which targets exactly), serialized."""
        if self._target_columns is None:
            raise ValueError("TickMessages was built without target_columns: it has no targets message")
        return self._joint_state.encode(tick.stamp_ns, tick.state[self._target_columns], (), ())

    def object_poses(self, tick: Tick) -> bytes:
        """geometry_msgs/PoseArray (frame ``world``, poses in the tick's object order), serialized."""
        return self._poses.encode(tick.stamp_ns, tick.object_poses)

    def clock(self, tick: Tick) -> bytes:
        """rosgraph_msgs/Clock, serialized."""
        return encode_time(tick.stamp_ns)
