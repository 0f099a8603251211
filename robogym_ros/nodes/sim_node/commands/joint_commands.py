"""``joint_commands`` (sensor_msgs/JointState, positions only): servo targets from the next tick on.

Served on its own thread (robogym_ros.ros.subscription_thread), past the sim node's executor:
a client that commands every tick at real_time_factor 0 (robogym_motion) woke the executor
every tick, and its rebuild of the wait set cost more than the command itself
(bench/bench_throughput.py). Taken serialized and decoded by robogym_ros.wire.decode (proven
equal to rclpy's deserialisation): no Python message is built for a command.

A command names joints and their targets; one that is not understood (bad lengths, unknown
joint, out of range, velocities or efforts) is rejected whole, counted, and changes nothing.
It preempts a FollowJointTrajectory goal moving any of its joints, and its stamp schedules
nothing: one far from sim time is applied and warned about (nodes/sim_node/commands/clock_check.py).
"""
from __future__ import annotations

from sensor_msgs.msg import JointState

from robogym_ros.contract import JOINT_COMMANDS
from robogym_ros.nodes.sim_node.diagnostics import CommandCounts
from robogym_ros.ros.qos import COMMAND_QOS
from robogym_ros.ros.subscription_thread import SubscriptionThread
from robogym_ros.sim.commands import CommandRejected, validate_command
from robogym_ros.wire.cdr import CdrError
from robogym_ros.wire.decode import decode_joint_state


class JointCommands:
    """Validates each command and hands its targets to the controllers (which pass them on to physics)."""

    def __init__(self, node, controllers, ranges: dict[str, tuple[float, float]], counts: CommandCounts, clock):
        self._controllers, self._ranges, self._counts, self._clock = controllers, dict(ranges), counts, clock
        self._log = node.get_logger()
        self._thread = SubscriptionThread(node, "joint_commands", JointState, JOINT_COMMANDS, COMMAND_QOS,
                                          self.on_command, raw=True)

    def on_command(self, data: bytes) -> None:
        try:
            msg = decode_joint_state(data)
            targets = validate_command(msg.name, msg.position, msg.velocity, msg.effort, self._ranges)
        except (CommandRejected, CdrError) as exc:
            self._counts.reject(str(exc))
            self._log.warning(f"command rejected: {exc}")
            return
        self._controllers.set_targets(targets)  # preempts a goal for these joints, then to physics
        self._counts.accept()
        self._clock.warn_command(msg.stamp_ns)

    def flush(self) -> None:
        """Apply the commands that have arrived, now (before a change of run state: a command
        sent before a step, a reset or a resume applies before it, as one the executor took would)."""
        self._thread.flush()

    def close(self) -> None:
        self._thread.close()
