"""One sim per namespace: a sim that finds another sim's spec latched on its ``~/spec`` refuses
to start. Two sims in one namespace publish every stream twice, interleaved; a recording of that
fails, blaming drops and restarts instead of the second sim.

The spec is latched (transient local) while its sim lives, so what arrives here is a live sim's.
The subscription is made first thing and read once the node is built: discovery runs while the
physics process and the cameras start, so a lone sim waits little or nothing for it.
"""
from __future__ import annotations

import time

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.ros.qos import SPEC_QOS

DISCOVERY_S = 1.5  # from the subscription: how long another sim's latched spec is waited for
POLL_S = 0.05


class SecondInstanceCheck:
    """Listens on ``~/spec`` from construction; :meth:`refuse_if_found` ends the listening."""

    def __init__(self, node, discovery_s: float = DISCOVERY_S):
        self._namespace, self._deadline = node.get_namespace(), time.monotonic() + discovery_s
        self._found: list[str] = []
        # A node of its own: spinning the sim node before it is built would run its callbacks.
        # Not the process's global arguments (a launch's -r __node:= would rename it too).
        self._node = Node(f"{node.get_name()}_instance_check", namespace=node.get_namespace(),
                          context=node.context, use_global_arguments=False, start_parameter_services=False)
        self._node.create_subscription(String, node.resolve_topic_name("~/spec"),
                                       lambda m: self._found.append(m.data), SPEC_QOS)

    def refuse_if_found(self) -> None:
        """RuntimeError naming the other sim (its node and instance) when its spec arrived within
        the discovery time; the listening node is gone either way (this sim's own spec comes next)."""
        executor = SingleThreadedExecutor(context=self._node.context)
        executor.add_node(self._node)
        try:
            while not self._found and time.monotonic() < self._deadline:
                executor.spin_once(timeout_sec=POLL_S)
        finally:
            executor.shutdown(timeout_sec=0)
            self._node.destroy_node()
        if not self._found:
            return
        try:
            other = contract.Spec.from_json(self._found[0])
            who = f"{other.node} (instance {other.instance or 'unknown'})"
        except (ValueError, KeyError, TypeError):
            who = "a publisher of an unreadable spec"
        raise RuntimeError(
            f"another sim already runs in namespace {self._namespace!r}: {who}; two sims "
            f"there would publish every stream twice. Stop it, start this one in another namespace "
            f"(-r __ns:=/other), or pass -p allow_second_instance:=true")
