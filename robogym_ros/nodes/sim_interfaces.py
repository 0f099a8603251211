"""The ROS 2 standard simulation API (simulation_interfaces) on the sim node, where it is installed.

Services under the node (``~/<name>``): get_simulator_features, get_simulation_state,
set_simulation_state, reset_simulation, step_simulation here; get_entities, get_entity_info,
get_entity_state, get_entities_states, set_entity_state in nodes/entity_services.py; the action
``~/simulate_steps`` in nodes/simulate_steps.py. A step is one control tick.

The sim's own run states map onto the standard's: running = STATE_PLAYING, paused =
STATE_PAUSED, and STATE_STOPPED = paused at the start of an episode that no tick has advanced
yet: what any reset (SetSimulationState(STOPPED), ResetSimulation, ``~/reset``, a blow-up) and a
start with ``start_paused`` leave. Stopping resets (a new episode of the seed's sequence; time
goes on: a stamp names its tick).

simulation_interfaces ships with every ROS install from Humble on but has no wheel on PyPI:
without it nothing here is created, and :attr:`SimulationInterfaces.status` says why for the spec.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from robogym_ros.nodes.run_control import RunControl
from robogym_ros.sim.process import SimProcess

try:
    from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
    from simulation_interfaces.srv import (
        GetSimulationState,
        GetSimulatorFeatures,
        ResetSimulation,
        SetSimulationState,
        StepSimulation,
    )
    UNAVAILABLE = ""
except ImportError as exc:  # no wheel on PyPI: a pip-only install has none
    UNAVAILABLE = (f"simulation_interfaces is not installed ({exc}): no standard simulation services; "
                   "install ROS 2's simulation_interfaces (Humble and later have it) for them")

# StepSimulation blocks the node's executor while it steps: 10 000 ticks (100 s of sim time at
# 10 ms) take seconds; longer runs belong to the action (feedback, cancel).
MAX_STEPS_PER_CALL = 10_000
SERVICES = ("get_simulator_features", "get_simulation_state", "set_simulation_state", "reset_simulation",
            "step_simulation", "get_entities", "get_entity_info", "get_entity_state", "get_entities_states",
            "set_entity_state")
ACTIONS = ("simulate_steps",)
STATE_NAMES = {0: "STATE_STOPPED", 1: "STATE_PLAYING", 2: "STATE_PAUSED", 3: "STATE_QUITTING",
               4: "STATE_NO_WORLD", 5: "STATE_LOADING_WORLD"}


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


class Stepper:
    """Paused stepping and resets, shared by the services and the action. Each returns once its
    ticks are on the wire and the run state says where the sim stands."""

    def __init__(self, sim: SimProcess, run_control: RunControl):
        self.sim, self._run_control = sim, run_control
        status = sim.status()
        # STATE_STOPPED: paused at the tick an episode began (a reset from anywhere, a blow-up,
        # the start), unless SetSimulationState(PAUSED) took it from stopped to paused there.
        self._episode, self._episode_start = status.episode, status.tick_index
        self._paused_from_stopped: int | None = None
        self.blow_ups = 0  # ticks that blew up (the loop reset the scene and paused)
        self._lock = threading.Lock()  # one stepper at a time: n steps are n consecutive ticks

    @contextmanager
    def exclusive(self):
        """Hold the sim's run state for one request; refused at once (never waits: the node's
        executor must not block) while a simulate_steps goal or another request holds it."""
        if not self._lock.acquire(blocking=False):
            raise Refused(Result.RESULT_INCORRECT_STATE,
                          "busy: a simulate_steps goal is stepping the simulation; cancel it or wait for it")
        try:
            yield
        finally:
            self._lock.release()

    def check_steps(self, steps: int, limit: int | None = None) -> int:
        """Refused unless ``steps`` may be stepped now; returns the tick the sim is at."""
        if steps < 1:
            raise Refused(Result.RESULT_OPERATION_FAILED, f"steps must be at least 1, got {steps}")
        if limit is not None and steps > limit:
            raise Refused(Result.RESULT_OPERATION_FAILED,
                          f"steps = {steps} is more than {limit} per call; use the simulate_steps action "
                          "(feedback per step, cancel) for longer runs")
        status = self.sim.status()
        if not status.paused:
            raise Refused(Result.RESULT_INCORRECT_STATE,
                          "the simulation is playing: pause it first (SetSimulationState STATE_PAUSED)")
        return status.tick_index

    def step(self, steps: int, from_index: int, *, publish_state: bool = True) -> int:
        """``steps`` control ticks of a paused sim at tick ``from_index`` (else refused: someone
        else moved it), in one request; returns the last tick's index. A blow-up ends them early
        (the scene was reset, the sim paused): Refused, saying where."""
        index = self.sim.step(steps, from_index)
        self.wait_handled(index)
        if publish_state:
            self.publish_state(index, "step")
        if index - from_index < steps:
            raise Refused(Result.RESULT_OPERATION_FAILED,
                          f"the scene blew up at tick {index} after {index - from_index} of {steps} steps: "
                          "it was reset, and the sim paused")
        return index

    def wait_handled(self, index: int) -> None:
        """Return once tick ``index`` is published and its blow-up, if any, reported: a run state
        published after this comes after the ticks it speaks of."""
        self._run_control.wait_handled(index)

    def publish_state(self, index: int, reason: str, paused: bool = True) -> None:
        self._run_control.publish_state(index, reason, paused)

    def reset(self) -> int:
        """A new episode, paused (sim/loop.py): STATE_STOPPED until the next tick."""
        draw = self.sim.reset()
        index = draw["tick"]
        self.wait_handled(index)
        self._run_control.publish_state(index, "reset", True, seed=draw["seed"], scene=draw["scene"])
        return index

    def on_tick(self, tick) -> None:
        """Each tick, on the node's pump thread: a new episode starts at its first tick."""
        if tick.episode != self._episode:
            self._episode, self._episode_start = tick.episode, tick.index
        if tick.blew_up:
            self.blow_ups += 1

    def paused_from_stopped(self) -> None:
        self._paused_from_stopped = self.sim.status().tick_index

    def state(self) -> int:
        status = self.sim.status()
        if not status.paused:
            return SimulationState.STATE_PLAYING
        if status.tick_index == self._episode_start and status.tick_index != self._paused_from_stopped:
            return SimulationState.STATE_STOPPED
        return SimulationState.STATE_PAUSED


