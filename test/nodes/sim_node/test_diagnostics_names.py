"""/diagnostics is global: two sims in two namespaces must publish statuses an aggregator can
tell apart, so each status name carries its namespace. Real rclpy nodes over real DDS, the
node's real SimDiagnostics; the physics process is stood in for by its status (a dataclass)."""
from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray
from simharness import new_namespace, wait_for
from spinning import Spinning

from robogym_ros import contract
from robogym_ros.nodes.sim_node.diagnostics import CommandCounts, SimDiagnostics
from robogym_ros.sim.loop import Status


class StatusOnly:
    """What SimDiagnostics asks the physics process for."""

    def status(self) -> Status:
        return Status(tick_index=0, sim_time_ns=0, episode=1, paused=True, steps=0, late_steps=0,
                      max_lateness_s=0.0, skips=0, skipped_s=0.0, resets=0, real_time_factor=1.0,
                      wall_time_s=time.monotonic(), lateness_p50_s=0.0, lateness_p99_s=0.0,
                      lateness_decades=(0, 0, 0, 0, 0))


def test_each_sims_diagnostic_status_name_carries_its_namespace(ros):
    import rclpy
    namespaces = [new_namespace("diag"), new_namespace("diag")]
    sims = [rclpy.create_node(contract.SIM_NODE, namespace=f"/{ns}") for ns in namespaces]
    listener = rclpy.create_node("diagnostics_listener", namespace=f"/{namespaces[0]}")
    names: dict[str, str] = {}  # hardware_id -> status name
    listener.create_subscription(DiagnosticArray, contract.DIAGNOSTICS,
                                 lambda msg: names.update({s.hardware_id: s.name for s in msg.status}), 10)
    for node in sims:
        SimDiagnostics(node, StatusOnly(), 0.05, lambda: {"commands": CommandCounts(), "published": 0,
                                                          "publish_errors": 0})
    spinning = Spinning(*sims, listener)
    try:
        ids = [f"/{ns}/{contract.SIM_NODE}" for ns in namespaces]
        wait_for(lambda: all(i in names for i in ids), 10, "both sims' diagnostics")
    finally:
        spinning.close()
    assert [names[i] for i in ids] == [f"{ns}/{contract.SIM_NODE}: simulation" for ns in namespaces], names
