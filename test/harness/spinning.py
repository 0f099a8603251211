"""Nodes spun on a thread of their own, taken down in the one order rclpy survives.

``Executor.spin()`` on a thread cannot be stopped from outside before its wait returns: a node
destroyed while that wait still holds the node's handles crashes the interpreter (a segfault in
``destroy_node``), and ``Executor.shutdown()`` does not wait for it. So the thread spins in
short ``spin_once`` steps until told to stop, and ``close`` joins it before anything is torn down.

Nor can an entity be added to a node while that thread spins it: rclpy's ``ActionClient`` joins
its node's waitables before it is whole, and an executor that counts it then raises in the spin
thread (ros2/rclpy#1589), which ends, and every later wait of the test times out. So entities
that need it are made ``paused()``, and a spin thread that raised is named by ``check()``.
"""

from __future__ import annotations

import contextlib
import threading
import time
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
        self._pause = threading.Event()
        self._turn = threading.Lock()  # held by the spin thread for each spin_once, and by paused()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._spin, name="test_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            while not self._stop.is_set():
                if self._pause.is_set():  # let paused() have the turn it asked for
                    time.sleep(0.001)
                    continue
                with self._turn:
                    self.executor.spin_once(timeout_sec=STEP_S)
        except BaseException as exc:
            self.error = exc
            raise

    @contextlib.contextmanager
    def paused(self):
        """The nodes are not spun inside this block (it waits for the spin step under way)."""
        self._pause.set()
        try:
            with self._turn:
                yield
        finally:
            self._pause.clear()

    def check(self) -> None:
        """RuntimeError if the spin thread ended by an exception: nothing it spun is heard since."""
        if self.error is not None:
            raise RuntimeError(f"the spin thread ended by {self.error!r}: its nodes are not spun") from self.error

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
