"""python -m robogym_ros.nodes.mcp: the same as the robogym_mcp console script."""
import sys

from robogym_ros.nodes.mcp.main import main

sys.exit(main())
