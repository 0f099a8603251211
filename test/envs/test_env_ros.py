"""The env over ROS: real sim node processes over real DDS.

Lockstep must give the observations local mode gives, bit for bit, for the same seed and
actions: with a new random target every control tick, a target applied one tick late (a
command overtaken by the step request) would change the trajectory at once.
"""
from __future__ import annotations

import ast
import importlib.util
import itertools
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.envs import HandoverEnv
from robogym_ros.envs.vector.sim_fleet import SimFleet, sim_command
from robogym_ros.ros.sim_client import SimUnavailable

ROOT = Path(__file__).parents[2]
SIM_PARAMS = {"start_paused": True, "camera_period_s": 0.0}
_fleets = itertools.count()


def assert_same_step(a, b):
    (obs_a, *rest_a), (obs_b, *rest_b) = a, b
    assert obs_a.keys() == obs_b.keys()
    for key in obs_a:
        np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)
    assert rest_a == rest_b  # reward, terminated, truncated, info (or just info after reset)


@pytest.mark.parametrize("action_repeat, cameras", [(1, ()), (4, ("overhead",))])
def test_lockstep_matches_local_bit_for_bit(make_sim, action_repeat, cameras):
    sim, _ = make_sim(seed=7, **SIM_PARAMS)
    kwargs = {"action_repeat": action_repeat, "cameras": cameras, "camera_width_px": 64, "camera_height_px": 48}
    ros = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace, **kwargs)
    local = HandoverEnv(**kwargs)
    rng = np.random.default_rng(action_repeat)
    try:
        assert_same_step(ros.reset(seed=7), local.reset(seed=7))
        for episode_steps in (40, 15):
            for _ in range(episode_steps):
                action = rng.uniform(-1, 1, 12).astype(np.float32)
                assert_same_step(ros.step(action), local.step(action))
            assert_same_step(ros.reset(), local.reset())  # the next scene of the same sequence
    finally:
        ros.close()
        local.close()


def test_the_equality_test_sees_a_target_applied_one_tick_late(make_sim, monkeypatch):
    """Positive control: a lockstep step whose targets take effect one tick late (what a command
    overtaken by its step request would do; the step request carries both, so it cannot) makes
    lockstep and local part at once."""
    from robogym_ros.envs.ros.backend import RosBackend

    real_step = RosBackend.step
    previous = {}

    def late_step(self, targets, n_ticks):
        held = previous.get("targets", {})
        previous["targets"] = targets
        real_step(self, held, 1)  # one tick on the old targets, then the new ones
        return real_step(self, targets, n_ticks - 1)

    sim, _ = make_sim(seed=7, **SIM_PARAMS)
    monkeypatch.setattr(RosBackend, "step", late_step)
    ros = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace, action_repeat=2)
    local = HandoverEnv(action_repeat=2)
    rng = np.random.default_rng(1)
    try:
        assert_same_step(ros.reset(seed=7), local.reset(seed=7))
        actions = rng.uniform(-1, 1, (5, 12)).astype(np.float32)
        parted = [not np.array_equal(ros.step(a)[0]["observation"], local.step(a)[0]["observation"])
                  for a in actions]
        assert parted[0], parted
    finally:
        ros.close()
        local.close()


def test_realtime_mode_returns_the_newest_tick_and_says_how_far_the_world_moved(make_sim):
    sim, observer = make_sim(seed=7, **SIM_PARAMS)
    env = HandoverEnv(mode="ros_realtime", namespace=sim.namespace, action_repeat=2)
    local = HandoverEnv()
    try:
        reset = env.reset(seed=7)
        assert_same_step(reset, local.reset(seed=7))  # the reset state is the same scene
        index = reset[1]["tick_index"]
        for _ in range(10):
            _, _, _, _, info = env.step(env.action_space.sample())
            assert info["ticks_elapsed"] >= 2 and info["tick_index"] == index + info["ticks_elapsed"]
            assert info["stamp_ns"] == info["tick_index"] * env.control_dt_ns
            index = info["tick_index"]
        # The sim ran on its own between steps: it published ticks the env never returned.
        observer.wait_for(lambda: len(observer.snapshot(observer.joint_states)) > index - reset[1]["tick_index"],
                          what="the running sim's ticks")
    finally:
        env.close()
        local.close()


