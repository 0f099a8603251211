"""FollowJointTrajectory action servers with JointTrajectoryController semantics
(robogym_ros.nodes.sim_node.arm_controllers.controllers): real goals over DDS to one sim shared by the module, judged
against the sim's ground truth. They need control_msgs (the shared ROS toolchain has it) and
skip with the reason elsewhere; the first tests need no ROS messages at all."""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
import yaml

from robogym_ros.nodes.sim_node.arm_controllers import controllers as arms
from robogym_ros.nodes.sim_node.arm_controllers import goal as jtc_goal
from robogym_ros.sim.commands import validate_trajectory
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import JOINT_NAMES, default_model_path

pytestmark = pytest.mark.toolchain  # ./dev test-ros: under ../shared/ros-toolchain

S = 1_000_000_000
LEFT = arms.controller_joints(JOINT_NAMES)["left_arm_controller"]
RIGHT = arms.controller_joints(JOINT_NAMES)["right_arm_controller"]
MOVEIT_YAML = Path(__file__).parents[4] / "config" / "moveit_controllers.yaml"
needs_control_msgs = pytest.mark.skipif(bool(arms.UNAVAILABLE), reason=arms.UNAVAILABLE or "")


def _point(positions, t_s, velocities=()):
    sec, nanosec = divmod(round(t_s * S), S)
    return NS(positions=list(positions), velocities=list(velocities), accelerations=[], effort=[],
              time_from_start=NS(sec=sec, nanosec=nanosec))


# --- without ROS messages --------------------------------------------------------------------
def test_two_controllers_follow_at_once_and_a_topic_trajectory_takes_only_its_joints():
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    ranges = {j.name: (j.lower, j.upper) for j in physics.joints}

    def command(names, target, controller):
        c = validate_trajectory(names, [_point([target] * len(names), 0.5)], 0, ranges)
        return dataclasses.replace(c, controller=controller)

    physics.set_trajectory(command(("left_shoulder_pan", "left_elbow_flex"), 0.4, "left_arm_controller"))
    physics.set_trajectory(command(("right_shoulder_pan",), -0.4, "right_arm_controller"))
    physics.set_trajectory(command(("left_elbow_flex",), 0.8, ""))  # the topic takes the elbow only
    for _ in range(80):
        physics.step_tick()
    q = dict(zip(physics.joint_names, physics.snapshot().position))
    # Both controllers' trajectories ran to the end at once (one follower per controller) ...
    assert q["left_shoulder_pan"] == pytest.approx(0.4, abs=2e-3)
    assert q["right_shoulder_pan"] == pytest.approx(-0.4, abs=2e-3)
    # ... and the newer topic trajectory owned the elbow.
    assert q["left_elbow_flex"] == pytest.approx(0.8, abs=2e-3)


def test_moveit_yaml_names_the_controllers_and_joints_the_sim_builds():
    config = yaml.safe_load(MOVEIT_YAML.read_text())
    manager = config["moveit_simple_controller_manager"]
    assert config["moveit_controller_manager"] == "moveit_simple_controller_manager/MoveItSimpleControllerManager"
    table = arms.controller_joints(JOINT_NAMES)
    assert manager["controller_names"] == list(table)
    for name, joints in table.items():
        assert manager[name]["type"] == "FollowJointTrajectory"
        assert manager[name]["action_ns"] == arms.ACTION
        assert tuple(manager[name]["joints"]) == joints, name


def test_without_control_msgs_nothing_is_created_and_commands_still_reach_the_physics():
    if not arms.UNAVAILABLE:
        pytest.skip("control_msgs is installed here: the controllers are served (tests below)")
    sent = []
    node = NS(get_logger=lambda: NS(warning=lambda m: None))
    sim = NS(set_targets=sent.append, set_trajectory=sent.append)
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    controllers = arms.ArmControllers(node, sim, physics.joints, default_model_path())
    assert controllers.spec().startswith("unavailable: control_msgs is not installed")
    assert controllers.controllers == {}
    controllers.set_targets({"left_gripper": 0.5})
    assert sent == [{"left_gripper": 0.5}]
    controllers.close()


