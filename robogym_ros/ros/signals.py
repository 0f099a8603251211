"""A Ctrl-C or SIGTERM while a node's module is still being imported (rclpy, mujoco, OpenCV:
about a second) is only noted, and the process then ends quietly instead of printing a
traceback from inside an import. (An exception raised in a signal handler during a C
extension's initialisation becomes an ImportError.) From then on the node's own handling
takes over (robogym_ros.ros.node_runner).
"""
from __future__ import annotations

import signal

_received: list[int] = []


def received() -> bool:
    """Whether a SIGINT or SIGTERM came while the node's module was imported."""
    return bool(_received)


def note_signals() -> None:
    def note(signum, _frame):
        _received.append(signum)

    signal.signal(signal.SIGINT, note)
    signal.signal(signal.SIGTERM, note)
