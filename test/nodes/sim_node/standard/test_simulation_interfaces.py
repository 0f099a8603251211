"""The ROS standard simulation API (simulation_interfaces) of the sim node, over real DDS
against a real sim process: every feature GetSimulatorFeatures lists is used here over ROS.

One paused sim (no cameras) serves the module; each test leaves it paused. Where
simulation_interfaces is not installed (the plain venv) these skip, and one test checks that
the spec says why the API is off.
"""
from __future__ import annotations

import math
import subprocess
import sys
import threading

import numpy as np
import pytest
from simharness import Observer, new_namespace, start_sim, wait_for
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.description.tf_frames import camera_optical_frames
from robogym_ros.nodes.sim_node.simulation_interfaces.common import UNAVAILABLE
from robogym_ros.nodes.sim_node.simulation_interfaces.services import MAX_STEPS_PER_CALL, SERVICES
from robogym_ros.recorder.bag.reader import read_bag
from robogym_ros.ros import qos
from robogym_ros.ros.stamps import stamp_ns
from robogym_ros.task.scene import default_model_path

pytestmark = pytest.mark.toolchain  # ./dev test-ros: under ../shared/ros-toolchain

DT_NS = 10_000_000
ENTITIES = ["left_base", "right_base", "block", "tray", "overhead", "left_wrist", "right_wrist"]
needs_api = pytest.mark.skipif(bool(UNAVAILABLE), reason=UNAVAILABLE)


def test_without_simulation_interfaces_the_spec_says_why(make_sim):
    if not UNAVAILABLE:
        pytest.skip("simulation_interfaces is installed here: the API is offered (tests below)")
    _, obs = make_sim(start_paused=True, camera_period_s=0.0)
    entry = obs.spec["simulation_interfaces"]
    assert entry["status"].startswith("unavailable: simulation_interfaces is not installed"), entry
    assert entry["services"] == {} and entry["actions"] == {}
    names = [n for n, _ in obs.node.get_service_names_and_types() if n.startswith(f"/{obs.namespace}/")]
    assert names and not [n for n in names if n.rsplit("/", 1)[-1] in SERVICES], names


# --- the sim tier: entities, without ROS -------------------------------------------------------

def scripted_physics():
    from robogym_ros.sim.physics import Physics
    return Physics(default_model_path(), 0.002, 5, seed=3)


def test_entity_queries_leave_the_physics_bit_identical():
    """states() runs kinematics on a scratch MjData: lockstep stays bit-identical to local."""
    from robogym_ros.nodes.motion.scripted_motion import targets_at
    from robogym_ros.sim.entities import SceneEntities
    quiet_run, queried = scripted_physics(), scripted_physics()
    scene = SceneEntities(queried.model)
    for k in range(40):
        for p in (quiet_run, queried):
            p.set_targets(targets_at(k * 0.01))
            p.step_tick()
        scene.states(queried.data)
        a, b = quiet_run.snapshot(), queried.snapshot()
        np.testing.assert_array_equal(a.state, b.state)


def test_entity_states_round_trip_and_follow_the_motion():
    """A set state reads back exactly; each twist is the motion of its pose (a camera on a moving
    arm included), checked against the pose one physics step later."""
    import mujoco

    from robogym_ros.nodes.motion.scripted_motion import targets_at
    from robogym_ros.sim.entities import SceneEntities
    p = scripted_physics()
    scene = SceneEntities(p.model)
    assert scene.names == tuple(ENTITIES) and scene.settable == ("block", "tray")
    for k in range(30):
        p.set_targets(targets_at(k * 0.01))
        p.step_tick()
    row = scene.states(p.data)[2, :13].copy()
    row[:3] = [0.15, 0.0, 0.25]
    row[7:] = [0.1, -0.2, 0.3, 1.0, -2.0, 0.5]
    scene.set_state(p.data, "block", row)
    before = scene.states(p.data)
    np.testing.assert_allclose(before[2, :13], row, atol=1e-15)
    np.testing.assert_allclose(before[2, 13:16], p.model.opt.gravity, atol=1e-12)  # in free flight
    mujoco.mj_step(p.model, p.data)  # semi-implicit Euler: x1 = x0 + h * v1
    after = scene.states(p.data)
    h = p.model.opt.timestep
    for i in (2, 5):  # the block; the left wrist camera, on a moving arm
        assert np.linalg.norm(after[i, 7:10]) > 0.01, scene.names[i]
        # A point on a turning link moves on an arc: a step's chord differs from v by O(h).
        np.testing.assert_allclose((after[i, :3] - before[i, :3]) / h, after[i, 7:10], rtol=2e-3, atol=1e-9)
    # Accelerations are forward dynamics' at the state: with a tiny step, the twist's change is them.
    p.model.opt.timestep = 1e-7
    before = scene.states(p.data)
    mujoco.mj_step(p.model, p.data)
    after = scene.states(p.data)
    assert np.linalg.norm(before[5, 13:16]) > 1.0  # the wrist camera swings
    np.testing.assert_allclose((after[:, 7:13] - before[:, 7:13]) / 1e-7, before[:, 13:], rtol=1e-4, atol=1e-3)


