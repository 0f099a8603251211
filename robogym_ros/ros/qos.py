"""rclpy QoS profiles made from the contract's QoS descriptions (robogym_ros.contract).

A RELIABLE publisher also serves BEST_EFFORT subscribers (sensor-data QoS, /clock).
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robogym_ros import contract
from robogym_ros.contract import QosSpec


def profile(q: QosSpec) -> QoSProfile:
    return QoSProfile(depth=q.depth, reliability=ReliabilityPolicy[q.reliability.upper()],
                      durability=DurabilityPolicy[q.durability.upper()],
                      history=HistoryPolicy[q.history.upper()])


STREAM_QOS = profile(contract.STREAM_QOS)
COMMAND_QOS = profile(contract.COMMAND_QOS)
CLOCK_QOS = profile(contract.CLOCK_QOS)
IMAGE_QOS = profile(contract.IMAGE_QOS)
DIAGNOSTICS_QOS = profile(contract.DIAGNOSTICS_QOS)
SPEC_QOS = profile(contract.SPEC_QOS)
STATE_QOS = profile(contract.STATE_QOS)
