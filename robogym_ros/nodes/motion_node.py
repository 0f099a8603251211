"""ROS 2 node ``robogym_motion``: drives both arms along the scripted trajectory.

It runs on sim time (/clock), so the trajectory is a function of sim seconds whatever the
real-time factor, and stops when the sim pauses. See robogym_ros.trajectory for the path.
"""
from __future__ import annotations

import sys

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from robogym_ros import contract
from robogym_ros.nodes.qos import COMMAND_QOS
from robogym_ros.nodes.spin import StoppableNode, run_node
from robogym_ros.sim.trajectory import targets_at


class MotionNode(StoppableNode):
    """Publishes the scripted trajectory's targets on joint_commands, on sim time."""

    def __init__(self, **kwargs):
        kwargs.setdefault("parameter_overrides", [Parameter("use_sim_time", value=True)])
        super().__init__("robogym_motion", **kwargs)
        period_s = self.declare_parameter(
            "command_period_s", 0.01,
            ParameterDescriptor(description="period of joint_commands [s, sim time]")).value
        self.pub = self.create_publisher(JointState, contract.JOINT_COMMANDS, COMMAND_QOS)
        self.start_ns: int | None = None
        self.sent = 0
        self.create_timer(float(period_s), self._on_timer)

    def destroy_node(self):
        self.get_logger().info(f"sent {self.sent} commands")
        return super().destroy_node()

    def _on_timer(self) -> None:
        now_ns = self.get_clock().now().nanoseconds
        if self.start_ns is None:
            self.start_ns = now_ns
        targets = targets_at((now_ns - self.start_ns) * 1e-9)
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = list(targets)
        msg.position = list(targets.values())
        self.pub.publish(msg)
        self.sent += 1


def main(args=None) -> int:
    return run_node(MotionNode, args)


if __name__ == "__main__":
    sys.exit(main())