def test_entity_bounds_hold_every_geom_in_world_axes():
    """Each entity's world box: the block's is its turned half sizes around its centre; a free
    body's holds its position; an arm's holds its base and its wrist camera; a camera is a point."""
    import mujoco

    from robogym_ros.sim.entities import SceneEntities
    p = scripted_physics()
    scene = SceneEntities(p.model)
    boxes, states = scene.bounds(p.data), scene.states(p.data)
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, states[2, 3:7])
    half = np.abs(rot.reshape(3, 3)) @ p.model.geom("block").size
    np.testing.assert_allclose(boxes[2], np.concatenate([states[2, :3] - half, states[2, :3] + half]), atol=1e-12)
    for i in range(7):
        assert np.all(boxes[i, :3] <= states[i, :3] + 1e-12) and np.all(states[i, :3] <= boxes[i, 3:] + 1e-12)
    wrist = states[5, :3]
    assert np.all(boxes[0, :3] <= wrist) and np.all(wrist <= boxes[0, 3:]), "the left arm's box misses its hand"
    np.testing.assert_array_equal(boxes[4, :3], boxes[4, 3:])


def test_refused_states_name_the_field_and_change_nothing():
    from robogym_ros.sim.entities import EntityNotMovable, InvalidEntityState, SceneEntities, UnknownEntity
    p = scripted_physics()
    scene = SceneEntities(p.model)
    qpos, qvel = p.data.qpos.copy(), p.data.qvel.copy()
    good = scene.states(p.data)[2, :13]
    for name, change, error, message in (
            ("nope", {}, UnknownEntity, "no entity named 'nope'"),
            ("right_base", {}, EntityNotMovable, "a robot fixed to the world"),
            ("right_wrist", {}, EntityNotMovable, "a camera"),
            ("block", {0: math.nan}, InvalidEntityState, "pose.position.x is nan"),
            ("block", {12: -math.inf}, InvalidEntityState, "twist.angular.z is -inf"),
            ("block", {1: -11.0}, InvalidEntityState, "pose.position.y = -11 m is outside the world"),
            ("block", {7: 1e12}, InvalidEntityState, "|twist.linear| = 1e+12 m/s is beyond the bound"),
            ("block", {7: 6.0, 8: 6.0, 9: 6.0}, InvalidEntityState, "|twist.linear| = 10.3923 m/s"),
            ("block", {12: -51.0}, InvalidEntityState, "|twist.angular| = 51 rad/s is beyond the bound"),
            ("block", {3: 0.5, 4: 0.0, 5: 0.0, 6: 0.0}, InvalidEntityState, "not a unit quaternion (norm 0.5")):
        row = good.copy()
        for i, v in change.items():
            row[i] = v
        with pytest.raises(error, match=message.replace("(", r"\(")):
            scene.set_state(p.data, name, row)
    np.testing.assert_array_equal(p.data.qpos, qpos)
    np.testing.assert_array_equal(p.data.qvel, qvel)


def test_entity_requests_cross_the_process_boundary():
    """The physics process answers states and takes a block's new state; refusals are re-raised
    at the caller as the same exception types."""
    from robogym_ros.sim.entities import EntityNotMovable, InvalidEntityState
    from robogym_ros.sim.loop import LoopConfig
    from robogym_ros.sim.process import SimProcess
    sim = SimProcess(LoopConfig(model_path=default_model_path(), start_paused=True))
    try:
        sim.step()
        time_ns, rows = sim.entity_states()
        assert time_ns == DT_NS and rows.shape == (7, 19)
        row = rows[2, :13].copy()
        row[:3] = [0.1, 0.0, 0.3]
        assert sim.set_entity_state("block", row) == DT_NS
        back = sim.entity_states()[1][2]
        np.testing.assert_array_equal(back[:7], row[:7])  # the pose exactly; the twist up to rounding
        np.testing.assert_allclose(back[7:13], row[7:], rtol=1e-12, atol=1e-15)
        with pytest.raises(EntityNotMovable, match="left_base is a robot"):
            sim.set_entity_state("left_base", row)
        row[0] = math.nan
        with pytest.raises(InvalidEntityState, match="pose.position.x is nan"):
            sim.set_entity_state("block", row)
        sim.step()
        assert sim.recv_tick(5.0).index == 1
        tick = sim.recv_tick(5.0)
        assert tick.index == 2 and tick.object_poses[0][0] == 0.1  # the next tick starts from it
    finally:
        sim.close()


# --- the client side ----------------------------------------------------------------------------

class Client(Observer):
    """The observer, plus a client for every standard service, the action, and the run state."""

    def __init__(self, namespace: str):
        super().__init__(namespace)
        from simulation_interfaces import action, srv

        from robogym_ros.nodes.sim_node.simulation_interfaces.simulate_steps import FEEDBACK_QOS
        base = f"/{namespace}/{contract.SIM_NODE}"
        types = {"get_simulator_features": srv.GetSimulatorFeatures, "get_simulation_state": srv.GetSimulationState,
                 "set_simulation_state": srv.SetSimulationState, "reset_simulation": srv.ResetSimulation,
                 "step_simulation": srv.StepSimulation, "get_entities": srv.GetEntities,
                 "get_entity_info": srv.GetEntityInfo, "get_entity_state": srv.GetEntityState,
                 "get_entities_states": srv.GetEntitiesStates, "set_entity_state": srv.SetEntityState}
        self.types = types
        self.api = {name: self.node.create_client(t, f"{base}/{name}") for name, t in types.items()}
        self.action = self.action_client(action.SimulateSteps, f"{base}/simulate_steps")
        self.states: list[dict] = []
        self.node.create_subscription(String, f"{base}/state", self._keep_state, qos.STATE_QOS)
        # The action's feedback as published: rclpy's ActionClient drops a goal's feedback that
        # arrives after its result (they travel apart), so a burst's tail may never reach a callback.
        self.feedback: list = []
        self.node.create_subscription(action.SimulateSteps.Impl.FeedbackMessage,
                                      f"{base}/simulate_steps/_action/feedback", self._keep(self.feedback),
                                      FEEDBACK_QOS)

    def _keep_state(self, msg):
        with self._lock:
            self.states.append(contract.RunState.from_json(msg.data))

    def api_call(self, name: str, timeout_s: float = 20.0, **fields):
        client = self.api[name]
        assert client.wait_for_service(timeout_sec=timeout_s), f"{name} not offered"
        request = self.types[name].Request()
        for key, value in fields.items():
            setattr(request, key, value)
        future = client.call_async(request)
        self.wait_for(future.done, timeout_s, f"{name} response")
        return future.result()

    def truth_count(self) -> int:
        return len(self.snapshot(self.truth))