@needs_control_msgs
def test_ticks_that_meet_the_controllers_closing_never_reach_a_destroyed_publisher(ros):
    """The sim node closes its controllers while the tick pump still hands them ticks: a tick
    must never reach a controller whose state publisher is already destroyed (it raised
    InvalidHandle on the pump thread and ended it)."""
    import threading

    import rclpy
    node = rclpy.create_node("robogym_sim", namespace=f"/closing_{time.monotonic_ns() % 10**9}")
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    sim = NS(set_targets=lambda *_: None, set_trajectory=lambda *_: None, hold=lambda *_a, **_k: None)
    controllers = arms.ArmControllers(node, sim, physics.joints, default_model_path())
    tick = physics.snapshot()
    errors, stop, handed = [], threading.Event(), [0]

    def pump():  # every tick due a controller_state message: the publisher is used each time
        while not stop.is_set():
            handed[0] += 1
            try:
                controllers.on_tick(tick._replace(stamp_ns=handed[0] * arms.STATE_PERIOD_NS))
            except Exception as exc:  # noqa: BLE001 - what the pump thread would have died of
                errors.append(f"{type(exc).__name__}: {exc}")
                return
    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        time.sleep(0.3)
        before = handed[0]
        controllers.close()
        time.sleep(0.1)
    finally:
        stop.set()
        thread.join(5)
        node.destroy_node()
    assert before > 10 and handed[0] > before, "the pump never ran beside the closing"
    assert errors == []


# --- over ROS ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rig(ros, tmp_path_factory):
    """One sim (real time, no cameras) and action clients for its four controllers."""
    from simharness import new_namespace, start_sim
    sim, obs = start_sim(new_namespace("jtc"), tmp_path_factory.mktemp("jtc"), camera_period_s=0.0)
    from rclpy.qos import QoSProfile
    clients = {name: obs.action_client(arms.FollowJointTrajectory, obs.spec["controllers"][name]["action"],
                                       feedback_sub_qos_profile=QoSProfile(depth=1000))  # every tick's, kept
               for name in arms.controller_joints(JOINT_NAMES)}
    for name, client in clients.items():
        assert client.wait_for_server(timeout_sec=10), f"{name}: no action server\n{sim.output()}"
    yield NS(sim=sim, obs=obs, clients=clients)
    for client in clients.values():
        obs.destroy_action_client(client)
    obs.close()
    assert sim.stop() == 0, sim.output()


def goal_msg(names, points, *, stamp_ns=0, path=None, goal=None, goal_time_s=0.0, velocities=True):
    """A FollowJointTrajectory goal; ``points``: (positions, t_s); ``path``/``goal``: {joint: tol}."""
    from control_msgs.msg import JointTolerance
    from trajectory_msgs.msg import JointTrajectoryPoint
    g = arms.FollowJointTrajectory.Goal()
    g.trajectory.header.stamp.sec, g.trajectory.header.stamp.nanosec = divmod(stamp_ns, S)
    g.trajectory.joint_names = list(names)
    for positions, t_s in points:
        p = JointTrajectoryPoint(positions=[float(v) for v in positions])
        if velocities:
            p.velocities = [0.0] * len(positions)
        p.time_from_start.sec, p.time_from_start.nanosec = divmod(round(t_s * S), S)
        g.trajectory.points.append(p)
    g.path_tolerance = [JointTolerance(name=n, position=float(t)) for n, t in (path or {}).items()]
    g.goal_tolerance = [JointTolerance(name=n, position=float(t)) for n, t in (goal or {}).items()]
    g.goal_time_tolerance.sec, g.goal_time_tolerance.nanosec = divmod(round(goal_time_s * S), S)
    return g


