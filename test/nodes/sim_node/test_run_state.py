"""One run-state machine for every client (nodes/sim_node/run_state/machine.py), over real DDS against a
real sim process: the Trigger services, the standard simulation services, the SimulateSteps
action, lockstep step requests and the parameters that change how the sim steps.

- while one client owns the run state (a simulate_steps goal, a long step request, a long
  step_simulation call), every other client is refused at once with the same reason, each with
  its own interface's code, and nothing changes: the owner's ticks are all there are;
- every ordered pair of clients, one after the other, does what each says;
- clients firing at once: each tick belongs to exactly one accepted request;
- throughout, ``robogym_sim/state`` and ground truth never go backwards.

The issue's case: while a simulate_steps goal ran, ``~/step`` and ``~/resume`` went through, the
goal then aborted, and the published run state went from tick 13647 back to 13646.
"""
from __future__ import annotations

import threading
import time

import pytest
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from simharness import Observer, new_namespace, start_sim
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robogym_ros import contract
from robogym_ros.contract import RunAnswer
from robogym_ros.nodes.sim_node.run_state.step_requests import MAX_STEP_TICKS
from robogym_ros.nodes.sim_node.simulation_interfaces.common import UNAVAILABLE
from robogym_ros.nodes.sim_node.simulation_interfaces.services import MAX_STEPS_PER_CALL
from robogym_ros.ros import qos
from robogym_ros.ros.stamps import stamp_msg, stamp_ns

pytestmark = [pytest.mark.toolchain,  # ./dev test-ros: under ../shared/ros-toolchain
              pytest.mark.skipif(bool(UNAVAILABLE), reason=UNAVAILABLE or "")]

DT_NS = 10_000_000
# Ticks of a long step request or step_simulation call, the most either takes: seconds of
# stepping, longer than the challengers (a dozen clients at once) take to be answered on a
# loaded machine.
LONG = min(MAX_STEP_TICKS, MAX_STEPS_PER_CALL)
BUSY = "owns the run state; nothing was changed"