@pytest.fixture(scope="module")
def api(ros, tmp_path_factory):
    sim, client = start_sim(new_namespace("api"), tmp_path_factory.mktemp("api"), Client,
                            start_paused=True, camera_period_s=0.0)
    yield client
    client.close()
    assert sim.stop() == 0, sim.output()


def ok(response, what=""):
    from simulation_interfaces.msg import Result
    assert response.result.result == Result.RESULT_OK, (what, response.result.error_message)
    assert response.result.error_message == "", "error_message is for errors"
    return response


def refused(response, code, *fragments):
    assert response.result.result == code, (code, response.result.result, response.result.error_message)
    for fragment in fragments:
        assert fragment in response.result.error_message, (fragment, response.result.error_message)


def sim_state(api) -> int:
    return ok(api.api_call("get_simulation_state")).state.state


def wait_truth(api, count: int) -> list:
    api.wait_for(lambda: api.truth_count() >= count, 20, f"{count} ground-truth ticks")
    return api.snapshot(api.truth)


def settled(api, seconds: float = 0.3) -> int:
    """The number of ticks received once none has come for ``seconds`` (earlier ones all in)."""
    while True:
        n = api.truth_count()
        threading.Event().wait(seconds)
        if api.truth_count() == n:
            return n


def quiet(api, count: int, seconds: float = 0.3) -> None:
    """No tick arrives for a while: the request published nothing."""
    threading.Event().wait(seconds)
    assert api.truth_count() == count, "a tick was published"


def all_states(api) -> tuple[list[str], np.ndarray]:
    from simulation_interfaces.msg import EntityFilters
    r = ok(api.api_call("get_entities_states", filters=EntityFilters()))
    rows = [[s.pose.position.x, s.pose.position.y, s.pose.position.z, s.pose.orientation.w, s.pose.orientation.x,
             s.pose.orientation.y, s.pose.orientation.z, s.twist.linear.x, s.twist.linear.y, s.twist.linear.z,
             s.twist.angular.x, s.twist.angular.y, s.twist.angular.z] for s in r.states]
    return list(r.entities), np.array(rows)


# --- features, state, reset, step -------------------------------------------------------------------

@needs_api
def test_features_list_exactly_what_is_offered(api):
    from simulation_interfaces.msg import SimulatorFeatures as F
    r = api.api_call("get_simulator_features")
    assert sorted(r.features.features) == sorted([
        F.ENTITY_TAGS, F.ENTITY_BOUNDS_BOX, F.ENTITY_CATEGORIES, F.ENTITY_STATE_GETTING, F.ENTITY_STATE_SETTING,
        F.ENTITY_INFO_GETTING,
        F.SIMULATION_RESET, F.SIMULATION_RESET_STATE, F.SIMULATION_STATE_GETTING, F.SIMULATION_STATE_SETTING,
        F.SIMULATION_STATE_PAUSE, F.STEP_SIMULATION_SINGLE, F.STEP_SIMULATION_MULTIPLE, F.STEP_SIMULATION_ACTION])
    assert list(r.features.spawn_formats) == [] and f"({DT_NS} ns of sim time)" in r.features.custom_info
    entry = api.spec["simulation_interfaces"]
    assert entry["status"] == "available"
    assert entry["services"] == {n: f"/{api.namespace}/{contract.SIM_NODE}/{n}" for n in SERVICES}
    assert entry["actions"] == {"simulate_steps": f"/{api.namespace}/{contract.SIM_NODE}/simulate_steps"}
    offered = dict(api.node.get_service_names_and_types())
    for name in SERVICES:
        assert entry["services"][name] in offered, name


@needs_api
def test_step_simulation_advances_exactly_n_ticks_of_a_paused_sim(api):
    """STEP_SIMULATION_SINGLE and _MULTIPLE; the first call also sees the start: STATE_STOPPED."""
    from simulation_interfaces.msg import SimulationState as S
    if not api.snapshot(api.truth):  # the module's first test on this sim: nothing has run yet
        assert sim_state(api) == S.STATE_STOPPED
    before = api.snapshot(api.truth)
    last = stamp_ns(before[-1].header.stamp) if before else 0
    ok(api.api_call("step_simulation", steps=10))
    truth = wait_truth(api, len(before) + 10)
    stamps = [stamp_ns(m.header.stamp) for m in truth[len(before):]]
    assert stamps == [last + k * DT_NS for k in range(1, 11)]
    quiet(api, len(before) + 10)
    assert sim_state(api) == S.STATE_PAUSED
    assert api.snapshot(api.states)[-1] == contract.RunState(True, stamps[-1], "step")
    ok(api.api_call("step_simulation", steps=1))
    assert stamp_ns(wait_truth(api, len(truth) + 1)[-1].header.stamp) == stamps[-1] + DT_NS


