"""Live views of a running sim, without ROS: what an agent observes (a tick's joints and the
frames of that same tick), the newest frame encoded once for every viewer, the viewer's web
page and HTTP server, and the bearer-token guard of anything served beyond localhost.

The ROS side (subscriptions, services) is in robogym_ros/ros/sim_client.py, the programs in
robogym_ros/nodes/mcp/ (robogym_mcp) and robogym_ros/nodes/viewer/ (robogym_viewer).
"""
