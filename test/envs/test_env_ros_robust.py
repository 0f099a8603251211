"""ROS-mode envs that are always right (issue 15): whatever the sim did before, a seeded reset
is local mode's scene or one clear error; a new env resets at once; a lockstep step another
client interfered with is refused; a dead sim is a SimUnavailable naming what was awaited; a
script that never closes its env exits cleanly. Real sim processes over real DDS.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from simharness import new_namespace, start_sim

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros import contract
from robogym_ros.envs import HandoverEnv
from robogym_ros.envs.ros.backend import SeedNotHonoured, SimBusy

SIM_PARAMS = {"start_paused": True, "camera_period_s": 0.0}


def assert_same_observation(obs, expected, what=""):
    assert obs.keys() == expected.keys()
    for key in obs:
        np.testing.assert_array_equal(obs[key], expected[key], err_msg=f"{what} {key}")


@pytest.mark.parametrize("mode", ["ros_lockstep", "ros_realtime"])
def test_a_new_env_on_a_sim_with_history_resets_at_once_to_local_modes_scene(make_sim, mode):
    """The issue's case: a sim started with seed 7, reset and stepped a little by an earlier env
    (its reset among the latched run states a new reader gets); a new env's reset(seed=7) is
    local reset(seed=7), and comes at once (today's ~10 ms; a wait for a replayed reset's tick
    would last the whole 15 s timeout)."""
    sim, _ = make_sim(seed=7, **SIM_PARAMS)
    earlier = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace)
    try:
        earlier.reset()
        for _ in range(3):
            earlier.step(earlier.action_space.sample())
    finally:
        earlier.close()
    env = HandoverEnv(mode=mode, namespace=sim.namespace)
    local = HandoverEnv()
    try:
        t0 = time.monotonic()
        obs, info = env.reset(seed=7)
        elapsed_s = time.monotonic() - t0
        print(f"{mode}: reset of a new env on a sim with history took {elapsed_s * 1e3:.0f} ms")
        assert elapsed_s < 5.0, f"reset took {elapsed_s:.1f} s"
        assert info["tick_index"] > 10  # the sim's clock ran on: a sim with history indeed
        assert_same_observation(obs, local.reset(seed=7)[0], "reset(seed=7):")
    finally:
        env.close()
        local.close()


def test_a_seeded_reset_the_sim_did_not_honour_raises_rather_than_return_another_scene(make_sim, monkeypatch):
    """Positive control of the seed check: a sim that ignores the new seed (here the env does
    not ask it to take one) draws seed 7's scene; the env says so instead of returning it."""
    from robogym_ros.envs.ros.backend import RosBackend

    sim, _ = make_sim(seed=7, **SIM_PARAMS)
    monkeypatch.setattr(RosBackend, "_set_seed", lambda self, seed: None)
    env = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace)
    try:
        with pytest.raises(SeedNotHonoured, match=r"reset\(seed=8\): the sim in /\S+ drew scene 1 of seed 7, "
                                                  r"not scene 1 of seed 8"):
            env.reset(seed=8)
    finally:
        env.close()


def test_a_lockstep_step_is_refused_when_another_client_moved_the_sim(make_sim):
    """The step request names the tick it steps from: a sim another client stepped meanwhile
    refuses it, changes nothing, and the env raises instead of returning another trajectory."""
    sim, observer = make_sim(seed=1, **SIM_PARAMS)
    env = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace, action_repeat=3)
    try:
        _, info = env.reset()
        start = info["tick_index"]
        assert observer.call("step").success  # another client: one tick
        observer.wait_for(lambda: len(observer.snapshot(observer.joint_states)) == 2, what="two ticks")
        with pytest.raises(RuntimeError, match=rf"refused the step from tick {start}: asked to step from tick "
                                               rf"{start}, but the sim is at tick {start + 1} \(another client"):
            env.step(env.action_space.sample())
        time.sleep(0.3)
        assert len(observer.snapshot(observer.joint_states)) == 2  # the refused request stepped nothing
    finally:
        env.close()


