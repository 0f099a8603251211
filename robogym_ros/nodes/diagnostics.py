"""The sim's /diagnostics status: a pure function of what the node knows, and its message."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from robogym_ros.sim.loop import Status


@dataclass
class CommandCounts:
    accepted: int = 0
    rejected: int = 0
    last_rejection: str = ""  # bounded by CommandRejected


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
        "resets": status.resets,
        "skipped_s": status.skipped_s,
        "commands_accepted": commands.accepted,
        "commands_rejected": commands.rejected,
        "last_rejection": commands.last_rejection,
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
