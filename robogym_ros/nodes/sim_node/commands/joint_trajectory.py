"""``joint_trajectory`` (trajectory_msgs/JointTrajectory, RELIABLE): trajectories for the sim,
with the semantics of ros2_control's JointTrajectoryController topic interface
(robogym_ros.sim.trajectory_follower). Validated here, whole or not at all
(robogym_ros.sim.commands.validate_trajectory); followed on the control tick in the physics
process. A rejection is logged with its reason and counted; nothing changes. A trajectory
stamped far ahead of sim time (the wall clock, nodes/sim_node/commands/clock_check.py) is rejected so too.
"""
from __future__ import annotations

from typing import Callable

from trajectory_msgs.msg import JointTrajectory

from robogym_ros import contract
from robogym_ros.contract import TopicSpec, header_stamp_ns
from robogym_ros.nodes.sim_node.commands.clock_check import SimClockCheck
from robogym_ros.nodes.sim_node.diagnostics import CommandCounts
from robogym_ros.ros.qos import COMMAND_QOS
from robogym_ros.sim.commands import CommandRejected, validate_trajectory

JOINT_TRAJECTORY = contract.JOINT_TRAJECTORY
JOINT_TRAJECTORY_TYPE = "trajectory_msgs/msg/JointTrajectory"
REJECTION_PREFIX = "joint_trajectory: "  # in the shared last_rejection, says which input it was


class TrajectorySubscriber:
    """Subscribes ``joint_trajectory`` on ``node`` and hands valid trajectories to ``sim``."""

    def __init__(self, node, sim, ranges: dict[str, tuple[float, float]], *,
                 now_ns: Callable[[], int | None] = lambda: None, counts: CommandCounts | None = None,
                 clock: SimClockCheck | None = None):
        """``sim``: anything with ``set_trajectory(command)`` (a SimProcess); ``now_ns``: the sim
        time of the latest tick, so a trajectory stamped to end in the past is rejected;
        ``counts``: shared with joint_commands' so diagnostics count both; ``clock``: the stamp
        check the node shares with its joint_commands (else one of this subscriber's own)."""
        self.node = node
        self.sim = sim
        self.ranges = dict(ranges)
        self.now_ns = now_ns
        self.counts = counts if counts is not None else CommandCounts()
        self.clock = clock if clock is not None else SimClockCheck(node, now_ns, self.counts)
        self.subscription = node.create_subscription(JointTrajectory, JOINT_TRAJECTORY, self.on_trajectory,
                                                     COMMAND_QOS)

    def on_trajectory(self, msg: JointTrajectory) -> None:
        stamp_ns, now_ns = header_stamp_ns(msg), self.now_ns()
        try:
            off_clock = self.clock.trajectory_refusal(stamp_ns, now_ns)
            if off_clock is not None:
                raise CommandRejected(off_clock + ": it would never run")
            command = validate_trajectory(msg.joint_names, msg.points, stamp_ns, self.ranges, now_ns=now_ns)
        except CommandRejected as exc:
            self.counts.reject(REJECTION_PREFIX + str(exc))
            self.node.get_logger().warning(f"trajectory rejected: {exc}")
            return
        self.sim.set_trajectory(command)
        self.counts.accept()

    def spec_topic(self) -> TopicSpec:
        return TopicSpec(self.subscription.topic_name, JOINT_TRAJECTORY_TYPE, None, contract.COMMAND_QOS)
