"""``main()`` for a node: init, spin, and a clean stop on Ctrl-C or SIGTERM.

rclpy's own signal handler shuts the context down the moment the signal arrives, while our
threads may still be publishing (publish errors, a lost final log line). Here the signal
only raises KeyboardInterrupt in the main thread; the node is then destroyed with its
context still valid, and the context is shut down last.
"""
from __future__ import annotations

import signal

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.signals import SignalHandlerOptions


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run_node(make_node, args=None, *, errors: tuple = ()) -> int:
    """Spin the node ``make_node()`` returns until Ctrl-C/SIGTERM. Exceptions in ``errors``
    (bad parameters, a bad model) are logged as one fatal line and exit 1, no traceback."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    node = None
    try:
        node = make_node()
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.2)  # returns often, so a signal is seen at once
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except errors as exc:
        rclpy.logging.get_logger("robogym_ros").fatal(f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
