"""Nodes spun on a thread of their own, taken down in the one order rclpy survives.

``Executor.spin()`` on a thread cannot be stopped from outside before its wait returns: a node
destroyed while that wait still holds the node's handles crashes the interpreter (a segfault in
``destroy_node``), and ``Executor.shutdown()`` does not wait for it. So the thread spins in
short ``spin_once`` steps until told to stop, and ``close`` joins it before anything is torn down.
"""

from __future__ import annotations

import threading
import warnings

from rclpy.executors import Executor, SingleThreadedExecutor

STEP_S = 0.05  # how long one spin waits: the most close() waits for the thread to notice
JOIN_S = 10.0  # a callback still running past this leaves its nodes alive rather than crash


class Spinning:
    """``Spinning(node, ...)`` spins the nodes at once; ``close()`` stops, then destroys them."""

    def __init__(self, *nodes, executor: Executor | None = None, destroy: bool = True):
        self.nodes = list(nodes)
        self.executor = executor if executor is not None else SingleThreadedExecutor()
        self._destroy = destroy
        for node in self.nodes:
            self.executor.add_node(node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="test_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=STEP_S)

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(JOIN_S)
        if self._thread.is_alive():
            warnings.warn(f"a spin thread still in a callback after {JOIN_S:g} s: its nodes are left alive",
                          stacklevel=2)
            return
        self.executor.shutdown(timeout_sec=1.0)
        if self._destroy:
            for node in self.nodes:
                node.destroy_node()

    def __enter__(self) -> Spinning:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