def step_request_channel(sim, observer):
    """A publisher of step requests to ``sim`` and the list its step results arrive in, both matched."""
    from rclpy.qos import QoSProfile
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory

    node = observer.node
    results = []
    node.create_subscription(String, f"/{sim.namespace}/{contract.STEP_RESULT_TOPIC}",
                             lambda m: results.append(contract.StepResult.from_json(m.data)), QoSProfile(depth=10))
    pub = node.create_publisher(JointTrajectory, f"/{sim.namespace}/{contract.STEP_REQUEST_TOPIC}",
                                QoSProfile(depth=10))
    observer.wait_for(lambda: pub.get_subscription_count() > 0, what="the sim's step_request subscription")
    time.sleep(0.5)  # the result subscription matches too
    return pub, results


def test_a_malformed_step_request_is_answered_with_its_reason(make_sim):
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    sim, observer = make_sim(**SIM_PARAMS)
    pub, results = step_request_channel(sim, observer)
    bad = JointTrajectory(points=[JointTrajectoryPoint()])
    bad.points[0].time_from_start.nanosec = 15_000_000  # 1.5 control ticks
    pub.publish(bad)
    observer.wait_for(lambda: results, what="the step result")
    assert results[0].reason == "step_refused"
    assert "time_from_start 15000000 ns must be 1 .. 10000 whole control ticks of 10000000 ns" in results[0].detail
    assert observer.snapshot(observer.joint_states) == []


def test_a_step_request_that_blows_up_ends_at_the_blow_up_and_says_so(make_sim):
    from simharness import MODELS
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    sim, observer = make_sim(model=str(MODELS / "unstable.xml"), **SIM_PARAMS)
    pub, results = step_request_channel(sim, observer)
    request = JointTrajectory(joint_names=["spin"], points=[JointTrajectoryPoint(positions=[1.0])])
    request.points[0].time_from_start.sec = 60  # 6000 ticks: far more than it takes to blow up
    pub.publish(request)
    observer.wait_for(lambda: results, what="the step result")
    result = results[0]
    assert result.reason == "step" and result.blew_up, result
    control_dt_ns = observer.spec["control_dt_ns"]
    assert 0 < result.stamp_ns < 6000 * control_dt_ns  # it stopped at the blow-up
    observer.wait_for(lambda: len(observer.snapshot(observer.joint_states)) == result.stamp_ns // control_dt_ns,
                      what="every tick of the step")
    time.sleep(0.3)
    stamps = [contract.header_stamp_ns(m) for m in observer.snapshot(observer.joint_states)]
    assert stamps[-1] == result.stamp_ns  # and nothing after it


# --- processes that end without close() ----------------------------------------------------------

SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, time
    import robogym_ros.envs
    from robogym_ros.envs import HandoverEnv
    from robogym_ros.envs.ros.backend import SimUnavailable
    namespace, kill_pid = sys.argv[1], int(sys.argv[2])
    env = HandoverEnv(mode="ros_lockstep", namespace=namespace, ros_timeout_s=5.0)
    env.reset()
    for _ in range(3):
        env.step(env.action_space.sample())
    if kill_pid:
        killed = []
        def kill():
            time.sleep(0.2)
            os.kill(kill_pid, signal.SIGKILL)
            killed.append(time.monotonic())
        threading.Thread(target=kill).start()
        try:
            while True:  # steps in flight when the sim dies
                env.step(env.action_space.sample())
        except SimUnavailable:
            print(f"raised {time.monotonic() - killed[0]:.2f} s after the kill", flush=True)
            raise  # uncaught, and env.close() never called
    print("done without close()", flush=True)
