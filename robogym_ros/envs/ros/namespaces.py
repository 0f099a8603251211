"""ROS namespaces as the env takes them (no rclpy here: the fleet and local code use it too)."""
from __future__ import annotations

import re

_NAMESPACE = re.compile(r"(/[A-Za-z_][A-Za-z0-9_]*)+")


def normalize_namespace(namespace: str) -> str:
    """'' (the root), or '/name' for 'name' and '/name'; ValueError for anything ROS refuses."""
    if not isinstance(namespace, str):
        raise ValueError(f"namespace must be a string, got {namespace!r}")
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    if ns and not _NAMESPACE.fullmatch(ns):
        raise ValueError(f"namespace {namespace!r} is not a valid ROS namespace "
                         "(letters, digits and _ per part, not starting with a digit)")
    return ns
