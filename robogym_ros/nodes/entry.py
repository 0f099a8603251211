"""Console-script entry points (setup.py). Light on purpose: until a node's module is imported
(rclpy, mujoco, OpenCV: about a second), a Ctrl-C or SIGTERM ends the process quietly instead of
printing a traceback from inside an import. From then on the node's own handling takes over
(robogym_ros.nodes.spin).
"""
from __future__ import annotations

import signal


def _quiet_until_imported(exit_code: int) -> None:
    def stop(_signum, _frame):
        raise SystemExit(exit_code)  # nothing was started yet: nothing to clean up

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def sim() -> int:
    _quiet_until_imported(0)  # a requested stop
    from robogym_ros.nodes.sim_node import main
    return main()


def motion() -> int:
    _quiet_until_imported(0)
    from robogym_ros.nodes.motion_node import main
    return main()


def recorder() -> int:
    _quiet_until_imported(2)  # no verdict: the recorder's "usage error or no data"
    from robogym_ros.nodes.recorder_node import main
    return main()
