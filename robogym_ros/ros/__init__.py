"""The runtime every ROS program of the package shares, the nodes and the env's ROS modes alike:
QoS profiles made from the contract (qos), message stamps (stamps), how a program starts (entry,
signals), spins and stops (node_runner), its command line (arguments), and the one client of a
running sim by its public topics and services (sim_client).
"""
