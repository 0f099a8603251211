"""``robogym_motion``, and ``python -m robogym_ros.nodes.motion``: the same program."""
import sys

from robogym_ros.ros.entry import run_program


def main() -> int:
    return run_program("robogym_ros.nodes.motion.node")


if __name__ == "__main__":
    sys.exit(main())