@needs_api
def test_bad_step_requests_get_the_standard_error_and_change_nothing(api):
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState as S
    n = settled(api)
    refused(api.api_call("step_simulation", steps=0), Result.RESULT_OPERATION_FAILED, "at least 1, got 0")
    refused(api.api_call("step_simulation", steps=MAX_STEPS_PER_CALL + 1), Result.RESULT_OPERATION_FAILED,
            "simulate_steps action")
    quiet(api, n)
    request_state = S(state=S.STATE_PLAYING)
    ok(api.api_call("set_simulation_state", state=request_state))
    try:
        assert sim_state(api) == S.STATE_PLAYING
        # StepSimulation.srv: "Calling with simulation not paused will return RESULT_OPERATION_FAILED".
        refused(api.api_call("step_simulation", steps=3), Result.RESULT_OPERATION_FAILED, "playing")
        refused(api.api_call("set_simulation_state", state=S(state=S.STATE_PLAYING)), 101, "already")
    finally:
        ok(api.api_call("set_simulation_state", state=S(state=S.STATE_PAUSED)))
    assert sim_state(api) == S.STATE_PAUSED


@needs_api
def test_simulation_state_transitions(api):
    """SIMULATION_STATE_GETTING, _SETTING and _PAUSE: stopped -> paused (no tick) -> playing ->
    paused -> stopped (a reset: a new episode, one tick) -> playing."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState as S
    from simulation_interfaces.srv import SetSimulationState as Set

    def set_state(target):
        return api.api_call("set_simulation_state", state=S(state=target))

    if sim_state(api) != S.STATE_STOPPED:
        ok(set_state(S.STATE_STOPPED))
    n = settled(api)
    refused(set_state(S.STATE_STOPPED), Set.Response.ALREADY_IN_TARGET_STATE)
    ok(set_state(S.STATE_PAUSED))
    assert sim_state(api) == S.STATE_PAUSED
    quiet(api, n)  # from stopped, paused without a tick
    refused(set_state(S.STATE_PAUSED), Set.Response.ALREADY_IN_TARGET_STATE)
    ok(set_state(S.STATE_PLAYING))
    wait_truth(api, n + 5)
    assert sim_state(api) == S.STATE_PLAYING
    ok(set_state(S.STATE_PAUSED))
    assert sim_state(api) == S.STATE_PAUSED
    n = settled(api)
    ok(set_state(S.STATE_STOPPED))
    truth = wait_truth(api, n + 1)
    assert sim_state(api) == S.STATE_STOPPED
    last = api.snapshot(api.states)[-1]  # a reset's state also says which seed's scene it is
    assert (last.paused, last.stamp_ns, last.reason, last.seed) == (True, stamp_ns(truth[-1].header.stamp), "reset", 0)
    for target, code in ((S.STATE_QUITTING, Result.RESULT_FEATURE_UNSUPPORTED),
                         (S.STATE_NO_WORLD, Result.RESULT_FEATURE_UNSUPPORTED), (42, Result.RESULT_OPERATION_FAILED)):
        refused(set_state(target), code)
    quiet(api, n + 1)
    assert sim_state(api) == S.STATE_STOPPED
    ok(set_state(S.STATE_PLAYING))  # from stopped: it plays
    wait_truth(api, n + 3)
    ok(set_state(S.STATE_PAUSED))
    n = settled(api)
    assert api.call("reset").success  # the sim's own reset (std_srvs/Trigger) stops it too
    wait_truth(api, n + 1)
    assert sim_state(api) == S.STATE_STOPPED
    ok(api.api_call("step_simulation", steps=1))
    assert sim_state(api) == S.STATE_PAUSED


@needs_api
def test_reset_simulation_scopes(api):
    """SIMULATION_RESET and SIMULATION_RESET_STATE: SCOPE_STATE is a new episode under the next stamp,
    stopped. Time never goes back here, so SCOPE_TIME is refused, and so is every scope holding its
    bit: SCOPE_ALL ("as if closed and launched again") and SCOPE_DEFAULT (the same as SCOPE_ALL)
    answered OK without resetting time; SCOPE_SPAWNED too (nothing is spawned). Refused: nothing changes."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState as S
    from simulation_interfaces.srv import ResetSimulation as R
    ok(api.api_call("step_simulation", steps=2))
    n = settled(api)
    last = stamp_ns(api.snapshot(api.truth)[-1].header.stamp)
    ok(api.api_call("reset_simulation", scope=R.Request.SCOPE_STATE))
    truth = wait_truth(api, n + 1)
    assert stamp_ns(truth[-1].header.stamp) == last + DT_NS  # time goes on
    assert sim_state(api) == S.STATE_STOPPED
    assert api.snapshot(api.states)[-1].reason == "reset"
    ok(api.api_call("step_simulation", steps=1))
    n, states = settled(api), len(api.snapshot(api.states))
    for scope, code, fragment in (
            (R.Request.SCOPE_TIME, Result.RESULT_FEATURE_UNSUPPORTED, "sim time never goes back"),
            (R.Request.SCOPE_ALL, Result.RESULT_FEATURE_UNSUPPORTED, "SCOPE_ALL (255)"),
            (R.Request.SCOPE_DEFAULT, Result.RESULT_FEATURE_UNSUPPORTED, "SCOPE_DEFAULT (0)"),
            (R.Request.SCOPE_TIME | R.Request.SCOPE_STATE, Result.RESULT_FEATURE_UNSUPPORTED, "sim time never"),
            (R.Request.SCOPE_SPAWNED, Result.RESULT_FEATURE_UNSUPPORTED, "nothing is ever spawned"),
            (R.Request.SCOPE_STATE | R.Request.SCOPE_SPAWNED, Result.RESULT_FEATURE_UNSUPPORTED, "spawned"),
            (16, Result.RESULT_OPERATION_FAILED, "16 is no scope")):
        refused(api.api_call("reset_simulation", scope=scope), code, fragment, "SCOPE_STATE (2) is what a reset does")
    quiet(api, n)
    assert len(api.snapshot(api.states)) == states and sim_state(api) == S.STATE_PAUSED  # nothing changed


