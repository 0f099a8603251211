"""One subscription served on a thread of its own, past the node's executor.

A node's executor rebuilds its wait set of every entity it has each time it wakes (some forty
for the sim node); a topic that arrives every tick then costs the node more in that rebuild
than in its own callback (bench/bench_env.py, lockstep; bench/bench_throughput.py, commands at
real_time_factor 0). Here the subscription belongs to a hidden helper node that no executor
spins, and its thread waits on a wait set of that one subscription and takes what arrived.
"""
from __future__ import annotations

import threading

import rclpy
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

_WAKE_NS = 100_000_000  # how soon close() is seen


def _ignore(_msg) -> None:  # never called: no executor spins the helper node
    pass


class SubscriptionThread:
    """Calls ``handle(message)`` on its own thread for every message on ``topic`` (a topic
    relative to ``node``'s namespace, or ``~/``-private to it). ``raw``: the serialized bytes."""

    def __init__(self, node, suffix: str, msg_type, topic: str, qos, handle, *, raw: bool = False):
        self._handle, self._raw, self._msg_type = handle, raw, msg_type
        self._log = node.get_logger()
        # A leading underscore hides the helper node from `ros2 node list`; without the global
        # arguments a launch file's __node remap does not rename it to the node's name.
        self._node = rclpy.create_node(f"_{node.get_name()}_{suffix}", namespace=node.get_namespace(),
                                       context=node.context, use_global_arguments=False,
                                       start_parameter_services=False, enable_rosout=False)
        if topic.startswith("~/"):  # the node's private topic, not the helper's
            topic = f"{node.get_fully_qualified_name()}/{topic[2:]}"
        self._sub = self._node.create_subscription(msg_type, topic, _ignore, qos, raw=raw)
        self.topic = self._sub.topic_name
        self._context = node.context
        self._running = True
        self._taking = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=suffix, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, self._context.handle)
        sub = self._sub.handle
        while self._running:
            try:
                wait_set.clear_entities()
                wait_set.add_subscription(sub)
                wait_set.wait(_WAKE_NS)
                self.flush()
            except Exception as exc:  # noqa: BLE001 - a shut-down context ends the thread; else go on
                if not self._running or not self._context.ok():
                    return
                self._log.error(f"{self.topic}: {type(exc).__name__}: {exc}")

    def flush(self) -> None:
        """Handle every message that has arrived, on the caller's thread, before returning: what
        another thread calls to be sure that what came before it is handled first."""
        sub, msg_type, raw = self._sub.handle, self._msg_type, self._raw
        with self._taking:  # one message at a time, in the order they arrived
            while self._running and (taken := sub.take_message(msg_type, raw)) is not None:
                self._handle(taken[0])

    def close(self) -> None:
        self._running = False
        if self._thread.is_alive():
            self._thread.join(1.0)
        self._node.destroy_node()
