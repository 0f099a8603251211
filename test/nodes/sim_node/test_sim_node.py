"""The sim node over real DDS, with real MuJoCo: one sim process per scenario."""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from simharness import MODELS, Observer
from spinning import Spinning

from robogym_ros import contract
from robogym_ros.contract import RunAnswer
from robogym_ros.nodes.sim_node.node import SimNode
from robogym_ros.params import SIM_PARAMS
from robogym_ros.ros import qos
from robogym_ros.ros.stamps import stamp_msg, stamp_ns
from robogym_ros.sim.loop import LoopConfig
from robogym_ros.sim.physics import Physics
from robogym_ros.sim.process import SimProcess
from robogym_ros.sim.trajectory_follower import TrajectoryCommand
from robogym_ros.task.scene import default_model_path


def wait_ticks(obs, n, timeout_s=20.0):
    start = len(obs.snapshot(obs.joint_states))
    obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) >= start + n, timeout_s, f"{n} ticks")


def latest_position(obs, name):
    received = obs.snapshot(obs.joint_states)
    if not received:
        return math.nan
    return received[-1].position[list(received[-1].name).index(name)]


# --- the process boundary ------------------------------------------------------------------

def test_physics_process_imports_neither_ros_nor_gl():
    sim = SimProcess(LoopConfig(model_path=str(MODELS / "two_link.xml"), start_paused=True))
    try:
        modules = sim.describe().modules
    finally:
        sim.close()
    banned = [m for m in modules if m.split(".")[0] in ("rclpy", "OpenGL", "glfw", "cv2")
              or m in ("mujoco.egl", "mujoco.osmesa", "mujoco.glfw")]
    assert not banned, banned
    assert "mujoco" in modules  # the probe itself works


def test_physics_process_errors_are_reraised_at_the_caller():
    with pytest.raises(ValueError, match="Error opening file '/nonexistent/nope.xml'"):
        SimProcess(LoopConfig(model_path="/nonexistent/nope.xml"))
    sim = SimProcess(LoopConfig(model_path=str(MODELS / "two_link.xml"), start_paused=True))
    try:
        with pytest.raises(KeyError, match="unknown joints"):
            sim.set_targets({"no_such_joint": 0.0}, wait=True)
        # a hold or a trajectory of a joint the model lacks: refused at the call, not at the tick
        with pytest.raises(KeyError, match=r"unknown joints \['no_such_joint'\]"):
            sim.hold(["no_such_joint"], wait=True)
        bad = TrajectoryCommand(("no_such_joint",), 0, np.array([0]), np.zeros((1, 1)), np.full((1, 1), np.nan),
                                np.array([-1.0]), np.array([1.0]))
        with pytest.raises(KeyError, match=r"unknown joints \['no_such_joint'\]"):
            sim.set_trajectory(bad, wait=True)
        assert sim.step(2) == 2  # and physics steps on
        with pytest.raises(RuntimeError, match="only allowed while paused"):
            sim.resume()
            sim.step()
    finally:
        sim.close()


# --- the oldest slot -----------------------------------------------------------------------

def assert_fresh_and_true(kept, truth, min_ticks=8):
    """kept[i] is tick i as it was when kept; truth[i] is the sim's record of that tick.

    The oldest slot first: with aliasing it is the one that has drifted furthest from the
    truth (0.25*(N-1) in docs/background.md, Aliasing), while the newest slot still looks right.
    """
    assert len(kept) >= min_ticks and len(truth) >= len(kept)
    oldest_error = np.max(np.abs(np.subtract(kept[0].position, truth[0].position)))
    assert oldest_error == 0.0, f"oldest slot != ground truth (error {oldest_error:.3g})"
    for msg, t in zip(kept, truth):
        assert msg.header.stamp == t.header.stamp
        np.testing.assert_array_equal(msg.position, t.position)
        np.testing.assert_array_equal(msg.velocity, t.velocity)
    buffers = [np.frombuffer(getattr(m, f), dtype=np.float64)
               for m in kept for f in ("position", "velocity", "effort")]
    for a, b in itertools.combinations(buffers, 2):
        assert not np.shares_memory(a, b), "two kept messages share memory"


def test_oldest_slot_assertion_catches_a_mutated_message():
    """Positive control: one message mutated and kept N times fails the check above."""
    from sensor_msgs.msg import JointState
    shared = JointState()
    kept, truth = [], []
    for i in range(8):
        shared.header.stamp = stamp_msg((i + 1) * 10_000_000)
        shared.position = [0.25 * (i + 1)]
        shared.velocity, shared.effort = [0.0], [0.0]
        t = JointState()
        t.header.stamp = stamp_msg((i + 1) * 10_000_000)
        t.position, t.velocity = [0.25 * (i + 1)], [0.0]
        truth.append(t)
        kept.append(shared)
    with pytest.raises(AssertionError, match=r"oldest slot != ground truth \(error 1.75\)"):
        assert_fresh_and_true(kept, truth)