class Sent:
    def __init__(self, rig, controller: str, goal):
        self.rig, self.feedback = rig, []
        future = rig.clients[controller].send_goal_async(goal, feedback_callback=lambda m: self.feedback.append(
            m.feedback))
        rig.obs.wait_for(future.done, 10, "goal response")
        self.handle = future.result()
        assert self.handle.accepted  # every goal is accepted; a bad one ends at once with its code
        self.result_future = self.handle.get_result_async()

    def result(self, timeout_s: float = 20.0):
        self.rig.obs.wait_for(self.result_future.done, timeout_s, "goal result")
        r = self.result_future.result()
        return r.status, r.result.error_code, r.result.error_string

    def reached_ns(self) -> int:
        """The sim time a successful goal ended at, as its error_string says. Feedback and result
        travel apart: rclpy's client drops feedback that comes after the result."""
        return _sim_time(self.result()[2], r"reached point \d+ at ([\d.]+) s")

    def started_ns(self) -> int:
        return _sim_time(self.result()[2], r"it started at ([\d.]+) s")

    def cancel(self):
        future = self.handle.cancel_goal_async()
        self.rig.obs.wait_for(future.done, 10, "cancel response")


def _sim_time(text: str, pattern: str) -> int:
    match = re.search(pattern, text)
    assert match, (pattern, text)
    return round(float(match.group(1)) * S)


def stamp_of(msg) -> int:
    return msg.header.stamp.sec * S + msg.header.stamp.nanosec


def truth_q(rig, names) -> tuple[np.ndarray, np.ndarray]:
    """Ground truth (stamps, positions of ``names``) received so far."""
    msgs = rig.obs.snapshot(rig.obs.truth)
    order = list(msgs[-1].name)
    stamps = np.array([m.header.stamp.sec * S + m.header.stamp.nanosec for m in msgs])
    q = np.array([[m.position[order.index(n)] for n in names] for m in msgs])
    return stamps, q


def current(rig, names, from_ns: int = 0) -> list[float]:
    """The newest ground truth received, of a tick at ``from_ns`` or later (a loaded machine
    delivers the observer's truth late: a goal's result can come before its last ticks' truth)."""
    rig.obs.wait_for(lambda: (m := rig.obs.snapshot(rig.obs.truth)) and stamp_of(m[-1]) >= from_ns, 20,
                     f"ground truth of a tick at {from_ns / S:.3f} s or later")
    return truth_q(rig, names)[1][-1].tolist()


SUCCEEDED, CANCELED, ABORTED = 4, 5, 6  # action_msgs/msg/GoalStatus
READY = (0.3, -0.3, 0.45, 0.8, 0.0)
OTHER = (-0.3, -0.5, 0.8, 1.0, 0.5)
ELBOW = "left_elbow_flex"
BAD_GOALS = [  # (goal, code, words its error_string must have)
    (dict(names=[*LEFT[:4], "right_elbow_flex"], points=[(READY, 1)]), jtc_goal.INVALID_JOINTS,
     "joint 'right_elbow_flex' is not a joint of left_arm_controller"),
    (dict(names=[ELBOW, ELBOW], points=[((0.5, 0.5), 1)]), jtc_goal.INVALID_JOINTS, f"joint '{ELBOW}' appears more"),
    (dict(names=LEFT, points=[(READY, 1), ((*READY[:2], 2.5, *READY[3:]), 2)]), jtc_goal.INVALID_GOAL,
     f"point 1: position for '{ELBOW}' is 2.5, outside its range"),
    (dict(names=LEFT, points=[(READY, 1), ((*READY[:2], float("nan"), *READY[3:]), 2)]), jtc_goal.INVALID_GOAL,
     f"point 1: position for '{ELBOW}' is not finite"),
    (dict(names=LEFT, points=[(READY, 1), (OTHER, 1)]), jtc_goal.INVALID_GOAL,
     "point 1: time_from_start 1 s is not after point 0's 1 s"),
    (dict(names=LEFT, points=[(READY, 1), (READY[:4], 2)]), jtc_goal.INVALID_GOAL,
     "point 1: len(positions) = 4 but len(joint_names) = 5"),
    (dict(names=LEFT, points=[(READY, 1)], path={ELBOW: -0.5}), jtc_goal.INVALID_GOAL,
     f"path_tolerance[0]: position tolerance for '{ELBOW}' is -0.5"),
    (dict(names=LEFT, points=[(READY, 1)], stamp_ns=1 * S), jtc_goal.OLD_HEADER_TIMESTAMP,
     "the trajectory ends at 2 s (point 0), before the sim's time"),
    (dict(names=LEFT, points=[(READY, 1)], stamp_ns=time.time_ns()), jtc_goal.INVALID_GOAL,
     "it is the wall clock"),
]