def test_any_seed_resets_a_running_sim_to_local_modes_scene_of_that_seed(make_sim):
    """The sim takes a new seed at run time (its live seed parameter): reset(seed=s) over ROS is
    local reset(seed=s), whatever the sim was started with and whatever it did before."""
    sim, observer = make_sim(seed=7, **SIM_PARAMS)
    env = HandoverEnv(mode="ros_lockstep", namespace=sim.namespace)
    local = HandoverEnv()
    try:
        for seed in (8, 7, 7, 123):
            obs, info = env.reset(seed=seed)
            expected, _ = local.reset(seed=seed)
            for key in obs:
                np.testing.assert_array_equal(obs[key], expected[key], err_msg=f"seed {seed}: {key}")
            step = env.step(env.action_space.sample())  # history the next seeded reset must not see
            assert step[4]["ticks_elapsed"] == env.unwrapped.action_repeat
        # Unseeded: the next scene of seed 123's sequence (the sim's clock, in info, runs on).
        obs, expected = env.reset()[0], local.reset()[0]
        for key in obs:
            np.testing.assert_array_equal(obs[key], expected[key], err_msg=key)
        # The spec says which sequence the sim draws from.
        observer.wait_for(lambda: observer.spec["seed"] == 123, what="the spec's seed")
        with pytest.raises(ValueError, match=r"seed must be an integer in 0 \.\. 2147483647"):
            env.reset(seed=-1)
    finally:
        env.close()
        local.close()


def test_no_sim_in_the_namespace_is_one_clear_error():
    with pytest.raises(SimUnavailable, match=r"no robogym_sim answers in namespace '/nobody_here_\d+' "
                                             r"\(no latched spec within 1 s; start one: python -m "
                                             r"robogym_ros.nodes.sim_node --ros-args"):
        HandoverEnv(mode="ros_lockstep", namespace=f"nobody_here_{os.getpid()}", ros_timeout_s=1.0)


@pytest.mark.long
def test_vector_env_of_ros_envs_over_k_sims_in_namespaces():
    k = 2
    with SimFleet(k, prefix=f"fleet{next(_fleets)}_{os.getpid()}_", seed=30, **SIM_PARAMS) as fleet:
        vec = gym.vector.AsyncVectorEnv([fleet.env_fn(i) for i in range(k)], context="spawn")
        local = [HandoverEnv() for _ in range(k)]
        try:
            obs, _ = vec.reset(seed=fleet.seeds)
            expected = [env.reset(seed=s)[0] for env, s in zip(local, fleet.seeds)]
            rng = np.random.default_rng(0)
            for _ in range(5):
                for i in range(k):
                    np.testing.assert_array_equal(obs["observation"][i], expected[i]["observation"])
                    np.testing.assert_array_equal(obs["desired_goal"][i], expected[i]["desired_goal"])
                actions = rng.uniform(-1, 1, (k, 12)).astype(np.float32)
                obs, *_ = vec.step(actions)
                expected = [env.step(a)[0] for env, a in zip(local, actions)]
        finally:
            vec.close()
            for env in local:
                env.close()
    assert fleet.exit_codes == [0] * k, fleet.log_dir  # stopped by the with-block, cleanly


def test_fleet_stops_its_sims_cleanly_and_refuses_bad_parameters():
    fleet = SimFleet(2, prefix=f"fleet{next(_fleets)}_{os.getpid()}_", seed=3, **SIM_PARAMS)
    env = HandoverEnv(mode="ros_lockstep", namespace=fleet.namespaces[1])
    try:
        env.reset(seed=4)  # sim 1 has seed 3 + 1
    finally:
        env.close()
        assert fleet.stop() == [0, 0]
    with pytest.raises(ValueError, match=r"unknown sim parameter 'speed'"):
        sim_command("sim0", speed=2)
    assert set(fleet.dead()) == set(fleet.namespaces)  # stopped: each says how it ended
    assert fleet.dead()[fleet.namespaces[0]].startswith("exit code 0: ")
    with pytest.raises(ValueError, match=r"decimation = 0 is outside its range"):
        SimFleet(1, decimation=0)


# --- the launch file for K sims -----------------------------------------------------------------

def test_multi_sim_launch_names_the_sim_and_takes_the_parameter_table():
    path = ROOT / "launch" / "multi_sim.launch.py"
    tree = ast.parse(path.read_text())
    executables = {kw.value.value for n in ast.walk(tree) if isinstance(n, ast.Call) for kw in n.keywords
                   if kw.arg == "executable" and isinstance(kw.value, ast.Constant)}
    assert executables == {"robogym_sim"}
    arguments = {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", "") == "DeclareLaunchArgument" and isinstance(n.args[0], ast.Constant)}
    assert {"count", "prefix", "params_file"} <= arguments
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "robogym_ros.params"
                for a in n.names}
    assert {"SIM_PARAMS", "given_parameters"} <= imported, imported


@pytest.mark.toolchain
def test_multi_sim_launch_description_loads():
    launch_ros = pytest.importorskip(
        "launch_ros.actions", reason="launch_ros is not installed (no ROS install here; it is on no registry)")
    path = ROOT / "launch" / "multi_sim.launch.py"
    spec = importlib.util.spec_from_file_location("multi_sim_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities
    assert launch_ros.Node
