"""ROS 2 node ``robogym_motion``: drives both arms along the scripted trajectory.

It runs on sim time: it reads /clock and commands every ``command_period_s`` of sim time, so
the trajectory is a function of sim seconds whatever the real-time factor, and it stops when
the sim pauses (no /clock, no commands). See robogym_ros.nodes.motion.scripted_motion for the path.

/clock is taken raw and its 12 bytes decoded here, on the EventsExecutor, instead of through
``use_sim_time`` (a typed /clock subscription feeding a ROS-time timer on the
SingleThreadedExecutor): at real_time_factor 0 this node sees a /clock message every tick,
and that path cost ~3x the CPU per tick (bench/bench_throughput.py). The EventsExecutor's
timers do not follow sim time, hence no timer.
"""
from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robogym_ros import contract
from robogym_ros.nodes.motion.scripted_motion import targets_at
from robogym_ros.ros.node_runner import StoppableNode, events_executor, run_node
from robogym_ros.ros.qos import CLOCK_QOS, COMMAND_QOS
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.wire.cdr import CdrError
from robogym_ros.wire.decode import decode_time


class CommandClock:
    """When to command, on sim time: at the first /clock stamp, then at every multiple of the
    period after it. A stamp that goes back (the sim restarted) starts the trajectory over."""

    def __init__(self, period_ns: int):
        if period_ns <= 0:
            raise ValueError(f"command_period_s must be > 0, got {period_ns * 1e-9:g} s")
        self.period_ns = period_ns
        self.start_ns: int | None = None
        self._next_ns = 0

    def due(self, now_ns: int) -> bool:
        if self.start_ns is None or now_ns < self.start_ns:
            self.start_ns, self._next_ns = now_ns, now_ns
        if now_ns < self._next_ns:
            return False
        elapsed = now_ns - self.start_ns
        self._next_ns = self.start_ns + (elapsed // self.period_ns + 1) * self.period_ns
        return True


class MotionNode(StoppableNode):
    """Publishes the scripted trajectory's targets on joint_commands, on sim time."""

    def __init__(self, **kwargs):
        super().__init__("robogym_motion", **kwargs)
        period_s = self.declare_parameter(
            "command_period_s", 0.01,
            ParameterDescriptor(description="period of joint_commands [s, sim time]")).value
        self.clock = CommandClock(round(float(period_s) * contract.NS_PER_S))
        self.pub = self.create_publisher(JointState, contract.JOINT_COMMANDS, COMMAND_QOS)
        self.sent = 0
        self.bad_clock = 0
        self.create_subscription(Clock, contract.CLOCK, self._on_clock, CLOCK_QOS, raw=True)

    def destroy_node(self):
        self.get_logger().info(f"sent {self.sent} commands")
        return super().destroy_node()

    def _on_clock(self, data: bytes) -> None:
        try:
            now_ns = decode_time(data)
        except CdrError as exc:
            self.bad_clock += 1
            if self.bad_clock == 1:
                self.get_logger().error(f"/clock message not understood, ignored: {exc}")
            return
        if not self.clock.due(now_ns):
            return
        targets = targets_at((now_ns - self.clock.start_ns) * 1e-9)
        msg = JointState()
        msg.header.stamp = stamp_msg(now_ns)
        msg.name = list(targets)
        msg.position = list(targets.values())
        self.pub.publish(msg)
        self.sent += 1


def main(args=None) -> int:
    return run_node(MotionNode, args, errors=(ValueError,), executor_factory=events_executor)