def test_every_published_and_received_joint_state_is_fresh_and_true(ros):
    """Run the node in this process to keep what it *published*, and receive over DDS."""
    node = SimNode(cli_args=["--ros-args", "-r", "__ns:=/oldest", "-p", "start_paused:=true"])
    published = []
    real_publish = node.ticks.pub_joints.publish
    # The node publishes serialized CDR: what it published is what rclpy decodes from those bytes.
    node.ticks.pub_joints.publish = lambda data: (published.append(deserialize_message(data, JointState)),
                                                  real_publish(data))[1]
    spinning = Spinning(node)
    obs = Observer("oldest")
    try:
        obs.wait_for(lambda: obs.spec is not None, 20, "spec")
        joint = node.ticks.joint_names[0]
        lower, upper = node.ranges[joint]
        obs.send([joint], [min(upper, 0.8)])
        obs.wait_for(lambda: node.commands.accepted == 1, 10, "command accepted")
        obs.call("resume")
        obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) >= 20, 20, "20 ticks")
        obs.call("pause")
        time.sleep(0.3)
        received = obs.snapshot(obs.joint_states)
        truth = obs.snapshot(obs.truth)
        # Real motion, or the oldest-slot check proves nothing.
        moved = [m.position[0] for m in received]
        assert max(moved) - min(moved) > 0.05
        assert_fresh_and_true(received, truth)
        assert_fresh_and_true(published, truth)
        assert len(published) == len(received) == len(truth)
        assert_fresh_and_true(published + received, truth + truth)
    finally:
        obs.close()
        spinning.close()


# --- commands ------------------------------------------------------------------------------

def test_commands_reach_targets_and_partial_commands_keep_the_rest(make_sim):
    _, obs = make_sim()
    held = []  # the targets the sim held at each tick, stamped with it
    obs.node.create_subscription(JointState, contract.TRUTH_TARGETS, held.append, qos.STREAM_QOS)
    obs.wait_for(lambda: len(held) > 0, 10, "the sim's held targets")
    wait_ticks(obs, 10)
    a, b = "left_shoulder_pan", "left_elbow_flex"
    obs.send([a], [0.6])
    t_sent = stamp_ns(obs.snapshot(obs.joint_states)[-1].header.stamp)  # a tick already published then
    obs.wait_for(lambda: abs(latest_position(obs, a) - 0.6) < 0.02, 10, f"{a} at 0.6")
    # Timed on the sim's own stamps (an observer's newest message at send time lags on a loaded
    # machine): from the first tick that held the new target to the first whose truth is there.
    def first(msgs, holds):
        return next((stamp_ns(m.header.stamp) for m in msgs if holds(m, m.position[list(m.name).index(a)])), None)

    def applied():
        return first(list(held), lambda _m, target: target == 0.6)

    def reached():  # the two topics arrive apart: wait for both
        t = applied()
        return None if t is None else first(obs.snapshot(obs.truth),
                                            lambda m, q: stamp_ns(m.header.stamp) >= t and abs(q - 0.6) < 0.02)
    obs.wait_for(lambda: reached() is not None, 10, "the held target and the truth that reached it")
    t_applied, t_reached = applied(), reached()
    assert t_applied > t_sent, "a target held before the command was sent"  # never sooner
    # Expected: the same move in the same physics without ROS, tick for tick (its n counts the
    # tick that applied the target).
    expected_s = offline_settle_time_s("left_shoulder_pan", 0.6)
    measured_s = (t_reached - t_applied + obs.spec["control_dt_ns"]) * 1e-9
    assert abs(measured_s - expected_s) <= 0.011, (expected_s, measured_s)
    before_b = latest_position(obs, b)
    obs.send([b], [before_b - 0.3])
    obs.wait_for(lambda: abs(latest_position(obs, b) - (before_b - 0.3)) < 0.02, 10, f"{b} moved")
    wait_ticks(obs, 20)
    assert abs(latest_position(obs, a) - 0.6) < 0.02, "a partial command dropped another target"


def offline_settle_time_s(joint: str, target: float, tolerance: float = 0.02) -> float:
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    for _ in range(10):
        physics.step_tick()
    physics.set_targets({joint: target})
    i = physics.joint_names.index(joint)
    for n in range(1, 500):
        physics.step_tick()
        if abs(physics.q[i] - target) < tolerance:
            return n * physics.control_dt_s
    raise AssertionError(f"{joint} never reached {target} offline")