def duck_goal(names, points, *, stamp_ns=0, path=None, goal=None, goal_time_s=0.0):
    """The goal_msg fields, duck-typed: validation needs no control_msgs."""
    def tolerances(d):
        return [NS(name=n, position=t, velocity=0.0, acceleration=0.0) for n, t in (d or {}).items()]
    sec, nanosec = divmod(stamp_ns, S)
    return NS(trajectory=NS(header=NS(stamp=NS(sec=sec, nanosec=nanosec)), joint_names=list(names),
                            points=[_point(p, t, [0.0] * len(p)) for p, t in points]),
              multi_dof_trajectory=NS(joint_names=[], points=[]), path_tolerance=tolerances(path),
              goal_tolerance=tolerances(goal), goal_time_tolerance=NS(sec=0, nanosec=round(goal_time_s * S)))


@pytest.mark.parametrize("kwargs, code, words", BAD_GOALS, ids=[w[:30] for _, _, w in BAD_GOALS])
def test_each_bad_goal_gets_its_code_and_reason(kwargs, code, words):
    ranges = {j.name: (j.lower, j.upper) for j in Physics(default_model_path(), 0.002, 5, seed=0).joints}
    kwargs = dict(kwargs)
    goal = duck_goal(kwargs.pop("names"), kwargs.pop("points"), **kwargs)
    with pytest.raises(jtc_goal.GoalRejected) as exc:
        jtc_goal.validate_goal(goal, "left_arm_controller", LEFT, ranges, now_ns=3 * S)
    assert exc.value.code == code and words in str(exc.value), str(exc.value)


@needs_control_msgs
def test_result_codes_are_control_msgs_own():
    r = arms.FollowJointTrajectory.Result
    for code, name in jtc_goal.CODE_NAMES.items():
        assert getattr(r, name) == code, name


@needs_control_msgs
def test_each_bad_goal_ends_with_its_code_naming_the_point_and_joint_and_changes_nothing(rig):
    rig.obs.wait_for(lambda: truth_q(rig, LEFT)[0][-1] > 3 * S if rig.obs.snapshot(rig.obs.truth) else False,
                     15, "3 s of sim time")  # the OLD_HEADER_TIMESTAMP goal must end in the past
    before = current(rig, LEFT)
    for kwargs, code, words in BAD_GOALS:
        kwargs = dict(kwargs)
        status, got, text = Sent(rig, "left_arm_controller", goal_msg(kwargs.pop("names"), kwargs.pop("points"),
                                                                      **kwargs)).result()
        assert (status, got) == (ABORTED, code), (words, got, text)
        assert words in text, (words, text)
    time.sleep(0.3)
    assert current(rig, LEFT) == pytest.approx(before, abs=2e-3)  # nothing moved


