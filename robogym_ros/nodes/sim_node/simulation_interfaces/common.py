"""What the standard simulation services and the SimulateSteps action share: :class:`Refused`
(a standard result code and its message), ``result``/``serve`` to answer with one, ``owning``
the run state (nodes/sim_node/run_state/machine.py) for a request, and the checks of a step request.

simulation_interfaces ships with every ROS install from Humble on but has no wheel on PyPI:
without it :data:`UNAVAILABLE` says why, and nothing of this package is created.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from robogym_ros.nodes.sim_node.run_state.machine import Busy, Owner, RunStates
from robogym_ros.sim.process import SimProcess

try:
    from simulation_interfaces.msg import Result
    UNAVAILABLE = ""
except ImportError as exc:  # no wheel on PyPI: a pip-only install has none
    UNAVAILABLE = (f"simulation_interfaces is not installed ({exc}): no standard simulation services; "
                   "install ROS 2's simulation_interfaces (Humble and later have it) for them")


class Refused(Exception):
    """A request answered with a standard result code (not RESULT_OK) and a message; nothing changed."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def result(code: int, message: str = ""):
    r = Result()
    r.result, r.error_message = code, message
    return r


def serve(response, action) -> object:
    """Fill ``response.result`` from ``action()``: RESULT_OK (no message: the field is for errors),
    a Refused's code and message, or RESULT_OPERATION_FAILED with the error (the node lives on)."""
    try:
        action()
        response.result = result(Result.RESULT_OK)
    except Refused as exc:
        response.result = result(exc.code, str(exc))
    except Exception as exc:  # noqa: BLE001 - the caller gets the reason
        response.result = result(Result.RESULT_OPERATION_FAILED, f"{type(exc).__name__}: {exc}")
    return response


@contextmanager
def owning(states: RunStates, who: str) -> Iterator[Owner]:
    """Own the run state (nodes/sim_node/run_state/machine.py) for a standard request: another owner is
    RESULT_INCORRECT_STATE ("the simulator is in an incorrect state for this interface call"),
    with the machine's reason, the one every client gets."""
    try:
        owner = states.claim(who)
    except Busy as exc:
        raise Refused(Result.RESULT_INCORRECT_STATE, str(exc)) from None
    try:
        yield owner
    finally:
        owner.release()


def check_steps(steps: int, limit: int | None = None) -> None:
    """Refused unless ``steps`` is a number of steps one request may take."""
    if steps < 1:
        raise Refused(Result.RESULT_OPERATION_FAILED, f"steps must be at least 1, got {steps}")
    if limit is not None and steps > limit:
        raise Refused(Result.RESULT_OPERATION_FAILED,
                      f"steps = {steps} is more than {limit} per call; use the simulate_steps action "
                      "(feedback per step, cancel) for longer runs")


def paused_at(sim: SimProcess) -> int:
    """The tick a paused sim is at (call as the owner); a playing one is RESULT_OPERATION_FAILED, as
    StepSimulation and SimulateSteps define it."""
    status = sim.status()
    if not status.paused:
        raise Refused(Result.RESULT_OPERATION_FAILED,
                      "the simulation is playing: pause it first (SetSimulationState STATE_PAUSED)")
    return status.tick_index


def blew_up(states: RunStates, from_index: int, index: int, steps: int) -> None:
    """Refused (RESULT_OPERATION_FAILED, saying where) if a tick of these steps blew the scene up."""
    if states.blew_up(from_index, index):
        raise Refused(Result.RESULT_OPERATION_FAILED,
                      f"the scene blew up at tick {index} after {index - from_index} of {steps} steps: "
                      "it was reset, and the sim paused")