@needs_api
def test_simulate_steps_action_feedback_per_step_result_and_cancel(api):
    """STEP_SIMULATION_ACTION: a feedback per tick, the ticks on the wire; cancel stops between ticks."""
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState as S
    assert api.action.wait_for_server(timeout_sec=20)

    def send(steps, cancel_after=None):
        sent = api.action.send_goal_async(SimulateSteps.Goal(steps=steps))
        api.wait_for(sent.done, 20, "goal response")
        handle = sent.result()
        assert handle.accepted
        uuid = bytes(handle.goal_id.uuid)

        def feedback():
            return [(m.feedback.completed_steps, m.feedback.remaining_steps) for m in api.snapshot(api.feedback)
                    if bytes(m.goal_id.uuid) == uuid]
        if cancel_after is not None:
            api.wait_for(lambda: len(feedback()) >= cancel_after, 20, "feedback before cancel")
            cancel = handle.cancel_goal_async()
            api.wait_for(cancel.done, 20, "cancel response")
        done = handle.get_result_async()
        api.wait_for(done.done, 60, "result")
        return done.result(), feedback

    n = settled(api)
    last = stamp_ns(api.snapshot(api.truth)[-1].header.stamp)
    outcome, feedback = send(20)
    assert outcome.status == 4  # GoalStatus.STATUS_SUCCEEDED
    ok(outcome.result)
    api.wait_for(lambda: len(feedback()) >= 20, 10, "20 feedback messages")
    assert feedback() == [(k, 20 - k) for k in range(1, 21)]
    truth = wait_truth(api, n + 20)
    assert [stamp_ns(m.header.stamp) for m in truth[n:]] == [last + k * DT_NS for k in range(1, 21)]
    quiet(api, n + 20)
    assert api.snapshot(api.states)[-1] == contract.RunState(True, last + 20 * DT_NS, "step")

    n = settled(api)
    outcome, feedback = send(1_000_000, cancel_after=5)
    assert outcome.status == 5, outcome.result.result.error_message  # GoalStatus.STATUS_CANCELED
    ok(outcome.result)
    quiet(api, api.truth_count())
    done = api.truth_count() - n  # ticks it stepped: a feedback for each, no more
    assert 5 <= done < 1_000_000
    api.wait_for(lambda: len(feedback()) >= done, 10, f"{done} feedback messages")
    assert feedback() == [(k, 1_000_000 - k) for k in range(1, done + 1)]
    assert sim_state(api) == S.STATE_PAUSED

    n = settled(api)
    outcome, feedback = send(0)
    assert outcome.status == 6 and feedback() == []  # GoalStatus.STATUS_ABORTED
    refused(outcome.result, Result.RESULT_OPERATION_FAILED, "at least 1")
    ok(api.api_call("set_simulation_state", state=S(state=S.STATE_PLAYING)))
    try:
        outcome, _ = send(5)
        assert outcome.status == 6
        refused(outcome.result, Result.RESULT_OPERATION_FAILED, "playing")  # as SimulateSteps.action says
    finally:
        ok(api.api_call("set_simulation_state", state=S(state=S.STATE_PAUSED)))


@needs_api
def test_a_simulate_steps_goal_cancelled_as_soon_as_it_is_accepted_ends_canceled(api):
    """A client that cancels from the goal response's own callback lands before or just after the
    goal starts stepping: each of 20 goals of 2000 steps ends CANCELED with the cancel accepted
    (not ERROR_GOAL_TERMINATED after all 2000), and the sim paused where the goal stopped (a goal
    cancelled before its first step leaves the state it found: STOPPED at an episode's start)."""
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import SimulationState as S
    assert api.action.wait_for_server(timeout_sec=20)
    steps = 2000
    for attempt in range(20):
        n, before = settled(api), sim_state(api)
        cancels = []

        def cancel_at_once(future):
            cancels.append(future.result().cancel_goal_async())

        sent = api.action.send_goal_async(SimulateSteps.Goal(steps=steps))
        sent.add_done_callback(cancel_at_once)
        api.wait_for(lambda: cancels and cancels[0].done(), 20, "the cancel's answer")
        answer = cancels[0].result()
        assert answer.return_code == 0 and len(answer.goals_canceling) == 1, (attempt, answer)
        result = sent.result().get_result_async()
        api.wait_for(result.done, 60, "the goal's result")
        assert result.result().status == 5, (attempt, result.result())  # GoalStatus.STATUS_CANCELED
        ok(result.result().result)
        quiet(api, api.truth_count())
        stepped = api.truth_count() - n
        assert stepped < steps, attempt  # stopped short
        assert sim_state(api) == (S.STATE_PAUSED if stepped else before), (attempt, stepped)


@needs_api
def test_a_client_with_the_readme_qos_gets_a_feedback_for_every_step(api):
    """The docs' client (docs/ros_standard_api.md): an rclpy ActionClient with
    feedback_sub_qos_profile=QoSProfile(depth=1000) and a feedback callback, that asks for the
    result once the feedback says remaining_steps 0 (rclpy drops a goal's feedback that is still
    queued when its result comes): every step's feedback, in order. The default depth of 10 lost
    ~20 % of them (2,962 of 3,618)."""
    from rclpy.qos import QoSProfile
    from simulation_interfaces.action import SimulateSteps
    client = api.action_client(SimulateSteps, api.spec["simulation_interfaces"]["actions"]["simulate_steps"],
                               feedback_sub_qos_profile=QoSProfile(depth=1000))
    try:
        assert client.wait_for_server(timeout_sec=20)
        heard: list = []
        steps = 3000
        sent = client.send_goal_async(SimulateSteps.Goal(steps=steps), feedback_callback=lambda m: heard.append(
            (m.feedback.completed_steps, m.feedback.remaining_steps)))
        api.wait_for(sent.done, 20, "goal response")
        api.wait_for(lambda: heard and heard[-1][1] == 0, 120, "the last step's feedback")
        done = sent.result().get_result_async()
        api.wait_for(done.done, 20, "the result")
        assert done.result().status == 4  # GoalStatus.STATUS_SUCCEEDED
        assert heard == [(k, steps - k) for k in range(1, steps + 1)]
    finally:
        api.destroy_action_client(client)