BAD_COMMANDS = [
    ((["no_such_joint"], [0.1]), {}, "unknown joint 'no_such_joint'"),
    ((["left_elbow_flex", "left_elbow_flex"], [0.1, 0.2]), {}, "appears more than once"),
    ((["left_elbow_flex"], [0.1, 0.2]), {}, "len(position) = 3 but len(name) = 2"),
    ((["left_elbow_flex"], [math.nan]), {}, "not finite"),
    ((["left_elbow_flex"], [math.inf]), {}, "not finite"),
    ((["left_elbow_flex"], [3.0]), {}, "outside its range"),
    ((["left_elbow_flex"], [0.1]), {"velocity": [1.0]}, "velocity and effort"),
    ((["left_elbow_flex"], [0.1]), {"effort": [1.0]}, "velocity and effort"),
]


@pytest.mark.long
def test_bad_commands_are_rejected_whole_with_a_reason(make_sim):
    _, obs = make_sim()
    wait_ticks(obs, 10)
    mover = "left_shoulder_pan"
    start = latest_position(obs, mover)
    for i, ((names, positions), extra, reason) in enumerate(BAD_COMMANDS, start=1):
        # Each bad command also carries a valid target for `mover`: whole rejection keeps it still.
        obs.send([mover] + names, [start + 0.5] + positions, **{
            k: [0.0] + v for k, v in extra.items()})
        obs.wait_for(lambda: obs.diag_values().get("commands_rejected") == str(i), 10,
                     f"rejection {i} in diagnostics")
        assert reason in obs.diag_values()["last_rejection"], (reason, obs.diag_values())
    wait_ticks(obs, 20)
    assert abs(latest_position(obs, mover) - start) < 0.01, "a rejected command changed a target"
    assert obs.diag_values()["commands_accepted"] == "0"


# --- pause, resume, reset, step, clock -----------------------------------------------------

def test_pause_step_reset_resume_and_a_monotonic_clock(make_sim):
    sim, obs = make_sim(start_paused=True, seed=3)
    control_dt_ns = obs.spec["control_dt_ns"]
    time.sleep(0.3)
    assert obs.snapshot(obs.joint_states) == [], "ticks while start_paused"

    reply = obs.call("step")
    assert reply.success, reply.message
    # Published before the answer: it must arrive at once, not one tick later.
    obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) == 1, 2, "the stepped tick")
    first = stamp_ns(obs.snapshot(obs.joint_states)[0].header.stamp)
    assert first == control_dt_ns
    obs.call("step")
    obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) == 2, 2, "second step")
    time.sleep(0.2)
    stamps = [stamp_ns(m.header.stamp) for m in obs.snapshot(obs.joint_states)]
    assert stamps == [control_dt_ns, 2 * control_dt_ns], "step advanced != one control tick"

    assert obs.call("resume").success
    wait_ticks(obs, 30)
    obs.send(["left_shoulder_pan"], [0.7])
    wait_ticks(obs, 30)
    assert obs.call("pause").success
    time.sleep(0.2)
    n = len(obs.snapshot(obs.joint_states))
    time.sleep(0.3)
    assert len(obs.snapshot(obs.joint_states)) == n, "ticks while paused"
    assert obs.call("step").success
    obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) == n + 1, 2, "step while paused")

    before_reset = obs.snapshot(obs.joint_states)[-1]
    reply = obs.call("reset")
    answer = RunAnswer.from_json(reply.message)
    assert reply.success and answer.action == "reset" and answer.paused
    # The reset is a tick of its own, published before the answer: the latest joint_states
    # shows the new episode at once, under the next stamp on the grid.
    reset_tick = obs.snapshot(obs.joint_states)[-1]
    pan = list(reset_tick.name).index("left_shoulder_pan")
    assert len(obs.snapshot(obs.joint_states)) == n + 2
    assert abs(reset_tick.position[pan] - 0.7) > 0.3, "the latest joint_states still shows the old episode"
    assert stamp_ns(reset_tick.header.stamp) == stamp_ns(before_reset.header.stamp) + control_dt_ns
    time.sleep(0.3)
    assert len(obs.snapshot(obs.joint_states)) == n + 2, "reset must stay paused"
    obs.call("step")
    obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) == n + 3, 2, "step after reset")
    after_reset = obs.snapshot(obs.joint_states)[-1]
    assert abs(after_reset.position[pan] - 0.7) > 0.3, "reset did not restore the folded pose"
    # Pending targets were cleared: after resuming, the arm holds the folded pose.
    obs.call("resume")
    wait_ticks(obs, 30)
    assert abs(latest_position(obs, "left_shoulder_pan") - after_reset.position[pan]) < 0.02
    assert stamp_ns(after_reset.header.stamp) > stamp_ns(before_reset.header.stamp)

    clock = [stamp_ns(c.clock) for c in obs.snapshot(obs.clock)]
    assert len(clock) > 60
    assert all(b > a for a, b in zip(clock, clock[1:])), "/clock went backwards or stalled"
    stamps = [stamp_ns(m.header.stamp) for m in obs.snapshot(obs.joint_states)]
    assert all(b - a == control_dt_ns for a, b in zip(stamps, stamps[1:])), "a tick was lost"


