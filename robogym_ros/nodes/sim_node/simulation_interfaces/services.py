"""The ROS 2 standard simulation API (simulation_interfaces) on the sim node, where it is installed.

Services under the node (``~/<name>``): get_simulator_features, get_simulation_state,
set_simulation_state, reset_simulation, step_simulation here; get_entities, get_entity_info,
get_entity_state, get_entities_states, set_entity_state in ``entities``; the action
``~/simulate_steps`` in ``simulate_steps``; what they share in ``common``. A step is one control tick.

Every request that changes the run state owns it for its call through the run-state machine
(nodes/sim_node/run_state/machine.py), as every other client does: while someone else owns it (a
simulate_steps goal, a step request, a Trigger call) it is RESULT_INCORRECT_STATE with the
machine's reason, and nothing changes. The machine's phases are the standard's states: running
= STATE_PLAYING, paused = STATE_PAUSED, stopped = STATE_STOPPED (paused at the start of an episode
that no tick has advanced yet: what any reset and a blow-up leave, and a start with
``start_paused``). Stopping resets (a new episode of the seed's sequence; time goes on: a stamp
names its tick).

ResetSimulation does SCOPE_STATE (2) only: a new episode, the next scene of the seed's sequence,
stopped, under the next stamp. Sim time never goes back (every stamp names its tick, ground
truth's included), so SCOPE_TIME is refused, and so is every scope that holds it: SCOPE_ALL
(255, "as if closed and launched again") and SCOPE_DEFAULT (0, the same as SCOPE_ALL).
SCOPE_SPAWNED is refused too: nothing is ever spawned here.

Without simulation_interfaces (no PyPI wheel) nothing here is created, and
:attr:`SimulationInterfaces.status` says why for the spec.
"""
from __future__ import annotations

from robogym_ros.nodes.sim_node.run_state.machine import PAUSED, RUNNING, STOPPED, RunStates
from robogym_ros.nodes.sim_node.simulation_interfaces.common import (
    UNAVAILABLE,
    Refused,
    blew_up,
    check_steps,
    owning,
    paused_at,
    serve,
)
from robogym_ros.sim.process import SimProcess

if not UNAVAILABLE:
    from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
    from simulation_interfaces.srv import (
        GetSimulationState,
        GetSimulatorFeatures,
        ResetSimulation,
        SetSimulationState,
        StepSimulation,
    )

# StepSimulation blocks the node's executor while it steps: 10 000 ticks (100 s of sim time at
# 10 ms) take seconds; longer runs belong to the action (feedback, cancel).
MAX_STEPS_PER_CALL = 10_000
SERVICES = ("get_simulator_features", "get_simulation_state", "set_simulation_state", "reset_simulation",
            "step_simulation", "get_entities", "get_entity_info", "get_entity_state", "get_entities_states",
            "set_entity_state")
ACTIONS = ("simulate_steps",)
STATE_NAMES = {0: "STATE_STOPPED", 1: "STATE_PLAYING", 2: "STATE_PAUSED", 3: "STATE_QUITTING",
               4: "STATE_NO_WORLD", 5: "STATE_LOADING_WORLD"}
SCOPE_NAMES = {0: "SCOPE_DEFAULT", 1: "SCOPE_TIME", 2: "SCOPE_STATE", 4: "SCOPE_SPAWNED", 255: "SCOPE_ALL"}


if not UNAVAILABLE:
    STANDARD_STATES = {RUNNING: SimulationState.STATE_PLAYING, PAUSED: SimulationState.STATE_PAUSED,
                       STOPPED: SimulationState.STATE_STOPPED}