@needs_control_msgs
def test_a_goal_succeeds_each_point_reached_on_time_with_feedback_and_controller_state(rig):
    from control_msgs.msg import JointTrajectoryControllerState
    states = []
    sub = rig.obs.node.create_subscription(JointTrajectoryControllerState,
                                           rig.obs.spec["controllers"]["left_arm_controller"]["controller_state"],
                                           states.append, 10)
    # Feedback as the server publishes it, read from the action's feedback topic as docs/ros_standard_api.md
    # says to when every message counts: rclpy's client drops what is still queued when the
    # result arrives (on a loaded machine, the last hundred ticks or more).
    from rclpy.qos import QoSProfile
    action = rig.obs.spec["controllers"]["left_arm_controller"]["action"]
    on_topic = []
    fb_sub = rig.obs.node.create_subscription(arms.FollowJointTrajectory.Impl.FeedbackMessage,
                                              f"{action}/_action/feedback", on_topic.append, QoSProfile(depth=1000))
    points = [(READY, 1.0), (OTHER, 2.0)]
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, points, goal={j: 0.01 for j in LEFT}, goal_time_s=0.5))
    status, code, text = sent.result()
    assert (status, code) == (SUCCEEDED, jtc_goal.SUCCESSFUL), text
    assert "reached point 1" in text and "final error" in text
    start_ns, reached_ns = sent.started_ns(), sent.reached_ns()
    goal_id = bytes(sent.handle.goal_id.uuid)
    mine = lambda: [m.feedback for m in list(on_topic) if bytes(m.goal_id.uuid) == goal_id]  # noqa: E731
    rig.obs.wait_for(lambda: mine() and stamp_of(mine()[-1]) >= reached_ns, 10, "feedback up to the result's tick")
    fb = mine()
    assert list(fb[0].joint_names) == list(LEFT)
    stamps = np.array([stamp_of(f) for f in fb])
    # Every tick from the goal's start to the tick it was reached: ~2 s at 100 Hz, none missed.
    assert stamps[0] <= start_ns + 10_000_000 and stamps[-1] == reached_ns, (stamps[[0, -1]], start_ns, reached_ns)
    assert (np.diff(stamps) == 10_000_000).all()  # the control rate, no tick missed
    assert len(sent.feedback) <= len(fb)  # the callback got a prefix at most
    rig.obs.node.destroy_subscription(fb_sub)
    rig.obs.wait_for(lambda: truth_q(rig, LEFT)[0][-1] >= start_ns + 2 * S, 5, "ground truth of the last point")
    truth_stamps, q = truth_q(rig, LEFT)
    for positions, t_s in points:
        at = np.flatnonzero(truth_stamps == start_ns + round(t_s * S))
        assert len(at) == 1, "no ground truth at the point's time"
        assert np.abs(q[at[0]] - positions).max() < 0.01, (t_s, q[at[0]] - positions)
    e = np.array(fb[-1].error.positions)
    assert e == pytest.approx(np.array(fb[-1].desired.positions) - np.array(fb[-1].actual.positions))
    rig.obs.wait_for(lambda: states and stamp_of(states[-1]) >= stamps[-1], 5, "controller_state after the end")
    assert list(states[-1].joint_names) == list(LEFT)
    assert np.array(states[-1].reference.positions) == pytest.approx(OTHER, abs=1e-9)  # the servo target held
    rig.obs.node.destroy_subscription(sub)


@needs_control_msgs
def test_path_tolerance_violated_when_the_table_stops_the_arm_then_it_holds(rig):
    # Upper arm forward and down, everything else straight: the table is in the way (the error
    # grows to ~1 rad there), so the arm falls behind its path by more than 0.05 rad.
    down = (0.0, 1.6, 0.0, 0.0, 0.0)
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(down, 1.5)], path={j: 0.05 for j in LEFT}))
    status, code, text = sent.result()
    assert (status, code) == (ABORTED, jtc_goal.PATH_TOLERANCE_VIOLATED), text
    assert re.search(r"on the way to point 0: 'left_(shoulder_lift|wrist_flex)' is 0\.05\d* rad from its desired "
                     r"position \(path tolerance 0\.05 rad\)", text), text
    time.sleep(0.3)
    held = current(rig, LEFT)
    time.sleep(0.5)
    assert current(rig, LEFT) == pytest.approx(held, abs=2e-3)  # held where it was stopped
    assert abs(held[1] - down[1]) > 0.3  # short of the path's end


@needs_control_msgs
def test_goal_tolerance_violated_after_goal_time_tolerance(rig):
    # 1e-6 rad: the elbow's servo carries gravity with a steady-state error ~3e-4 rad
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(READY, 0.5)], goal={ELBOW: 1e-6}, goal_time_s=0.2))
    status, code, text = sent.result()
    assert (status, code) == (ABORTED, jtc_goal.GOAL_TOLERANCE_VIOLATED), text
    assert f"'{ELBOW}' is" in text and "goal_time_tolerance 0.2 s" in text, text


