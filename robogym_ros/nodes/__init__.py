"""The ROS 2 programs: the sim node (sim_node/, with its standard simulation API and arm
controllers), the recorder (recorder_node, recorder_cli), the scripted motion and the expert;
with what they share to start, spin and stop (entry, signals, node_runner). rclpy lives here, in ros/
(the glue every ROS program shares) and in envs/ros/ (the env's ROS modes) only."""
