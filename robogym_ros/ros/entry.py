"""How every program starts: signals are only noted while its module is imported
(robogym_ros.ros.signals: rclpy, mujoco, OpenCV take about a second), then its ``main`` runs.
A stop that came before the program started is a requested stop, with the program's own code
for it. Each program's ``__main__`` (its console script and ``python -m``) calls :func:`run_program`.
"""
from __future__ import annotations

import importlib

from robogym_ros.ros.signals import note_signals, received


def run_program(module: str, *, stopped_before_start: int = 0) -> int:
    """Import ``module`` with signals noted, then return its ``main()``; or
    ``stopped_before_start`` where a SIGINT or SIGTERM came while it was imported."""
    note_signals()
    main = importlib.import_module(module).main
    return stopped_before_start if received() else main()
