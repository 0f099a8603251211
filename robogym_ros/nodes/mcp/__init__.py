"""``robogym_mcp``: an MCP server through which LLM agents drive a running sim.

A ROS client of the sim (robogym_ros.ros.sim_client) behind MCP tools (tools: what each does;
server: the MCP side; main: the command line, stdio or streamable HTTP). docs/agents.md.
"""