""")


def run_script(namespace: str, kill_pid: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, namespace, str(kill_pid)], capture_output=True,
                          text=True, timeout=120)


def test_a_script_that_never_closes_its_ros_env_exits_0(make_sim):
    sim, _ = make_sim(**SIM_PARAMS)
    run = run_script(sim.namespace)
    assert "terminate called" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert "done without close()" in run.stdout


@pytest.mark.long
def test_a_sim_killed_mid_step_is_sim_unavailable_naming_what_was_awaited(tmp_path, ros):
    """SIGKILL the sim node while steps are in flight: the step raises SimUnavailable within the
    env's timeout (5 s) naming the request it waited for; the script, which neither catches it
    nor closes the env, ends as an uncaught exception does (exit 1), without an abort."""
    sim, observer = start_sim(new_namespace(), tmp_path, **SIM_PARAMS)
    try:
        run = run_script(sim.namespace, kill_pid=sim.proc.pid)
    finally:
        observer.close()
        sim.proc.wait(10)
        sim.log.close()
    assert sim.proc.returncode == -signal.SIGKILL
    assert "terminate called" not in run.stderr, run.stderr
    assert run.returncode == 1, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("robogym_ros.ros.sim_client.SimUnavailable: the answer to the step request from tick "), last
    assert f"did not arrive from the sim in /{sim.namespace} within 5 s (is the sim still running?)" in last, last
    seconds = float(run.stdout.split("raised ")[1].split(" s")[0])
    assert seconds <= 5.0 + 1.0, run.stdout  # the timeout, plus the step under way when it died
    assert os.path.exists(sim.log.name)


def test_a_lockstep_step_meeting_another_clients_call_is_sent_again_and_stays_bit_equal_to_local(make_sim):
    """#32.7: another client spamming ~/pause owns the run state for a moment, again and again; a
    step request meeting it is refused with nothing changed ("step_busy"), so the env sends it
    again: no step raises, and every observation equals local mode's, bit for bit."""
    sim, observer = make_sim(seed=5, **SIM_PARAMS)
    env = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace)
    local = HandoverEnv()
    stop, pauses = threading.Event(), []

    def spam() -> None:
        while not stop.is_set():
            pauses.append(observer.call("pause").success)

    try:
        obs, _ = env.reset(seed=5)
        assert_same_observation(obs, local.reset(seed=5)[0], "reset:")
        spammer = threading.Thread(target=spam, daemon=True)
        spammer.start()
        actions = np.random.default_rng(0).uniform(-1, 1, (80, *env.action_space.shape)).astype(np.float32)
        for k, action in enumerate(actions):
            obs = env.step(action)[0]  # a plain RuntimeError here is the bug
            assert_same_observation(obs, local.step(action)[0], f"step {k}:")
        stop.set()
        spammer.join(10)
        # The two met: pause calls were refused while a step owned the run state, and the calls went on
        # throughout (so step requests met the pauses' ownership too).
        assert len(pauses) > 20 and pauses.count(False) > 0, (len(pauses), pauses.count(False))
    finally:
        stop.set()
        env.close()
        local.close()


def test_a_seeded_reset_meeting_another_clients_step_raises_sim_busy_never_a_value_error(make_sim):
    """#32.7: a seeded reset whose seed or reset call meets another client's long step request
    (it owns the run state) raises SimBusy (retryable), never ValueError; one that goes through
    is local mode's scene."""
    from robogym_ros.ros.stamps import stamp_ns
    from robogym_ros.wire.step_request import StepRequestEncoder

    sim, observer = make_sim(seed=5, **SIM_PARAMS)
    pub, _ = step_request_channel(sim, observer)
    env = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace)
    local = HandoverEnv()
    stop, spamming, outcomes = threading.Event(), threading.Event(), []

    def spam() -> None:  # 300 ticks from the newest tick, again and again, while spamming
        encoder = None
        while not stop.is_set():
            ticks = observer.snapshot(observer.joint_states)
            if ticks and spamming.is_set():
                last = ticks[-1]
                encoder = encoder or StepRequestEncoder(tuple(last.name))
                pub.publish(encoder.encode(stamp_ns(last.header.stamp), list(last.position),
                                           300 * env.unwrapped.control_dt_ns))
            time.sleep(0.01)

    spammer = threading.Thread(target=spam, daemon=True)
    try:
        env.reset(seed=0)
        spammer.start()
        for seed in range(20):
            # every other seed the other client stops, and the reset, retried, must go through
            if seed % 2 == 0:
                spamming.set()
                time.sleep(0.05)  # its request is in
            else:
                spamming.clear()
            for _attempt in range(1 if seed % 2 == 0 else 100):
                try:
                    obs, _ = env.reset(seed=seed)
                except SimBusy as exc:  # a ValueError or a plain RuntimeError here is the bug
                    assert exc.retryable and "busy: " in str(exc), exc
                    outcome = "busy"
                    time.sleep(0.05)
                    continue
                assert_same_observation(obs, local.reset(seed=seed)[0], f"reset(seed={seed}):")
                outcome = "reset"
                break
            outcomes.append(outcome)
        print(f"seeded resets under step requests: {outcomes.count('reset')} done, {outcomes.count('busy')} busy")
        assert outcomes.count("reset") > 0 and outcomes.count("busy") > 0, outcomes  # the two met
    finally:
        stop.set()
        spammer.join(10)
        env.close()
        local.close()
