"""Console-script entry points (setup.py). Light on purpose: while a node's module is imported
(rclpy, mujoco, OpenCV: about a second), a Ctrl-C or SIGTERM is only noted, and the process
then ends quietly instead of printing a traceback from inside an import. (An exception raised
in a signal handler during a C extension's initialisation becomes an ImportError.) From then
on the node's own handling takes over (robogym_ros.nodes.spin).
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


def sim() -> int:
    note_signals()
    from robogym_ros.nodes.sim_node import main
    return 0 if _received else main()  # stopped before it started: a requested stop


def motion() -> int:
    note_signals()
    from robogym_ros.nodes.motion_node import main
    return 0 if _received else main()


def expert() -> int:
    note_signals()
    from robogym_ros.nodes.expert_node import main
    return 0 if _received else main()


def recorder() -> int:
    note_signals()
    from robogym_ros.nodes.recorder_cli import main
    return 2 if _received else main()  # no verdict: the recorder's "usage error or no data"