@needs_control_msgs
def test_a_new_goal_preempts_the_running_one(rig):
    first = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 3.0)]))
    time.sleep(0.3)
    second = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(READY, 0.5)]))
    status, code, text = first.result()
    # JTC's preempt_active_goal(): CANCELED with INVALID_GOAL; MoveIt tells it from a failure (ABORTED).
    assert (status, code) == (CANCELED, jtc_goal.INVALID_GOAL), text
    assert "preempted by a new goal for left_arm_controller" in text, text
    assert second.result()[:2] == (SUCCEEDED, jtc_goal.SUCCESSFUL)


@needs_control_msgs
def test_cancel_holds_the_current_position(rig):
    """The arm stops where it is when the cancel lands, not where the node last saw it: a hold at
    the latest tick the node had pulled a moving arm back by a tick or two of its motion (6.6 mrad
    at 0.67 rad/s). Judged on the whole ground truth (every tick arrives, however late the reader):
    how far each joint went back from the furthest it got towards the goal."""
    ready = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(READY, 1.0)]))
    assert ready.result()[0] == SUCCEEDED
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 2.5)]))
    time.sleep(1.0)  # wall time, not feedback: a loaded reader hears it late; near its top speed
    sent.cancel()
    status, code, text = sent.result()
    assert (status, code) == (CANCELED, jtc_goal.SUCCESSFUL) and "holding the current position" in text, text
    time.sleep(1.0)
    stamps, q = truth_q(rig, LEFT)
    q = q[stamps >= ready.reached_ns()]
    towards = np.sign(np.array(OTHER) - READY)
    progress = q * towards
    went_back = (np.maximum.accumulate(progress, axis=0) - progress).max(axis=0)
    speed = np.abs(np.diff(q, axis=0)).max() / 0.01
    # What is left is the servo's own stop (~1 mrad from this speed in the physics alone).
    assert went_back.max() < 2.5e-3, (went_back, speed)
    held = q[-1]
    assert np.abs(held - OTHER).max() > 0.1, "the cancel landed after the goal's end"  # stopped on the way
    time.sleep(0.5)
    assert current(rig, LEFT) == pytest.approx(held.tolist(), abs=1e-5)  # and stays


@needs_control_msgs
def test_a_cancel_sent_as_soon_as_the_goal_is_accepted_cancels_it(rig):
    """JTC accepts a cancel of any goal it accepted, at every moment: a client that cancels from
    the goal response's own callback (MoveIt cancels often) lands while the goal is validated or
    handed to the sim. Each of 20 ends CANCELED, with the cancel accepted, and the joint stops far
    short of its target (a 2 s move of 1 rad)."""
    start = current(rig, [ELBOW])[0]
    target = start - 1.0 if start > 0 else start + 1.0
    for attempt in range(20):
        cancels = []

        def cancel_at_once(future):
            cancels.append(future.result().cancel_goal_async())

        future = rig.clients["left_arm_controller"].send_goal_async(goal_msg([ELBOW], [((target,), 2.0)]))
        future.add_done_callback(cancel_at_once)
        rig.obs.wait_for(lambda: cancels and cancels[0].done(), 10, "the cancel's answer")
        answer = cancels[0].result()
        assert answer.return_code == 0 and len(answer.goals_canceling) == 1, (attempt, answer)
        result = future.result().get_result_async()
        rig.obs.wait_for(result.done, 10, "the goal's result")
        status, text = result.result().status, result.result().result.error_string
        assert status == CANCELED, (attempt, status, text)
        moved = abs(current(rig, [ELBOW])[0] - start)
        assert moved < 0.3, (attempt, moved, text)  # held where it was, not at the target
        start = current(rig, [ELBOW])[0]
        target = start - 1.0 if start > 0 else start + 1.0


@needs_control_msgs
@pytest.mark.parametrize("source", ["joint_commands", "joint_trajectory"])
def test_a_topic_message_for_its_joints_preempts_the_goal_and_says_so(rig, source):
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 3.0)]))
    time.sleep(0.3)
    if source == "joint_commands":
        rig.obs.send([ELBOW], [0.5])
    else:
        pub = rig.obs.node.create_publisher(JointTrajectory, "joint_trajectory", 10)
        rig.obs.wait_for(lambda: pub.get_subscription_count() > 0, 10, "joint_trajectory subscriber")
        point = JointTrajectoryPoint(positions=[0.5])
        point.time_from_start.nanosec = 200_000_000
        pub.publish(JointTrajectory(joint_names=[ELBOW], points=[point]))
    status, code, text = sent.result()
    assert (status, code) == (CANCELED, jtc_goal.INVALID_GOAL), text  # preempted, as by a new goal
    assert f"preempted by a {source}" in text and f"'{ELBOW}'" in text, text


