"""``robogym_recorder``, and ``python -m robogym_ros.nodes.recorder``: the same program."""
import sys

from robogym_ros.ros.entry import run_program


def main() -> int:
    # stopped before it started: no verdict, the recorder's "usage error or no data"
    return run_program("robogym_ros.nodes.recorder.cli", stopped_before_start=2)


if __name__ == "__main__":
    sys.exit(main())