class SimulationInterfaces:
    """Creates the standard services and action where simulation_interfaces is installed."""

    def __init__(self, node, sim: SimProcess, run_control: RunControl, model_path: str, control_dt_ns: int):
        self.status = "available" if not UNAVAILABLE else f"unavailable: {UNAVAILABLE}"
        self._names: dict[str, dict[str, str]] = {"services": {}, "actions": {}}
        self.entities = self.actions = self.stepper = None
        if UNAVAILABLE:
            node.get_logger().warning(UNAVAILABLE)
            return
        from robogym_ros.nodes.entity_services import EntityServices
        from robogym_ros.nodes.simulate_steps import SimulateStepsServer
        self._control_dt_ns = control_dt_ns
        self.stepper = Stepper(sim, run_control)
        for srv, name, callback in (
                (GetSimulatorFeatures, "get_simulator_features", self._features),
                (GetSimulationState, "get_simulation_state", self._get_state),
                (SetSimulationState, "set_simulation_state", self._set_state),
                (ResetSimulation, "reset_simulation", self._reset),
                (StepSimulation, "step_simulation", self._step)):
            node.create_service(srv, f"~/{name}", callback)
        self.entities = EntityServices(node, sim, model_path)
        self.actions = SimulateStepsServer(node, self.stepper, "~/simulate_steps")
        self._names = {"services": {n: node.resolve_service_name(f"~/{n}") for n in SERVICES},
                       "actions": {n: node.resolve_service_name(f"~/{n}") for n in ACTIONS}}

    def spec(self) -> dict:
        """The spec's ``simulation_interfaces`` entry: status, and the names where available."""
        return {"status": self.status, **self._names}

    def on_tick(self, tick) -> None:
        """Each tick, after it is published (the node's pump thread)."""
        if self.stepper is not None:
            self.stepper.on_tick(tick)

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
            "(sphere or box, against each entity's world axis-aligned box). See the README section "
            "'The ROS simulation API (simulation_interfaces)'.")
        return response

    def _get_state(self, _request, response):
        def get():
            response.state.state = self.stepper.state()
        return serve(response, get)

    def _set_state(self, request, response):
        return serve(response, lambda: self._transition(request.state.state))

    def _transition(self, target: int) -> None:
        s, stepper = SimulationState, self.stepper
        if target not in (s.STATE_STOPPED, s.STATE_PLAYING, s.STATE_PAUSED):
            if target in STATE_NAMES:
                raise Refused(Result.RESULT_FEATURE_UNSUPPORTED,
                              f"{STATE_NAMES[target]} cannot be set here: one world, always loaded; stop the "
                              "node with Ctrl-C or SIGTERM to quit")
            raise Refused(Result.RESULT_OPERATION_FAILED, f"unknown simulation state {target}; states: {STATE_NAMES}")
        with stepper.exclusive():
            current = stepper.state()
            if current == target:
                raise Refused(SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                              f"already in {STATE_NAMES[target]}")
            if target == s.STATE_PLAYING:
                stepper.publish_state(stepper.sim.resume(), "resume", paused=False)
                return
            if target == s.STATE_PAUSED:
                if current == s.STATE_PLAYING:
                    stepper.publish_state(stepper.sim.pause(), "pause")
                else:  # from stopped: paused, without a single tick
                    stepper.paused_from_stopped()
                return
            stepper.reset()

    def _reset(self, request, response):
        def reset():
            scope = request.scope
            if scope not in (ResetSimulation.Request.SCOPE_DEFAULT, ResetSimulation.Request.SCOPE_ALL,
                             ResetSimulation.Request.SCOPE_STATE):
                raise Refused(Result.RESULT_FEATURE_UNSUPPORTED, (
                    f"scope {scope} is not supported: SCOPE_STATE, SCOPE_ALL or SCOPE_DEFAULT reset the scene to "
                    "a new episode; time is never reset (a stamp names its tick) and nothing is ever spawned"))
            with self.stepper.exclusive():
                self.stepper.reset()
        return serve(response, reset)

    def _step(self, request, response):
        def step():
            with self.stepper.exclusive():
                at = self.stepper.check_steps(request.steps, MAX_STEPS_PER_CALL)
                self.stepper.step(request.steps, at)
        return serve(response, step)