class Clients(Observer):
    """Every kind of client of the run state, and everything the sim publishes about it."""

    def __init__(self, namespace: str):
        super().__init__(namespace)
        from simulation_interfaces import action, srv
        base = f"/{namespace}/{contract.SIM_NODE}"
        self.types = {"set_simulation_state": srv.SetSimulationState, "reset_simulation": srv.ResetSimulation,
                      "step_simulation": srv.StepSimulation, "get_simulation_state": srv.GetSimulationState}
        self.api = {name: self.node.create_client(t, f"{base}/{name}") for name, t in self.types.items()}
        self.params = self.node.create_client(SetParameters, f"{base}/set_parameters")
        self.get_params = self.node.create_client(GetParameters, f"{base}/get_parameters")
        self.action = self.action_client(action.SimulateSteps, f"{base}/simulate_steps")
        self.requests = self.node.create_publisher(JointTrajectory, f"{base}/step_request", qos.COMMAND_QOS)
        self.states: list[contract.RunState] = []
        self.results: list[contract.StepResult] = []
        self.node.create_subscription(String, f"{base}/state", self._on_state, qos.STATE_QOS)
        self.node.create_subscription(String, f"{base}/step_result", self._on_result,
                                      qos.profile(contract.STEP_RESULT_QOS))

    def _on_state(self, msg):
        with self._lock:
            self.states.append(contract.RunState.from_json(msg.data))

    def _on_result(self, msg):
        with self._lock:
            self.results.append(contract.StepResult.from_json(msg.data))

    # --- the calls, each answered as (accepted, message) -------------------------------------------
    def future(self, client, request, what: str, timeout_s: float = 60.0):
        assert client.wait_for_service(timeout_sec=20), f"{what} not offered"
        future = client.call_async(request)
        self.wait_for(future.done, timeout_s, f"{what} response")
        return future.result()

    def standard(self, name: str, **fields):
        from simulation_interfaces.msg import Result
        request = self.types[name].Request()
        for key, value in fields.items():
            setattr(request, key, value)
        r = self.future(self.api[name], request, name).result
        return r.result == Result.RESULT_OK, r.error_message, r.result

    def trigger(self, name: str, timeout_s: float = 10.0):
        r = self.call(name, timeout_s)
        return r.success, r.message

    def set_param(self, **values):
        request = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                                    for k, v in values.items()])
        (r,) = self.future(self.params, request, "set_parameters").results
        return r.successful, r.reason

    def param(self, name: str):
        r = self.future(self.get_params, GetParameters.Request(names=[name]), "get_parameters")
        return parameter_value_to_python(r.values[0])

    def sim_state(self) -> int:
        return self.standard("get_simulation_state")  # (ok, "", code); the state itself below

    def phase(self) -> int:
        request = self.types["get_simulation_state"].Request()
        return self.future(self.api["get_simulation_state"], request, "get_simulation_state").state.state

    def send_goal(self, steps: int):
        """A SimulateSteps goal; returns (goal handle, its feedback list)."""
        from simulation_interfaces.action import SimulateSteps
        assert self.action.wait_for_server(timeout_sec=20)
        feedback: list = []
        sent = self.action.send_goal_async(SimulateSteps.Goal(steps=steps),
                                           feedback_callback=lambda m: feedback.append(m.feedback.completed_steps))
        self.wait_for(sent.done, 20, "goal response")
        handle = sent.result()
        assert handle.accepted
        return handle, feedback

    def goal_outcome(self, handle, timeout_s: float = 60.0):
        from simulation_interfaces.msg import Result
        done = handle.get_result_async()
        self.wait_for(done.done, timeout_s, "goal result")
        r = done.result()
        return r.status, r.result.result.result == Result.RESULT_OK, r.result.result.error_message, \
            r.result.result.result

    def step_request(self, from_index: int, n_ticks: int) -> None:
        msg = JointTrajectory()
        msg.header.stamp = stamp_msg(from_index * DT_NS)
        point = JointTrajectoryPoint()
        point.time_from_start.sec, point.time_from_start.nanosec = divmod(n_ticks * DT_NS, 1_000_000_000)
        msg.points = [point]
        self.requests.publish(msg)

    def step_result(self, from_index: int, after: int, timeout_s: float = 60.0) -> contract.StepResult:
        """The answer to the step request from ``from_index`` among results after the first ``after``."""
        def found():
            return [r for r in self.snapshot(self.results)[after:] if r.from_stamp_ns == from_index * DT_NS]
        self.wait_for(found, timeout_s, f"the answer to the step request from tick {from_index}")
        return found()[0]

    # --- what the sim published ----------------------------------------------------------------------
    def last_tick(self) -> int:
        truth = self.snapshot(self.truth)
        return stamp_ns(truth[-1].header.stamp) // DT_NS if truth else 0

    def state_tick(self) -> int:
        """The tick of the last run state: where a paused sim stands, known from its own word."""
        return self.snapshot(self.states)[-1].stamp_ns // DT_NS

    def settled(self, seconds: float = 0.3) -> int:
        """The index of the last tick once none has come for ``seconds``."""
        while True:
            n = len(self.snapshot(self.truth))
            threading.Event().wait(seconds)
            if len(self.snapshot(self.truth)) == n:
                return self.last_tick()

    def check_never_backwards(self) -> None:
        stamps = [s.stamp_ns for s in self.snapshot(self.states)]
        assert all(b >= a for a, b in zip(stamps, stamps[1:])), \
            [(s.reason, s.stamp_ns) for s in self.snapshot(self.states)]
        truth = [stamp_ns(m.header.stamp) for m in self.snapshot(self.truth)]
        assert all(b > a for a, b in zip(truth, truth[1:])), "ground truth went back or repeated a stamp"


@pytest.fixture(scope="module")
def sim(ros, tmp_path_factory):
    process, clients = start_sim(new_namespace("runstate"), tmp_path_factory.mktemp("runstate"), Clients,
                                 start_paused=True, camera_period_s=0.0)
    clients.wait_for(lambda: clients.snapshot(clients.states), 20, "the start state")
    yield clients
    clients.check_never_backwards()
    clients.close()
    assert process.stop() == 0, process.output()


# --- the challengers: each tries to change the run state, and says what it was told ---------------------

def challengers(c: Clients, executor_free: bool = True, step_requests: bool = True, settle: bool = False):
    """name -> a call that tries to change the run state: (accepted, message, code or None).
    ``executor_free``: only those not served on the sim node's executor (a step_simulation call
    holds that executor: the others queue behind it, they are not refused); ``step_requests``:
    with a step request (one thread serves them in turn: one queues behind another); ``settle``:
    a step request from the last tick once none comes (else the last one received)."""
    from simulation_interfaces.msg import SimulationState as S
    from simulation_interfaces.srv import ResetSimulation as R

    def goal():
        handle, _ = c.send_goal(5)
        status, ok, message, code = c.goal_outcome(handle)
        return ok and status == 4, message, code

    def step_request():
        n = len(c.snapshot(c.results))
        at = c.state_tick() if settle else c.last_tick()
        c.step_request(at, 3)
        r = c.step_result(at, n)
        return r.reason == "step", r.detail, None

    calls = {"simulate_steps": goal}
    if step_requests:
        calls["step_request"] = step_request
    if executor_free:
        calls.update({
            "~/pause": lambda: (*c.trigger("pause"), None),
            "~/resume": lambda: (*c.trigger("resume"), None),
            "~/step": lambda: (*c.trigger("step"), None),
            "~/reset": lambda: (*c.trigger("reset"), None),
            "set_simulation_state": lambda: c.standard("set_simulation_state", state=S(state=S.STATE_PLAYING)),
            "reset_simulation": lambda: c.standard("reset_simulation", scope=R.Request.SCOPE_STATE),
            "step_simulation": lambda: c.standard("step_simulation", steps=1),
            "real_time_factor": lambda: (*c.set_param(real_time_factor=2.0), None),
            "seed": lambda: (*c.set_param(seed=7), None),
        })
    return calls


