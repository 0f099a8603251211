"""``python -m robogym_ros.nodes.sim_node``: the sim node, as the console script ``robogym_sim``."""
import sys

from robogym_ros.nodes.entry import sim

sys.exit(sim())
