"""Console-script entry points (setup.py). Light on purpose: signals are only noted while a
node's module is imported (robogym_ros.nodes.signals); a stop that came before the node
started is a requested stop.
"""
from __future__ import annotations

from robogym_ros.nodes.signals import note_signals, received


def sim() -> int:
    note_signals()
    from robogym_ros.nodes.sim_node.node import main
    return 0 if received() else main()  # stopped before it started: a requested stop


def motion() -> int:
    note_signals()
    from robogym_ros.nodes.motion_node import main
    return 0 if received() else main()


def expert() -> int:
    note_signals()
    from robogym_ros.nodes.expert_node import main
    return 0 if received() else main()


def recorder() -> int:
    note_signals()
    from robogym_ros.nodes.recorder_cli import main
    return 2 if received() else main()  # no verdict: the recorder's "usage error or no data"


def mcp() -> int:
    note_signals()
    from robogym_ros.nodes.mcp.main import main
    return 0 if received() else main()


def viewer() -> int:
    note_signals()
    from robogym_ros.nodes.viewer.node import main
    return 0 if received() else main()