def all_at_once(calls: dict) -> dict:
    """Every call at the same time, each on a thread of its own: name -> its answer."""
    answers: dict = {}

    def run(name, call):
        try:
            answers[name] = call()
        except Exception as exc:  # noqa: BLE001 - reported below, with the others' answers
            answers[name] = (None, f"{type(exc).__name__}: {exc}", None)

    threads = [threading.Thread(target=run, args=item, daemon=True) for item in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(answers) == set(calls), answers
    return answers


def assert_refused_alike(answers: dict, owner_words: str) -> None:
    """Every challenger refused, each with the same reason naming the owner, the standard services
    and the action with RESULT_INCORRECT_STATE."""
    from simulation_interfaces.msg import Result
    assert not [name for name, (accepted, _, _) in answers.items() if accepted], answers
    reasons = {message for _, message, _ in answers.values()}
    assert len(reasons) == 1, answers
    (reason,) = reasons
    assert reason.startswith(f"busy: {owner_words}") and BUSY in reason, reason
    codes = {name: code for name, (_, _, code) in answers.items() if code is not None}
    assert set(codes.values()) == {Result.RESULT_INCORRECT_STATE}, codes


def test_a_simulate_steps_goal_owns_the_run_state_and_every_other_client_is_refused_alike(sim):
    from simulation_interfaces.msg import SimulationState as S
    start = sim.settled()
    states_before = len(sim.snapshot(sim.states))
    handle, feedback = sim.send_goal(1_000_000_000)
    sim.wait_for(lambda: len(feedback) >= 5, 20, "the goal stepping")
    answers = all_at_once(challengers(sim))
    assert_refused_alike(answers, "a simulate_steps goal (1000000000 steps)")
    assert sim.phase() == S.STATE_PAUSED  # ~/resume and set_simulation_state(PLAYING) changed nothing
    handle.cancel_goal_async()
    status, ok, message, _ = sim.goal_outcome(handle)
    assert status == 5 and ok, message  # canceled, not aborted: nobody stepped under it
    end = sim.settled()
    assert end - start >= feedback[-1] >= 5
    # Every tick was the goal's: one state, the goal's own, and no other client's (a step, a reset,
    # a resume would each have published one).
    new_states = sim.snapshot(sim.states)[states_before:]
    assert [(s.reason, s.stamp_ns) for s in new_states] == [("step", end * DT_NS)], new_states
    assert sim.param("real_time_factor") == 1.0 and sim.param("seed") == 0
    sim.check_never_backwards()


def test_a_long_step_request_owns_the_run_state_and_every_other_client_is_refused_alike(sim):
    start = sim.settled()
    n = len(sim.snapshot(sim.results))
    sim.step_request(start, LONG)
    sim.wait_for(lambda: sim.last_tick() > start + 5, 20, "the request stepping")
    answers = all_at_once(challengers(sim, step_requests=False))
    assert not [r for r in sim.snapshot(sim.results)[n:] if r.from_stamp_ns == start * DT_NS], \
        "the step request ended before every challenger was answered: make LONG longer"
    assert_refused_alike(answers, f"a step request (from tick {start}, {LONG} ticks)")
    sim.step_request(start + 10, 1)  # queued behind it (one thread serves them): refused then, it is stale
    queued = sim.step_result(start + 10, n)
    result = sim.step_result(start, n)
    assert (result.reason, result.stamp_ns) == ("step", (start + LONG) * DT_NS), result
    assert queued.reason == "step_refused" and "another client stepped" in queued.detail, queued
    assert sim.snapshot(sim.results).index(queued) > sim.snapshot(sim.results).index(result)
    assert sim.settled() == start + LONG  # its ticks, and no other
    sim.check_never_backwards()


def test_a_long_step_simulation_call_holds_the_executor_and_owns_the_run_state(sim):
    """The standard services, the Trigger services and parameters are served on the sim node's
    executor, which a step_simulation call holds: they wait for it (and then go through, each
    after it); the action and step requests, on threads of their own, are refused."""
    start = sim.settled()
    request = sim.types["step_simulation"].Request(steps=LONG)
    call = sim.api["step_simulation"].call_async(request)
    sim.wait_for(lambda: sim.last_tick() > start + 5, 20, "the call stepping")
    answers = all_at_once(challengers(sim, executor_free=False))  # the action, a step request
    assert not call.done(), "the step_simulation call ended before every challenger was answered"
    assert_refused_alike(answers, f"a step_simulation call ({LONG} steps)")
    queued = []
    threading.Thread(target=lambda: queued.append(sim.trigger("step", 120.0)), daemon=True).start()
    sim.wait_for(call.done, 120, "the step_simulation response")
    from simulation_interfaces.msg import Result
    assert call.result().result.result == Result.RESULT_OK, call.result().result.error_message
    sim.wait_for(lambda: queued, 20, "the queued ~/step")
    assert queued[0][0], queued  # served after the call, from its last tick
    assert RunAnswer.from_json(queued[0][1]).tick == start + LONG + 1, queued
    assert sim.settled() == start + LONG + 1
    sim.check_never_backwards()


def test_every_pair_of_clients_one_after_the_other_does_what_each_says(sim):
    """Each ordered pair of clients, back to back: each is accepted, and the run state and the
    ticks are what the two say."""
    from simulation_interfaces.msg import SimulationState as S
    calls = challengers(sim, settle=True)
    names = sorted(calls)
    pause = {"~/resume", "set_simulation_state"}  # they leave it running: pause again after
    ticks = {"simulate_steps": 5, "step_request": 3, "~/step": 1, "step_simulation": 1, "~/reset": 1,
             "reset_simulation": 1, "~/pause": 0}  # a reset is a tick of its own
    stopped = {"~/reset", "reset_simulation"}
    for first in names:
        for second in names:
            for name in (first, second):
                states, before = len(sim.snapshot(sim.states)), sim.state_tick()
                accepted, message, _ = calls[name]()
                assert accepted, (first, second, name, message)
                if name in pause:
                    assert sim.phase() == S.STATE_PLAYING, name
                    assert sim.trigger("pause")[0]
                elif name in ticks:  # its state says where it left the sim
                    sim.wait_for(lambda: len(sim.snapshot(sim.states)) > states, 10, f"{name}'s run state")
                    assert sim.state_tick() - before == ticks[name], (first, second, name)
                    if name != "~/pause":  # from stopped, a pause leaves it stopped
                        assert sim.phase() == (S.STATE_STOPPED if name in stopped else S.STATE_PAUSED), \
                            (first, second, name, sim.phase())
            sim.check_never_backwards()
    assert sim.last_tick() == sim.state_tick() == sim.settled()  # the states said where the ticks were
    assert sim.set_param(real_time_factor=1.0) == (True, "") and sim.set_param(seed=0) == (True, "")
    assert sim.set_param(real_time_factor=1.0) == (True, "") and sim.set_param(seed=0) == (True, "")
    sim.check_never_backwards()


def test_clients_at_once_each_tick_belongs_to_one_accepted_request(sim):
    """Bursts of step requests, ~/step calls, step_simulation calls and simulate_steps goals fired
    together: the ticks published are exactly the accepted ones' steps; the refused were refused
    for the run state's owner and stepped nothing."""
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result
    for burst in range(8):
        start = sim.settled(0.2)
        n_results = len(sim.snapshot(sim.results))
        goal = sim.action.send_goal_async(SimulateSteps.Goal(steps=4))
        sim.step_request(start, 3)
        trigger = sim.services["step"].call_async(sim.services["step"].srv_type.Request())
        standard = sim.api["step_simulation"].call_async(sim.types["step_simulation"].Request(steps=2))
        for f in (goal, trigger, standard):
            sim.wait_for(f.done, 60, "an answer")
        outcome = goal.result().get_result_async()
        sim.wait_for(outcome.done, 60, "the goal's result")
        request = sim.step_result(start, n_results)
        stepped = 0
        goal_ok = outcome.result().status == 4
        stepped += 4 if goal_ok else 0
        if not goal_ok:
            assert outcome.result().result.result.result == Result.RESULT_INCORRECT_STATE
            assert BUSY in outcome.result().result.result.error_message
        if request.reason == "step":
            stepped += 3
        else:
            assert BUSY in request.detail or "another client stepped" in request.detail, request
        if trigger.result().success:
            stepped += 1
        else:
            assert BUSY in trigger.result().message, trigger.result().message
        if standard.result().result.result == Result.RESULT_OK:
            stepped += 2
        else:
            assert standard.result().result.result == Result.RESULT_INCORRECT_STATE
            assert BUSY in standard.result().result.error_message
        assert stepped > 0, f"burst {burst}: nothing was accepted"
        assert sim.settled(0.3) == start + stepped, f"burst {burst}"
        sim.check_never_backwards()
        time.sleep(0.05)
