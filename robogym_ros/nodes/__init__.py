"""The programs, a folder each: the sim node (sim_node/, with its standard simulation API and arm
controllers), the recorder (recorder/), the scripted motion (motion/), the expert (expert/), the
MCP server for agents (mcp/) and the browser view (viewer/). Each runs as its console script and
as ``python -m robogym_ros.nodes.<program>``; what they share to start, spin and stop, and the
one client of a running sim, is robogym_ros.ros."""
