"""One way every node starts, spins and stops: ``run_node``.

rclpy's own signal handler shuts the context down the moment a signal arrives, while our
threads may still be publishing. Here signals are ours, in three phases:

- while the node is being built, SIGINT/SIGTERM raise KeyboardInterrupt, so a slow start
  (the physics child, a GL context) is abandoned at once; whatever was built is torn down;
- while it spins, a signal only sets a flag, seen within ``POLL_S``: no exception is ever
  raised inside an rclpy call;
- while it stops, further signals are counted and ignored, so a second Ctrl-C cannot break
  a teardown half-way (a bag half-written, a child left running). Teardown is bounded.

A node may end the run itself (the physics process died, a recording is complete) with
:meth:`StoppableNode.request_stop`, giving the exit code.
"""
from __future__ import annotations

import signal
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

POLL_S = 0.1  # how soon a signal or a stop request is seen while spinning
EXIT_STOP_REQUESTED = 0


class StoppableNode(Node):
    """A node that can end its own run with an exit code, and finish before it is destroyed."""

    exit_code: int | None = None
    stop_reason: str = ""

    def request_stop(self, exit_code: int, reason: str = "") -> None:
        """End the run (from any thread): run_node stops spinning and exits with ``exit_code``."""
        if self.exit_code is None:
            self.stop_reason, self.exit_code = reason, exit_code

    def finish(self, signal_name: str | None) -> int:
        """Called once spinning has ended, before destroy_node; returns the exit code."""
        return self.exit_code if self.exit_code is not None else EXIT_STOP_REQUESTED


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
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = make_node()
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
            rclpy.logging.get_logger("robogym_ros").fatal(f"{type(exc).__name__}: {one_line}")
            code = 1
    finally:
        signals.raising = False
        try:
            if node is not None:
                code = node.finish(signals.first)
                node.destroy_node()
        finally:
            rclpy.try_shutdown()
            # A late second signal must not turn a finished run into exit -2 at interpreter exit.
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
    return code
