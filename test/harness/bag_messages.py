"""Every message of a bag through an independent reader (mcap_ros2), for checks that a bag holds what
was written."""
from __future__ import annotations

from mcap_ros2.reader import read_ros2_messages


def ros2_messages(folder) -> int:
    (mcap,) = folder.glob("*.mcap")
    return sum(1 for _ in read_ros2_messages(str(mcap)))
