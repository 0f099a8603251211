"""``robogym_sim``, and ``python -m robogym_ros.nodes.sim_node``: the same program."""
import sys

from robogym_ros.ros.entry import run_program


def main() -> int:
    return run_program("robogym_ros.nodes.sim_node.node")


if __name__ == "__main__":
    sys.exit(main())