def test_blow_up_resets_pauses_counts_and_the_node_lives_on(make_sim):
    sim, obs = make_sim(model=str(MODELS / "unstable.xml"))
    wait_ticks(obs, 5)
    obs.send(["spin"], [1.0])
    obs.wait_for(lambda: obs.diag_values().get("resets") == "1", 10, "a reset in diagnostics")
    assert obs.diag_values()["paused"] == "True"
    assert obs.call("step").success, "node no longer serves after a blow-up"
    assert sim.proc.poll() is None
    js = obs.snapshot(obs.joint_states)[-1]
    assert all(math.isfinite(v) for v in js.position)


# --- clocks: decimation and real-time factor -----------------------------------------------

def test_decimation_changes_the_joint_states_period_and_nothing_else(make_sim):
    settle_s = {}
    for decimation in (2, 8):
        _, obs = make_sim(decimation=decimation, physics_dt_s=0.002, start_paused=True)
        assert obs.spec["control_dt_ns"] == decimation * 2_000_000
        assert obs.spec["topics"]["joint_states"]["period_s"] == pytest.approx(decimation * 0.002)
        obs.send(["left_shoulder_pan"], [0.6])
        time.sleep(0.3)
        obs.call("resume")
        obs.wait_for(lambda: abs(latest_position(obs, "left_shoulder_pan") - 0.6) < 0.02, 10,
                     "target reached")
        obs.call("pause")
        time.sleep(0.2)
        js = obs.snapshot(obs.joint_states)
        stamps = [stamp_ns(m.header.stamp) for m in js]
        assert {b - a for a, b in zip(stamps, stamps[1:])} == {decimation * 2_000_000}
        pan = list(js[0].name).index("left_shoulder_pan")
        settle_s[decimation] = next(stamp_ns(m.header.stamp) for m in js
                                    if abs(m.position[pan] - 0.6) < 0.02) * 1e-9
    # Time to reach a target is a property of the servo, in seconds, not of the tick rate:
    # the two runs agree to within the coarser run's control tick.
    assert 0.02 < settle_s[2] < 0.5
    assert abs(settle_s[2] - settle_s[8]) <= 8 * 0.002 + 1e-9, settle_s


@pytest.mark.parametrize("factor", [0.5, 2.0])
@pytest.mark.long
def test_real_time_factor_sets_the_pace(make_sim, factor):
    _, obs = make_sim(real_time_factor=factor, camera_period_s=0.0)
    obs.wait_for(lambda: obs.diag_values().get("real_time_factor_achieved", "nan") != "nan", 10, "rtf")
    time.sleep(2.2)  # two more diagnostics windows
    assert float(obs.diag_values()["real_time_factor_achieved"]) == pytest.approx(factor, rel=0.1)


def test_real_time_factor_zero_runs_as_fast_as_the_node_takes_ticks(make_sim):
    _, obs = make_sim(real_time_factor=0.0, camera_period_s=0.0)
    obs.wait_for(lambda: obs.diag_values().get("real_time_factor_achieved", "nan") != "nan", 10, "rtf")
    time.sleep(1.2)
    values = obs.diag_values()
    # Far faster than real time, and still on the tick grid with nothing skipped.
    assert float(values["real_time_factor_achieved"]) > 3.0, values
    assert values["skipped_s"] == "0.0" and values["late_steps"] == "0"


def test_spec_describes_joints_topics_and_clocks(make_sim):
    _, obs = make_sim(start_paused=True)
    spec = obs.spec
    assert [j["name"] for j in spec["joints"]][:2] == ["left_shoulder_pan", "left_shoulder_lift"]
    assert len(spec["joints"]) == 12 and all(j["unit"] == "rad" for j in spec["joints"])
    elbow = next(j for j in spec["joints"] if j["name"] == "left_elbow_flex")
    assert (elbow["lower"], elbow["upper"]) == pytest.approx((-1.69, 1.69))
    assert spec["physics_dt_s"] == pytest.approx(0.002) and spec["decimation"] == 5
    assert spec["control_dt_s"] == pytest.approx(0.01)
    assert spec["topics"]["joint_states"]["qos"]["reliability"] == "reliable"
    assert spec["topics"]["joint_commands"]["qos"]["reliability"] == "reliable"
    assert spec["objects"] == ["block", "tray"]


def test_config_yaml_matches_the_declared_defaults():
    from pathlib import Path

    import yaml
    config = yaml.safe_load((Path(__file__).parents[3] / "config" / "sim.yaml").read_text())
    params = config["/**"]["ros__parameters"]
    assert params == {p.name: list(p.default) if isinstance(p.default, tuple) else p.default
                      for p in SIM_PARAMS}