# --- entities ---------------------------------------------------------------------------------------

@needs_api
def test_get_entities_and_their_filters(api):
    """ENTITY_TAGS, ENTITY_CATEGORIES and ENTITY_BOUNDS_BOX: name (regular expression), category,
    tag and bounds (sphere, box) filters."""
    from simulation_interfaces.msg import Bounds, EntityCategory, EntityFilters, Result, TagsFilter

    def names(**kwargs):
        return list(ok(api.api_call("get_entities", filters=EntityFilters(**kwargs))).entities)

    assert names() == ENTITIES
    assert names(filter="^left") == ["left_base", "left_wrist"]
    assert names(filter="wrist|tray") == ["tray", "left_wrist", "right_wrist"]
    robot = EntityCategory(category=EntityCategory.CATEGORY_ROBOT)
    static = EntityCategory(category=EntityCategory.CATEGORY_STATIC_OBJECT)
    assert names(categories=[robot]) == ["left_base", "right_base"]
    assert names(categories=[robot, static]) == ["left_base", "right_base", "overhead"]
    assert names(tags=TagsFilter(tags=["movable"])) == ["block", "tray"]
    assert names(tags=TagsFilter(tags=["robot", "movable"])) == ["left_base", "right_base", "block", "tray"]
    assert names(tags=TagsFilter(tags=["camera", "movable"], filter_mode=TagsFilter.FILTER_MODE_ALL)) == []
    assert names(filter="right", tags=TagsFilter(tags=["camera"])) == ["right_wrist"]
    from geometry_msgs.msg import Vector3

    def bounds(kind, *points):
        return Bounds(type=kind, points=[Vector3(x=float(x), y=float(y), z=float(z)) for x, y, z in points])

    _, rows = all_states(api)
    block, tray = rows[2, :3], rows[3, :3]
    assert names(bounds=bounds(Bounds.TYPE_SPHERE, block, (1e-3, 0, 0))) == ["block"]
    assert names(bounds=bounds(Bounds.TYPE_SPHERE, (0.12, 0.0, 0.6), (1e-3, 0, 0))) == ["overhead"]
    assert names(bounds=bounds(Bounds.TYPE_SPHERE, (0.0, 0.0, 5.0), (0.5, 0, 0))) == []
    assert names(bounds=bounds(Bounds.TYPE_BOX, (1, 1, 1), (-1, -1, -1))) == ENTITIES
    assert names(bounds=bounds(Bounds.TYPE_BOX, tray + 0.01, tray - 0.01)) == ["tray"]
    assert names(bounds=bounds(Bounds.TYPE_BOX, (-1, -1, 0.55), (1, 1, 1)), tags=TagsFilter(tags=["camera"])) \
        == ["overhead"]
    r = ok(api.api_call("get_entities_states", filters=EntityFilters(bounds=bounds(Bounds.TYPE_SPHERE, block,
                                                                                   (1e-3, 0, 0)))))
    assert list(r.entities) == ["block"] and r.states[0].pose.position.x == block[0]
    for bad, code, fragment in (
            (bounds(Bounds.TYPE_CONVEX_HULL, (0, 0, 0), (1, 0, 0), (0, 1, 0)), Result.RESULT_FEATURE_UNSUPPORTED,
             "only TYPE_SPHERE (3) and TYPE_BOX (1)"),
            (bounds(Bounds.TYPE_SPHERE, (0, 0, 0)), Result.RESULT_OPERATION_FAILED, "needs 2 finite points"),
            (bounds(Bounds.TYPE_SPHERE, (0, 0, 0), (-1, 0, 0)), Result.RESULT_OPERATION_FAILED, "radius -1 < 0"),
            (bounds(Bounds.TYPE_BOX, (0, 0, 0), (math.nan, 0, 0)), Result.RESULT_OPERATION_FAILED, "finite"),
            (bounds(Bounds.TYPE_EMPTY, (0, 0, 0)), Result.RESULT_OPERATION_FAILED, "TYPE_EMPTY but has 1 points"),
            # No type of the standard: a bad request (was RESULT_FEATURE_UNSUPPORTED).
            (bounds(9, (0, 0, 0), (1, 0, 0)), Result.RESULT_OPERATION_FAILED, "type 9 is no Bounds type")):
        refused(api.api_call("get_entities", filters=EntityFilters(bounds=bad)), code, fragment)
    refused(api.api_call("get_entities", filters=EntityFilters(filter="(")), Result.RESULT_OPERATION_FAILED,
            "not a regular expression")
    refused(api.api_call("get_entities", filters=EntityFilters(tags=TagsFilter(tags=["x"], filter_mode=7))),
            Result.RESULT_OPERATION_FAILED, "filter_mode 7")