@needs_control_msgs
def test_pause_freezes_a_goal_in_sim_time(rig):
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(READY, 1.0)]))
    time.sleep(0.3)
    rig.obs.call("pause")
    time.sleep(0.2)  # the tick a pause completes may still be on its way
    n = len(sent.feedback)
    time.sleep(1.2)  # longer than the whole goal, in wall time
    assert not sent.result_future.done() and len(sent.feedback) == n
    rig.obs.call("resume")
    status, code, text = sent.result()
    assert (status, code) == (SUCCEEDED, jtc_goal.SUCCESSFUL), text
    stamps = [stamp_of(f) for f in sent.feedback]
    assert sent.reached_ns() - stamps[0] < 1.1 * S  # the goal took 1 s of sim time, the pause none


@needs_control_msgs
def test_reset_aborts_a_goal(rig):
    sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 3.0)]))
    time.sleep(0.3)
    rig.obs.call("reset")  # leaves the sim paused
    status, code, text = sent.result()
    rig.obs.call("resume")
    assert status == ABORTED and "the sim was reset" in text, text


@needs_control_msgs
@pytest.mark.parametrize("factor", [0.0, 2.0])
def test_goals_run_on_sim_time_at_real_time_factor(rig, factor):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    client = rig.obs.node.create_client(SetParameters, f"/{rig.obs.namespace}/robogym_sim/set_parameters")

    def set_rtf(value: float):
        assert client.wait_for_service(timeout_sec=10)
        request = SetParameters.Request(parameters=[Parameter(name="real_time_factor", value=ParameterValue(
            type=ParameterType.PARAMETER_DOUBLE, double_value=value))])
        future = client.call_async(request)
        rig.obs.wait_for(future.done, 10, "set_parameters")
        assert future.result().results[0].successful

    set_rtf(factor)
    try:
        t0, sent_at_ns = time.monotonic(), truth_q(rig, LEFT)[0][-1]  # the sim's time before the goal
        sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 1.0), (READY, 2.0)]))
        status, code, text = sent.result()
        wall_s = time.monotonic() - t0
    finally:
        set_rtf(1.0)
    assert (status, code) == (SUCCEEDED, jtc_goal.SUCCESSFUL), text
    stamps = np.array([stamp_of(f) for f in sent.feedback])
    # Feedback on every tick (the client hears it from when it knows the goal: at real_time_factor
    # 0 that is a few hundred ticks late), until 2 s of sim time after the goal was taken up.
    assert (np.diff(stamps) == 10_000_000).all() and sent.reached_ns() - sent_at_ns >= 2 * S
    print(f"real_time_factor {factor:g}: a goal of 2 s sim time took {wall_s:.2f} s wall")


def set_real_time_factor(rig, value: float) -> None:
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter
    client = rig.obs.node.create_client(SetParameters, f"/{rig.obs.namespace}/robogym_sim/set_parameters")
    try:
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(SetParameters.Request(
            parameters=[Parameter("real_time_factor", value=value).to_parameter_msg()]))
        rig.obs.wait_for(future.done, 10, "set_parameters")
        assert future.result().results[0].successful, future.result().results[0].reason
    finally:
        rig.obs.node.destroy_client(client)


