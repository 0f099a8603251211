"""The wire format: CDR of the messages the sim publishes and the recorder and the env read
(contract + numpy; no rclpy, no rosbags), shared by the sim node, the recorder and the envs alike.
"""
