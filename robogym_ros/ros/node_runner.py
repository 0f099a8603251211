"""One way every node starts, spins and stops: ``run_node``.

rclpy's own signal handler shuts the context down the moment a signal arrives, while our
threads may still be publishing. Here signals are ours, in three phases:

- while the node is being built, SIGINT/SIGTERM raise KeyboardInterrupt, so a slow start
  (the physics child, a GL context) is abandoned at once; whatever was built is torn down;
- while it spins, a signal only sets a flag, seen within ``POLL_S``: no exception is ever
  raised inside an rclpy call;
- while it stops, further signals are counted and ignored, so a second Ctrl-C cannot break
  a teardown half-way (a bag half-written, a child left running). Teardown is bounded: once the
  node has finished its own work (``finish``: a verdict, a bag), releasing the rclpy handles
  and the context gets ``RELEASE_S``; a release that hangs in rclpy (seen once on Jazzy's
  EventsExecutor: the motion node logged its last line and never exited) ends the process with
  its exit code and one line saying so, never a node that ignores Ctrl-C.

A node may end the run itself (the physics process died, a recording is complete) with
:meth:`StoppableNode.request_stop`, giving the exit code.

A node whose build fails (a bad parameter, a bad model, a signal) logs its one FATAL line under
its own logger and is abandoned (:meth:`StoppableNode.abandon`) before the context shuts down:
a thread of it still inside an rclpy wait when the interpreter finalises would abort the
process (``terminate called without an active exception``, exit 134 on Jazzy).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

POLL_S = 0.1  # how soon a signal or a stop request is seen while spinning
RELEASE_S = 10.0  # the longest the release of rclpy's handles may take at the end of a run
EXIT_STOP_REQUESTED = 0


class StoppableNode(Node):
    """A node that can end its own run with an exit code, and finish before it is destroyed."""

    exit_code: int | None = None
    stop_reason: str = ""

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        _building.append(self)  # run_node's: if the rest of the build fails, it abandons this one

    def abandon(self) -> None:
        """Tear down a node whose build failed (no run, no exit figures). The base class only
        releases the rcl node; a node that starts threads or processes while it is built stops them."""
        Node.destroy_node(self)

    def request_stop(self, exit_code: int, reason: str = "") -> None:
        """End the run (from any thread): run_node stops spinning and exits with ``exit_code``."""
        if self.exit_code is None:
            self.stop_reason, self.exit_code = reason, exit_code

    def finish(self, signal_name: str | None) -> int:
        """Called once spinning has ended, before destroy_node; returns the exit code."""
        return self.exit_code if self.exit_code is not None else EXIT_STOP_REQUESTED


_building: list[StoppableNode] = []  # the node run_node is building, once its rcl node exists


class _Signals:
    def __init__(self):
        self.received: list[str] = []
        self.raising = True
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum, _frame) -> None:
        self.received.append(signal.Signals(signum).name)
        if self.raising:
            self.raising = False  # one interrupt only: a second one must not hit the cleanup
            raise KeyboardInterrupt(signal.Signals(signum).name)

    @property
    def first(self) -> str | None:
        return self.received[0] if self.received else None


def events_executor():
    """rclpy's EventsExecutor where it exists: ~3x less CPU per message than the
    SingleThreadedExecutor (measured here). Its timers do not follow sim time (/clock): a node
    on sim time that uses it reads /clock itself (see motion_node)."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    except ImportError:  # pragma: no cover - ROS distros before Jazzy
        return SingleThreadedExecutor()


def _release_within(limit_s: float, code: int, node: StoppableNode | None) -> None:
    """destroy_node and the context's shutdown, bounded by ``limit_s``: past it, one line and the
    process exits with ``code`` (the run's work is done by then: only handles are left)."""
    name = "robogym_ros" if node is None else node.get_name()

    def stuck() -> None:
        print(f"[{name}] releasing rclpy's handles took over {limit_s:g} s: exiting without them (exit {code})",
              file=sys.stderr, flush=True)
        os._exit(code)

    watchdog = threading.Timer(limit_s, stuck)
    watchdog.daemon = True
    watchdog.start()
    try:
        if node is not None:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
        watchdog.cancel()


def run_node(make_node: Callable[[], StoppableNode], args=None, *, errors: tuple = (),
             executor_factory: Callable = SingleThreadedExecutor,
             stopped_before_start: int = EXIT_STOP_REQUESTED) -> int:
    """Build, spin and stop a node; returns the process exit code.

    Exceptions in ``errors`` (bad parameters, a bad model, ...) while building are logged as
    one FATAL line and exit 1, with no traceback. A stop asked for by a signal exits 0, or
    ``stopped_before_start`` when it came before the node existed (the recorder: no verdict).
    """
    signals = _Signals()
    node = None
    code = stopped_before_start
    _building.clear()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = make_node()
        _building.clear()
        signals.raising = False
        executor = executor_factory()
        executor.add_node(node)
        try:
            while not signals.received and node.exit_code is None and rclpy.ok():
                executor.spin_once(timeout_sec=POLL_S)
        finally:
            executor.remove_node(node)
            executor.shutdown(timeout_sec=0)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except errors as exc:
        if not signals.received:  # an error caused by the interrupt is the interrupt
            one_line = " ".join(str(exc).split())  # a FATAL line, even for a multi-line message
            # The node's own logger where its rcl node exists (`[lab1.robogym_sim]`, as every
            # other line of it), else the package's.
            logger = _building[-1].get_logger() if _building else rclpy.logging.get_logger("robogym_ros")
            logger.fatal(f"{type(exc).__name__}: {one_line}")
            code = 1
    finally:
        signals.raising = False
        try:
            while _building:  # a build that failed, by an error or a signal
                _building.pop().abandon()
            if node is not None:
                code = node.finish(signals.first)
        finally:
            _release_within(RELEASE_S, code, node)
            # A late second signal must not turn a finished run into exit -2 at interpreter exit.
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
    return code
