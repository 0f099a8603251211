"""The RViz config (config/robogym.rviz) under a namespace: its topics are written without
one, and the launch file remaps each when the sim runs in a namespace. Standard library only:
the launch files import this."""
from __future__ import annotations

import re

RVIZ_CONFIG = "robogym.rviz"  # in share/robogym_ros/config
_TOPIC_VALUE = re.compile(r"^\s*Value:\s*(/[A-Za-z0-9_/]+)\s*$", re.MULTILINE)


def config_topics(config_text: str) -> list[str]:
    """The absolute topic names the config's displays subscribe (``Value: /...`` lines)."""
    return sorted(set(_TOPIC_VALUE.findall(config_text)))


def camera_info_topic(image_topic: str) -> str | None:
    """A camera display's sibling camera_info topic, which RViz derives from the image topic."""
    return image_topic.rsplit("/", 1)[0] + "/camera_info" if image_topic.endswith("/image_raw") else None


def namespace_remappings(config_text: str, namespace: str) -> list[tuple[str, str]]:
    """(from, to) remappings that move every topic of the config under ``namespace``.

    /tf and /tf_static stay global (tf2's convention), so they are never in the config.
    """
    ns = namespace.strip("/")
    if not ns:
        return []
    topics = config_topics(config_text)
    topics += [info for t in topics if (info := camera_info_topic(t))]
    return [(t, f"/{ns}{t}") for t in sorted(set(topics))]
