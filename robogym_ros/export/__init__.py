"""Recordings as LeRobot datasets: from a bag (robogym_ros.export.bag) or local-mode rollouts
(robogym_ros.export.rollouts), written through LeRobot's own API (robogym_ros.export.dataset).

Command line: ``python -m robogym_ros.export.lerobot --help``. Needs the optional ``lerobot``
extra; nothing in the sim or the recorder imports this package.
"""
