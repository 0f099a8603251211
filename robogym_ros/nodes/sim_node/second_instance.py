"""One sim per namespace: a sim that finds another sim's spec latched on its ``~/spec`` refuses
to start; one whose start-up wait ended before discovery found the other exits as soon as the
elder's spec arrives. Two sims in one namespace publish every stream twice, interleaved; a recording of that
fails, blaming drops and restarts instead of the second sim.

The spec is latched (transient local) while its sim lives, so what arrives here is a live sim's.
The subscription is made first thing and read once the node is built: discovery runs while the
physics process and the cameras start, so a lone sim waits only what is left of DISCOVERY_S.
"""
from __future__ import annotations

import time

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.ros.qos import SPEC_QOS

DISCOVERY_S = 2.0  # from the subscription: how long another sim's ~/spec publisher is waited for
SPEC_WAIT_S = 3.0  # once its publisher is seen: how much longer its spec (naming it) is waited for
POLL_S = 0.05


class SecondInstanceCheck:
    """Listens on ``~/spec`` from construction; :meth:`refuse_if_found` ends the listening.
    Another sim is found by its spec; its publisher seen on the graph lengthens the wait for it."""

    def __init__(self, node, discovery_s: float = DISCOVERY_S):
        self._namespace, self._deadline = node.get_namespace(), time.monotonic() + discovery_s
        self._logger = node.get_logger()
        self._found: list[str] = []
        # A node of its own: spinning the sim node before it is built would run its callbacks.
        # Not the process's global arguments (a launch's -r __node:= would rename it too).
        self._node = Node(f"{node.get_name()}_instance_check", namespace=node.get_namespace(),
                          context=node.context, use_global_arguments=False, start_parameter_services=False)
        self._topic = node.resolve_topic_name("~/spec")
        self._node.create_subscription(String, self._topic, lambda m: self._found.append(m.data), SPEC_QOS)

    @staticmethod
    def _names(publishers) -> str:
        return ", ".join(f"{p.node_namespace.rstrip('/')}/{p.node_name}" for p in publishers)

    def refuse_if_found(self) -> None:
        """RuntimeError naming the other sim (its node and instance, from its spec) when the spec
        arrived in time; the listening node is gone either way (this sim's own spec comes next)."""
        executor = SingleThreadedExecutor(context=self._node.context)
        executor.add_node(self._node)
        publishers = []
        try:
            deadline = self._deadline
            # At least one pass: on busy cores the build may outlast the deadline, while DDS
            # discovered the other sim and holds its spec, waiting for a spin.
            while True:
                executor.spin_once(timeout_sec=POLL_S)
                if not publishers:
                    publishers = self._node.get_publishers_info_by_topic(self._topic)
                    if publishers:  # another sim is there: its spec names it
                        deadline = max(deadline, time.monotonic() + SPEC_WAIT_S)
                if self._found or time.monotonic() >= deadline:
                    break
        finally:
            executor.shutdown(timeout_sec=0)
            self._node.destroy_node()
        if self._found:
            raise RuntimeError(refusal(self._namespace, self._found[0]))
        else:  # a publisher on the graph whose spec never came: a sim killed, not yet timed out
            if publishers:
                self._logger.warning(
                    f"a ~/spec publisher is on the graph ({self._names(publishers)}) but sent no spec in "
                    f"{SPEC_WAIT_S:g} s: taken for a sim that was killed; starting")
            return


def started_ns(instance: str) -> int | None:
    """When the sim of ``instance`` (``<pid>-<time_ns>``, nodes/sim_node/node.py) started."""
    try:
        return int(instance.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def refusal(namespace: str, spec_json: str) -> str:
    """The FATAL line of a sim that found ``spec_json``, another sim's, in its namespace."""
    try:
        other = contract.Spec.from_json(spec_json)
        who = f"{other.node} (instance {other.instance or 'unknown'})"
    except (ValueError, KeyError, TypeError):
        who = "a publisher of an unreadable spec"
    return (f"another sim already runs in namespace {namespace!r}: {who}; two sims there would "
            f"publish every stream twice. Stop it, start this one in another namespace "
            f"(-r __ns:=/other), or pass -p allow_second_instance:=true")


def is_elder(spec_json: str, instance: str) -> bool:
    """Whether ``spec_json`` is another sim's that started before ``instance``: of two sims that
    found each other late (discovery slower than the start-up wait), the younger one gives way."""
    try:
        other = contract.Spec.from_json(spec_json).instance
    except (ValueError, KeyError, TypeError):
        return False
    if other == instance:
        return False
    mine, theirs = started_ns(instance), started_ns(other)
    return mine is None or theirs is None or (theirs, other) < (mine, instance)