@needs_api
def test_get_entity_info(api):
    """ENTITY_INFO_GETTING: category, tags and what the pose is."""
    from simulation_interfaces.msg import EntityCategory as C
    from simulation_interfaces.msg import Result
    expected = {"left_base": (C.CATEGORY_ROBOT, "robot"), "block": (C.CATEGORY_OBJECT, "movable"),
                "overhead": (C.CATEGORY_STATIC_OBJECT, "camera"), "left_wrist": (C.CATEGORY_OBJECT, "camera")}
    for name, (category, tag) in expected.items():
        info = ok(api.api_call("get_entity_info", entity=name)).info
        assert info.category.category == category and tag in info.tags, (name, info)
        assert name in info.description
    assert "overhead_optical_frame" in ok(api.api_call("get_entity_info", entity="overhead")).info.description
    refused(api.api_call("get_entity_info", entity="no_such"), Result.RESULT_NOT_FOUND, "no entity named 'no_such'",
            "block")


@needs_api
def test_entity_states_are_ground_truth_in_world(api):
    """ENTITY_STATE_GETTING: the free bodies' poses are the ground truth of the last tick, bit for
    bit; the fixed camera's is its optical frame from the model; the arm bases do not move."""
    from simulation_interfaces.msg import Result
    n = settled(api)
    ok(api.api_call("step_simulation", steps=3))
    truth = wait_truth(api, n + 3)[-1]
    api.wait_for(lambda: stamp_ns(api.snapshot(api.objects)[-1].header.stamp) == stamp_ns(truth.header.stamp),
                 10, "the object poses of that tick")
    poses = api.snapshot(api.objects)[-1].poses
    for i, name in enumerate(("block", "tray")):
        state = ok(api.api_call("get_entity_state", entity=name)).state
        assert state.header.frame_id == "world" and state.header.stamp == truth.header.stamp
        assert state.pose == poses[i], name
    names, rows = all_states(api)
    assert names == ENTITIES and rows.shape == (7, 13) and np.isfinite(rows).all()
    np.testing.assert_array_equal(rows[0, :7], [-0.0388, 0.2, 0.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(rows[:2, 7:], 0.0)
    import mujoco
    overhead = next(t for t in camera_optical_frames(mujoco.MjModel.from_xml_path(default_model_path()))
                    if t.child == "overhead_optical_frame")
    np.testing.assert_allclose(rows[4, :3], overhead.translation, atol=1e-12)
    x, y, z, w = overhead.rotation_xyzw
    assert abs(abs(np.dot(rows[4, 3:7], [w, x, y, z])) - 1.0) < 1e-9  # the same rotation (q or -q)
    refused(api.api_call("get_entity_state", entity="left_arm"), Result.RESULT_NOT_FOUND, "left_base")


def state_msg(x, y, z, qw=1.0, qx=0.0, qy=0.0, qz=0.0, linear=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0),
              frame_id=""):
    from simulation_interfaces.msg import EntityState
    s = EntityState()
    s.header.frame_id = frame_id
    s.pose.position.x, s.pose.position.y, s.pose.position.z = x, y, z
    o = s.pose.orientation
    o.w, o.x, o.y, o.z = qw, qx, qy, qz
    s.twist.linear.x, s.twist.linear.y, s.twist.linear.z = linear
    s.twist.angular.x, s.twist.angular.y, s.twist.angular.z = angular
    return s


@needs_api
def test_set_entity_state_moves_the_block_in_the_next_ground_truth(api):
    """ENTITY_STATE_SETTING: read back at once; the next tick's ground truth starts from it."""
    ok(api.api_call("set_entity_state", entity="block", state=state_msg(0.15, 0.0, 0.2, 0.0, 0.0, 0.0, 1.0,
                                                                         linear=(0.5, 0.0, 0.0))))
    state = ok(api.api_call("get_entity_state", entity="block")).state
    assert (state.pose.position.x, state.pose.position.y, state.pose.position.z) == (0.15, 0.0, 0.2)
    assert (state.pose.orientation.w, state.pose.orientation.z) == (0.0, 1.0)
    assert state.twist.linear.x == 0.5
    a = state.acceleration  # in free flight: gravity alone
    assert (a.linear.x, a.linear.y, a.linear.z) == pytest.approx((0.0, 0.0, -9.81), abs=1e-9)
    n = settled(api)
    ok(api.api_call("step_simulation", steps=1))
    wait_truth(api, n + 1)
    api.wait_for(lambda: len(api.snapshot(api.objects)) >= n + 1, 10, "object poses")
    block = api.snapshot(api.objects)[-1].poses[0]
    # One free-flying tick (10 ms) from the set state: 5 mm along x, a little fall, no turn.
    assert block.position.x == pytest.approx(0.155, abs=1e-9) and block.position.y == 0.0
    assert 0.199 < block.position.z < 0.2
    assert abs(block.orientation.z) == pytest.approx(1.0, abs=1e-9)
    ok(api.api_call("set_entity_state", entity="tray", state=state_msg(0.2, 0.0, 0.0)))
    ok(api.api_call("step_simulation", steps=1))
    api.wait_for(lambda: len(api.snapshot(api.objects)) >= n + 2, 10, "object poses")
    assert api.snapshot(api.objects)[-1].poses[1].position.x == pytest.approx(0.2, abs=1e-4)


BAD_STATES = [  # entity, state_msg arguments, code, what the message names
    ("no_such", (0.1, 0.0, 0.1), {}, 2, "no entity named 'no_such'"),
    ("left_base", (0.1, 0.0, 0.1), {}, 4, "a robot fixed to the world"),
    ("overhead", (0.1, 0.0, 0.1), {}, 4, "a camera"),
    ("block", (math.nan, 0.0, 0.1), {}, 101, "pose.position.x is nan"),
    ("block", (0.1, 0.0, 0.1), {"linear": (0.0, math.inf, 0.0)}, 101, "twist.linear.y is inf"),
    ("block", (0.1, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0), {}, 101, "not a unit quaternion (norm 0"),
    ("block", (0.1, 0.0, 0.1), {"linear": (1e12, 0.0, 0.0)}, 101, "|twist.linear| = 1e+12 m/s is beyond"),
    ("block", (0.1, 0.0, 0.1), {"angular": (0.0, 0.0, 60.0)}, 101, "|twist.angular| = 60 rad/s is beyond"),
    ("block", (0.1, 0.0, 50.0), {}, 101, "pose.position.z = 50 m is outside the world"),
    ("block", (0.1, 0.0, 0.1), {"frame_id": "foo"}, 2, "'foo' is no frame of this sim"),  # was 0 (unsupported)
    ("block", (0.1, 0.0, 0.1), {"frame_id": "left_base"}, 0, "not relative to a link"),  # a frame there is
    ("block", (0.1, 0.0, 0.1), {"frame_id": "tray"}, 0, "'tray'"),
]


@needs_api
def test_bad_set_entity_state_gets_the_standard_error_and_changes_nothing(api):
    names, before = all_states(api)
    n = settled(api)
    for entity, args, kwargs, code, fragment in BAD_STATES:
        refused(api.api_call("set_entity_state", entity=entity, state=state_msg(*args, **kwargs)), code, fragment)
    after_names, after = all_states(api)
    assert after_names == names
    np.testing.assert_array_equal(after, before)
    quiet(api, n)


@needs_api
def test_recorder_sees_a_moved_block_without_a_false_alarm(api, tmp_path):
    """The recorder checks a run with SetEntityState in the middle: a pass with no finding, and
    its bag's ground truth shows the block where it was put from the next tick on."""
    bag = tmp_path / "moved_block"
    log = open(tmp_path / "recorder.log", "w+")
    recorder = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.recorder", "--ticks", "200",
                                 "--record", str(bag), "--json", str(tmp_path / "verdict.json"),
                                 "--ros-args", "-r", f"__ns:=/{api.namespace}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for topic in (contract.JOINT_STATES, contract.TRUTH_JOINTS, contract.TRUTH_OBJECTS):
            name = f"/{api.namespace}/{topic}"  # the observer's subscription and the recorder's
            wait_for(lambda: api.node.count_subscribers(name) >= 2, 30, f"the recorder on {topic}")
        n = settled(api)
        ok(api.api_call("step_simulation", steps=50))
        set_after = stamp_ns(wait_truth(api, n + 50)[-1].header.stamp)
        ok(api.api_call("set_entity_state", entity="block", state=state_msg(0.15, 0.05, 0.3)))
        while recorder.poll() is None:
            ok(api.api_call("step_simulation", steps=25))
            threading.Event().wait(0.05)
        rc = recorder.wait(30)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
        log.seek(0)
        out = log.read()
        log.close()
    import json
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert rc == 0 and verdict["status"] == "pass", out
    assert [f for c in verdict["checks"] for f in c["findings"]] == [], out
    poses = read_bag(bag).object_poses
    k = int(np.searchsorted(poses.stamp_ns, set_after + DT_NS))
    assert poses.stamp_ns[k] == set_after + DT_NS
    assert poses.poses[k, 0, 0] == pytest.approx(0.15, abs=1e-9) and poses.poses[k, 0, 1] == pytest.approx(0.05)
    assert 0.299 < poses.poses[k, 0, 2] < 0.3
    assert np.max(np.abs(poses.poses[k - 1, 0, :3] - [0.15, 0.05, 0.3])) > 0.05  # elsewhere before


@needs_api
def test_a_blow_up_ends_the_steps_early_and_a_goal_ends_with_the_sim(make_sim):
    """Steps that blow the scene up answer how far they got; a sim stopped during a goal aborts
    it with the reason and still exits 0 within 2 s."""
    import time

    from simharness import MODELS
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState as S
    sim, api = make_sim(Client, model=str(MODELS / "unstable.xml"), start_paused=True, camera_period_s=0.0)
    api.send(["spin"], [1.0])  # a stiff servo on a tiny inertia: any move diverges
    api.wait_for(lambda: api.diag_values().get("commands_accepted") == "1", 20, "the command taken")
    refused(api.api_call("step_simulation", steps=100), Result.RESULT_OPERATION_FAILED, "blew up at tick",
            "of 100 steps")
    assert sim_state(api) == S.STATE_STOPPED  # the blow-up reset the scene: a new episode, paused
    assert api.action.wait_for_server(timeout_sec=20)
    api.send(["spin"], [1.0])  # the reset dropped the target: again
    api.wait_for(lambda: api.diag_values().get("commands_accepted") == "2", 20, "the command taken")
    sent = api.action.send_goal_async(SimulateSteps.Goal(steps=100))
    api.wait_for(sent.done, 20, "goal response")
    result = sent.result().get_result_async()
    api.wait_for(result.done, 30, "the goal's result")
    assert result.result().status == 6  # GoalStatus.STATUS_ABORTED
    refused(result.result().result, Result.RESULT_OPERATION_FAILED, "blew up at tick", "of 100 steps")
    sent = api.action.send_goal_async(SimulateSteps.Goal(steps=1_000_000))
    api.wait_for(sent.done, 20, "goal response")
    result = sent.result().get_result_async()
    api.wait_for(lambda: len(api.snapshot(api.feedback)) >= 10, 20, "the goal running")
    started = time.monotonic()
    assert sim.stop() == 0, sim.output()
    assert time.monotonic() - started < 2.0
    api.wait_for(result.done, 10, "the goal's result")
    assert result.result().status == 6  # GoalStatus.STATUS_ABORTED
    refused(result.result().result, Result.RESULT_OPERATION_FAILED, "shutting down")