@needs_control_msgs
def test_a_client_with_the_readme_qos_hears_every_tick_of_a_goal_at_real_time_factor_0(rig):
    """docs/ros_standard_api.md: feedback every control tick, for a reader with QoSProfile(depth=1000); rclpy's
    ActionClient drops what is still queued when the result comes, so the docs' complete
    reader takes ``<action>/_action/feedback`` itself: every tick from the one after the goal was
    taken up to the one it succeeded on, none missing, at real_time_factor 0 (a tick ~1 ms)."""
    from rclpy.qos import QoSProfile
    action = rig.obs.spec["controllers"]["left_arm_controller"]["action"]
    heard: list = []
    sub = rig.obs.node.create_subscription(arms.FollowJointTrajectory.Impl.FeedbackMessage,
                                           f"{action}/_action/feedback", heard.append, QoSProfile(depth=1000))
    set_real_time_factor(rig, 0.0)
    try:
        sent = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 1.5), (READY, 3.0)]))
        status, code, text = sent.result(60)
    finally:
        set_real_time_factor(rig, 1.0)
    assert (status, code) == (SUCCEEDED, jtc_goal.SUCCESSFUL), text
    uuid = bytes(sent.handle.goal_id.uuid)
    rig.obs.wait_for(lambda: [m for m in list(heard) if bytes(m.goal_id.uuid) == uuid and stamp_of(m.feedback)
                              == sent.reached_ns()], 10, "the last tick's feedback")
    rig.obs.node.destroy_subscription(sub)
    stamps = np.array([stamp_of(m.feedback) for m in heard if bytes(m.goal_id.uuid) == uuid])
    taken_ns = sent.started_ns()  # header.stamp 0: the start of the tick that took it up
    expected = np.arange(taken_ns + 10_000_000, sent.reached_ns() + 1, 10_000_000)
    assert len(expected) >= 300 and np.array_equal(stamps, expected), (len(stamps), len(expected))
    # The callback of rclpy's ActionClient heard them in order, with no gap, up to where the result
    # overtook them (what the docs say is not delivered).
    callback = np.array([stamp_of(f) for f in sent.feedback])
    assert len(callback) and np.array_equal(callback, expected[:len(callback)])


@needs_control_msgs
def test_two_arms_and_a_gripper_follow_goals_at_once(rig):
    left = Sent(rig, "left_arm_controller", goal_msg(LEFT, [(OTHER, 1.0)], goal_time_s=1.0,
                                                     goal={j: 0.005 for j in LEFT}))
    right = Sent(rig, "right_arm_controller", goal_msg(RIGHT, [(OTHER, 1.0)], goal_time_s=1.0,
                                                       goal={j: 0.005 for j in RIGHT}))
    gripper = Sent(rig, "left_gripper_controller", goal_msg(["left_gripper"], [((1.0,), 0.8)], goal_time_s=1.0,
                                                           goal={"left_gripper": 0.005}))
    for sent in (left, right, gripper):
        status, code, text = sent.result()
        assert (status, code) == (SUCCEEDED, 0), text
    both = [*LEFT, *RIGHT, "left_gripper"]
    reached_ns = max(sent.reached_ns() for sent in (left, right, gripper))
    assert current(rig, both, reached_ns) == pytest.approx([*OTHER, *OTHER, 1.0], abs=0.01)
    # Feedback on (nearly) every tick of the ~1 s each arm moves, the two arms' overlapping in sim time. Not
    # all ~100: the client's feedback history is keep-last, and the result may overtake the last feedbacks.
    lf, rf = ([stamp_of(f) for f in s.feedback] for s in (left, right))
    for stamps in (lf, rf):
        assert len(stamps) > 75 and max(stamps) - min(stamps) >= 0.8 * S, (len(stamps), min(stamps), max(stamps))
    assert len(set(lf) & set(rf)) > 50


@needs_control_msgs
def test_the_served_actions_match_the_spec_and_the_moveit_yaml(rig):
    from rclpy.action import get_action_names_and_types
    served = dict(get_action_names_and_types(rig.obs.node))
    manager = yaml.safe_load(MOVEIT_YAML.read_text())["moveit_simple_controller_manager"]
    ns = f"/{rig.obs.namespace}"
    assert set(rig.obs.spec["controllers"]) == set(manager["controller_names"])
    for name in manager["controller_names"]:
        action = f"{ns}/{name}/{manager[name]['action_ns']}"
        assert served.get(action) == [arms.ACTION_TYPE], (action, served)
        assert rig.obs.spec["controllers"][name]["action"] == action
        assert rig.obs.spec["controllers"][name]["joints"] == manager[name]["joints"]
