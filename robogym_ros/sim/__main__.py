"""The physics process: ``python -m robogym_ros.sim FD_CMD FD_TICK`` (started by SimProcess).

An entry module of its own, so that the loop's types are pickled under their real module
name (robogym_ros.sim.loop), never as ``__main__``.
"""
import os
import sys

os.environ["MUJOCO_GL"] = "disable"  # before mujoco is imported: no GL library in this process

from robogym_ros.sim.loop import child_main  # noqa: E402

child_main(int(sys.argv[1]), int(sys.argv[2]))
