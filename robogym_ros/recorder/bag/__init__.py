"""rosbag2 I/O with ``rosbags`` (pure Python: no ROS install needed to write or check a bag):
the message formats and typestore, the writer, the reader and its series, the streams the
exporter reads, and the recovery and repair of a bag cut short.
"""
