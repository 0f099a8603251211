"""The sim's /diagnostics status: a pure function of what the node knows, and its message."""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from robogym_ros.contract import DIAGNOSTICS, DIAGNOSTICS_QOS
from robogym_ros.ros.qos import profile
from robogym_ros.sim.lateness import DECADE_EDGES_S
from robogym_ros.sim.loop import Status
from robogym_ros.sim.process import PhysicsProcessDied, SimProcess


@dataclass
class CommandCounts:
    """Commands (joint_commands and joint_trajectory) accepted and rejected, and the last reason.
    Counted by two threads (joint_commands has its own): through :meth:`accept` and :meth:`reject`."""

    accepted: int = 0
    rejected: int = 0
    last_rejection: str = ""  # bounded by CommandRejected
    stamps_off_clock: int = 0  # commands applied although stamped far from sim time (commands/clock_check.py)
    last_stamp_warning: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def accept(self) -> None:
        with self._lock:
            self.accepted += 1

    def reject(self, reason: str) -> None:
        with self._lock:
            self.rejected += 1
            self.last_rejection = reason


def achieved_rtf(status: Status, previous: Status | None) -> float:
    """Sim seconds per wall second between two statuses; NaN without a previous one."""
    if previous is None or status.wall_time_s <= previous.wall_time_s:
        return math.nan
    return ((status.sim_time_ns - previous.sim_time_ns) * 1e-9
            / (status.wall_time_s - previous.wall_time_s))


def simulation_status(status: Status, previous: Status | None, commands: CommandCounts, *,
                      published: int, publish_errors: int,
                      cameras: Mapping[str, Any] | None = None) -> tuple[str, str, dict[str, Any]]:
    """(level "OK" | "WARN", message, values) of the simulation's diagnostic status.

    WARN when something went wrong that a user must know of: late steps, a blow-up reset,
    transport errors, a camera error.
    """
    values: dict[str, Any] = {
        "sim_time_s": status.sim_time_ns * 1e-9,
        "real_time_factor_achieved": achieved_rtf(status, previous),
        "real_time_factor_target": status.real_time_factor,
        "paused": status.paused,
        "episode": status.episode,
        "late_steps": status.late_steps,
        "max_lateness_s": status.max_lateness_s,
        "lateness_p50_s": status.lateness_p50_s,
        "lateness_p99_s": status.lateness_p99_s,
        # steps by how long after their deadline they began (edges in s; null = no upper edge)
        "lateness_histogram": json.dumps({"edges_s": [0.0, *DECADE_EDGES_S, None],
                                          "counts": list(status.lateness_decades)}),
        "resets": status.resets,
        "skipped_s": status.skipped_s,
        "commands_accepted": commands.accepted,
        "commands_rejected": commands.rejected,
        "last_rejection": commands.last_rejection,
        "commands_stamped_off_clock": commands.stamps_off_clock,
        "last_stamp_warning": commands.last_stamp_warning,
        "ticks_published": published,
        "publish_errors": publish_errors,
    }
    if cameras:
        values |= {f"camera_{k}": v for k, v in cameras.items()}
    message = "paused" if status.paused else "running"
    if status.resets or status.late_steps or publish_errors or (cameras and cameras.get("error")):
        return "WARN", message + "; see late_steps / resets / publish_errors / camera_error", values
    return "OK", message, values


def diagnostic_array(stamp, name: str, hardware_id: str, level: str, message: str,
                     values: Mapping[str, Any]) -> DiagnosticArray:
    diag = DiagnosticArray()
    diag.header.stamp = stamp
    diag.status.append(DiagnosticStatus(
        level=getattr(DiagnosticStatus, level), name=name, message=message, hardware_id=hardware_id,
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()]))
    return diag


class SimDiagnostics:
    """Publishes the simulation status on /diagnostics every ``period_s`` (wall time)."""

    def __init__(self, node, sim: SimProcess, period_s: float, extra: Callable[[], dict]):
        """``extra()`` gives the node's own figures: ``commands``, ``published``,
        ``publish_errors``, ``cameras`` (the keyword arguments of simulation_status)."""
        self._node, self._sim, self._extra = node, sim, extra
        self._previous: Status | None = None
        self._pub = node.create_publisher(DiagnosticArray, DIAGNOSTICS, profile(DIAGNOSTICS_QOS))
        self._timer = node.create_timer(period_s, self.publish)

    def set_period(self, period_s: float) -> None:
        self._timer.timer_period_ns = round(period_s * 1e9)

    def publish(self) -> None:
        try:
            status = self._sim.status()
        except PhysicsProcessDied:
            return  # the pump reports the death and stops the node
        previous, self._previous = self._previous, status
        extra = self._extra()
        level, message, values = simulation_status(status, previous, extra.pop("commands"), **extra)
        node = self._node
        self._pub.publish(diagnostic_array(node.get_clock().now().to_msg(), status_name(node),
                                           node.get_fully_qualified_name(), level, message, values))


def status_name(node) -> str:
    """``lab1/robogym_sim: simulation``: the namespace in the name, as /diagnostics is global and
    an aggregator keys its statuses by name (diagnostic_updater's ``<node>: <task>``, with the
    namespace, whose slashes an aggregator shows as a path)."""
    return f"{node.get_fully_qualified_name().lstrip('/')}: simulation"
