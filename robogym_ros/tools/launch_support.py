"""What the launch files decide, without launch: the parameters of a loaded params file, and
what a launch does when a sim exits on its own. Standard library only: the launch files import
this, and its tests run where launch is not installed.
"""
from __future__ import annotations

from typing import Any

# robogym_ros.ros.node_runner.run_node: a start-up error (a bad parameter, a bad model) is one FATAL
# line and exit 1. Respawning cannot mend it: the same parameters fail the same way, every
# respawn_delay, for ever.
EXIT_STARTUP_ERROR = 1


def file_parameters(document: Any) -> dict[str, Any]:
    """The parameters of a loaded ROS params file, every node key (`/**`, `robogym_sim`, ...) merged."""
    values: dict[str, Any] = {}
    for section in (document or {}).values():
        if isinstance(section, dict):
            values.update(section.get("ros__parameters") or {})
    return values


def fleet_seeds(count_text: str, base_seed: int, seed_max: int) -> list[int]:
    """The seeds of a fleet of ``count`` sims (sim i gets ``base_seed + i``), from the launch
    arguments as typed: ValueError naming the argument the user passed (``count``, or ``seed`` with
    the largest it may be for this count), never a value derived from it."""
    try:
        count = int(count_text)
    except ValueError:
        raise ValueError(f"count must be an integer >= 1, got {count_text!r}") from None
    if count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count}")
    if base_seed + count - 1 > seed_max:
        raise ValueError(f"seed must be in 0 .. {seed_max - count + 1} with count:={count} "
                         f"(sim i gets seed + i, at most {seed_max}), got {base_seed}")
    return [base_seed + i for i in range(count)]


def sim_exit(name: str, returncode: int, *, respawn: bool) -> tuple[str, str]:
    """What a launch does when the sim ``name`` exits while the launch is not shutting down:
    ``("respawn", "")`` (launch restarts it), ``("stop", reason)`` (shut down, exit 0) or
    ``("fail", reason)`` (shut down with a non-zero exit: the only way `ros2 launch` has is an
    exception in the launch, which it logs as one line and answers with exit code 1).

    A sim alone is the point of its launch, so the launch ends with it: robot_state_publisher
    or the other sims of a fleet left running would only hide that it is gone.
    """
    if returncode == EXIT_STARTUP_ERROR:
        return "fail", (f"{name} could not start (exit {returncode}; its FATAL line above says why)"
                        + (": not respawned, it would fail the same way" if respawn else ""))
    if respawn:
        return "respawn", ""
    if returncode == 0:
        return "stop", f"{name} exited"
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit {returncode}"
    return "fail", f"{name} died ({how}); respawn:=true restarts it"


def shutdown_reason(name: str, returncode: int, *, respawn: bool, shutting_down: bool) -> str | None:
    """What a launch file's exit handler for the sim ``name`` does (see :func:`sim_exit`): None to do
    nothing (the launch is shutting down already, or launch respawns the sim), else the reason to
    shut the launch down with (exit 0); a failure raises RuntimeError, which `ros2 launch` logs,
    shuts everything down on, and answers with exit 1."""
    if shutting_down:  # Ctrl-C or another node ended the launch: exits are expected
        return None
    action, reason = sim_exit(name, returncode, respawn=respawn)
    if action == "fail":
        raise RuntimeError(reason)
    return reason if action == "stop" else None
