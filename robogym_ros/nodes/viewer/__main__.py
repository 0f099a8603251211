"""python -m robogym_ros.nodes.viewer: the same as the robogym_viewer console script."""
import sys

from robogym_ros.nodes.viewer.node import main

sys.exit(main())
