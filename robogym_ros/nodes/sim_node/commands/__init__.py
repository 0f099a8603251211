"""The sim node's command inputs: ``joint_commands`` (servo targets), ``joint_trajectory`` (timed
points), and the one check of their stamps against sim time."""
