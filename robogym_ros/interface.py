"""Names, QoS and the spec: the sim's ROS interface in one place, shared by every node.

Topic names are relative (they follow the node's namespace) except /clock and
/diagnostics, whose absolute names are the ROS conventions that use_sim_time and the
diagnostic aggregator rely on.
"""
from __future__ import annotations

import json

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

SIM_NODE = "robogym_sim"
JOINT_STATES = "joint_states"
JOINT_COMMANDS = "joint_commands"
TRUTH_JOINTS = "ground_truth/joint_states"
TRUTH_OBJECTS = "ground_truth/object_poses"
CLOCK = "/clock"
DIAGNOSTICS = "/diagnostics"
SPEC = "~/spec"
SPEC_FORMAT = "robogym_ros/spec/1"

# RELIABLE everywhere the recorder must lose nothing. The writer's history is what a slow
# reader can still recover: 1000 samples cover a 10 s stall at 100 Hz, 1 s at 1 kHz.
# A RELIABLE publisher also serves BEST_EFFORT subscribers (sensor-data QoS, /clock).
STREAM_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
CLOCK_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
IMAGE_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
# Latched: a recorder or agent that starts later still gets the spec at once.
SPEC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def qos_dict(qos: QoSProfile) -> dict:
    return {
        "reliability": qos.reliability.name.lower(),
        "durability": qos.durability.name.lower(),
        "history": qos.history.name.lower(),
        "depth": qos.depth,
    }


def topic_entry(name: str, msg_type: str, period_s: float | None, qos: QoSProfile) -> dict:
    return {"name": name, "type": msg_type, "period_s": period_s, "qos": qos_dict(qos)}


def spec_to_json(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True)


def spec_from_json(text: str) -> dict:
    spec = json.loads(text)
    if spec.get("format") != SPEC_FORMAT:
        raise ValueError(f"spec format is {spec.get('format')!r}, expected {SPEC_FORMAT!r}")
    return spec