class SimulationInterfaces:
    """Creates the standard services and action where simulation_interfaces is installed."""

    def __init__(self, node, sim: SimProcess, states: RunStates, model_path: str, control_dt_ns: int):
        self.status = "available" if not UNAVAILABLE else f"unavailable: {UNAVAILABLE}"
        self._names: dict[str, dict[str, str]] = {"services": {}, "actions": {}}
        self.entities = self.actions = None
        if UNAVAILABLE:
            node.get_logger().warning(UNAVAILABLE)
            return
        from robogym_ros.nodes.sim_node.simulation_interfaces.entities import EntityServices
        from robogym_ros.nodes.sim_node.simulation_interfaces.simulate_steps import SimulateStepsServer
        self._control_dt_ns = control_dt_ns
        self._sim, self._states = sim, states
        for srv, name, callback in (
                (GetSimulatorFeatures, "get_simulator_features", self._features),
                (GetSimulationState, "get_simulation_state", self._get_state),
                (SetSimulationState, "set_simulation_state", self._set_state),
                (ResetSimulation, "reset_simulation", self._reset),
                (StepSimulation, "step_simulation", self._step)):
            node.create_service(srv, f"~/{name}", callback)
        self.entities = EntityServices(node, sim, model_path)
        self.actions = SimulateStepsServer(node, sim, states, "~/simulate_steps")
        self._names = {"services": {n: node.resolve_service_name(f"~/{n}") for n in SERVICES},
                       "actions": {n: node.resolve_service_name(f"~/{n}") for n in ACTIONS}}

    def spec(self) -> dict:
        """The spec's ``simulation_interfaces`` entry: status, and the names where available."""
        return {"status": self.status, **self._names}

    def close(self) -> None:
        if self.actions is not None:
            self.actions.close()

    # --- services ---------------------------------------------------------------------------
    def _features(self, _request, response):
        f = SimulatorFeatures
        response.features.features = [
            f.ENTITY_TAGS, f.ENTITY_BOUNDS_BOX, f.ENTITY_CATEGORIES, f.ENTITY_STATE_GETTING, f.ENTITY_STATE_SETTING,
            f.ENTITY_INFO_GETTING, f.SIMULATION_RESET, f.SIMULATION_RESET_STATE, f.SIMULATION_STATE_GETTING,
            f.SIMULATION_STATE_SETTING, f.SIMULATION_STATE_PAUSE, f.STEP_SIMULATION_SINGLE,
            f.STEP_SIMULATION_MULTIPLE, f.STEP_SIMULATION_ACTION]
        response.features.spawn_formats = []
        response.features.custom_info = (
            f"robogym_ros MuJoCo sim. A step is one control tick ({self._control_dt_ns} ns of sim time). "
            "Sim time never goes back: a reset starts a new episode under the next stamp. SetEntityState "
            "moves the free bodies only. Entity filters: name (Python re, searched), categories, tags, bounds "
            "(sphere or box, against each entity's world axis-aligned box). See robogym_ros's "
            "docs/ros_standard_api.md.")
        return response

    def _get_state(self, _request, response):
        def get():
            response.state.state = STANDARD_STATES[self._states.phase()]
        return serve(response, get)

    def _set_state(self, request, response):
        return serve(response, lambda: self._transition(request.state.state))

    def _transition(self, target: int) -> None:
        s = SimulationState
        if target not in (s.STATE_STOPPED, s.STATE_PLAYING, s.STATE_PAUSED):
            if target in STATE_NAMES:
                raise Refused(Result.RESULT_FEATURE_UNSUPPORTED,
                              f"{STATE_NAMES[target]} cannot be set here: one world, always loaded; stop the "
                              "node with Ctrl-C or SIGTERM to quit")
            raise Refused(Result.RESULT_OPERATION_FAILED, f"unknown simulation state {target}; states: {STATE_NAMES}")
        with owning(self._states, f"a set_simulation_state call ({STATE_NAMES[target]})") as run:
            current = STANDARD_STATES[self._states.phase()]
            if current == target:
                raise Refused(SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                              f"already in {STATE_NAMES[target]}")
            if target == s.STATE_PLAYING:
                run.resume()
            elif target == s.STATE_PAUSED:
                if current == s.STATE_PLAYING:
                    run.pause()
                else:  # from stopped: paused, without a single tick
                    run.pause_from_stopped()
            else:
                run.reset()

    def _reset(self, request, response):
        def reset():
            refuse_scope(request.scope)
            with owning(self._states, "a reset_simulation call") as run:
                run.reset()
        return serve(response, reset)

    def _step(self, request, response):
        def step():
            check_steps(request.steps, MAX_STEPS_PER_CALL)
            with owning(self._states, f"a step_simulation call ({request.steps} steps)") as run:
                at = paused_at(self._sim)
                index = run.step(request.steps, at)
                blew_up(self._states, at, index, request.steps)
        return serve(response, step)


def refuse_scope(scope: int) -> None:
    """Refused (and why) unless ``scope`` asks for what a reset here does: SCOPE_STATE alone."""
    r = ResetSimulation.Request
    name = SCOPE_NAMES.get(scope, f"scope {scope}")
    if scope == r.SCOPE_STATE:
        return
    what = (f"{name} ({scope}): SCOPE_STATE (2) is what a reset does here: a new episode, the next scene of the "
            "seed's sequence, stopped, under the next stamp")
    effective = r.SCOPE_ALL if scope == r.SCOPE_DEFAULT else scope  # "same as SCOPE_ALL"
    if effective & r.SCOPE_TIME:
        raise Refused(Result.RESULT_FEATURE_UNSUPPORTED, (
            f"{what}; sim time never goes back here (every stamp names its tick, ground truth's included), so "
            "neither SCOPE_TIME nor a scope holding it (SCOPE_ALL, SCOPE_DEFAULT: 'as if closed and launched "
            "again') can be done"))
    if effective & r.SCOPE_SPAWNED:
        raise Refused(Result.RESULT_FEATURE_UNSUPPORTED, f"{what}; nothing is ever spawned here, so SCOPE_SPAWNED "
                      "is not supported")
    raise Refused(Result.RESULT_OPERATION_FAILED, f"{what}; {scope} is no scope of ResetSimulation "
                  f"({', '.join(f'{n} ({v})' for v, n in SCOPE_NAMES.items())})")
