"""The scripted handover expert in local mode: it completes the handover, and its grasp checks react.

Real MuJoCo physics through the Gymnasium env; the expert sees only the env's observation.
A missed grasp is made real (the block is moved away while the jaws close): the check must
see jaws shut on nothing, and the expert must re-plan from where the block now is, or, when
every try misses, stop in the grasp phase with the reason, never carry on to the handover.
"""
from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.envs import task
from robogym_ros.expert.policy import MAX_TABLE_TRIES, goal_of_tray
from robogym_ros.expert.runner import EnvExpert, run_episode


@pytest.fixture(scope="module")
def env():
    e = gym.make("robogym_ros/Handover-v0")
    yield e
    e.close()


@pytest.fixture(scope="module")
def expert(env):
    return EnvExpert(env)


# seed 1: an upright block (handed over level, past the near fingertips); seed 0: a lying block
# (held pointing down, taken end-on); seed 2: lying, on the other side.
@pytest.mark.parametrize("seed", [1, 0, 2])
def test_expert_hands_over_and_places_within_the_time_limit(env, expert, seed):
    result = run_episode(env, seed, expert)
    assert result.success, result
    assert result.failure is None
    assert result.steps < 250  # inside the registered TimeLimit (10 s)


def test_goal_is_the_envs_goal():
    tray = np.array([0.16, 0.29, 0.0, 0.7, 0.0, 0.0, 0.7])
    np.testing.assert_array_equal(goal_of_tray(tray), task.goal_from_tray_pose(tray))


def _run_moving_the_block_at_each_close(misses: int, max_steps: int = 400):
    """An episode where the block is pushed 3 cm away each time the near jaws start to close,
    for the first ``misses`` closes: a real missed grasp."""
    env = gym.make("robogym_ros/Handover-v0", max_episode_steps=max_steps)
    try:
        runner = EnvExpert(env)
        runner.reset()
        obs, _ = env.reset(seed=1)
        physics = env.unwrapped._backend._physics
        adr = physics.model.jnt_qposadr[physics.model.joint("block_free").id]
        moved, in_close, phases = 0, False, []
        for _ in range(max_steps):
            obs, _, terminated, truncated, info = env.step(runner(obs))
            phase = runner.expert.phase
            phases.append(phase)
            if phase == "near_close" and not in_close and moved < misses:
                physics.data.qpos[adr] += 0.03  # away from the jaws, still in the near arm's reach
                mujoco.mj_forward(physics.model, physics.data)
                moved += 1
            in_close = phase == "near_close"
            if terminated or truncated or runner.expert.failure is not None:
                return runner.expert, info, phases
        return runner.expert, info, phases
    finally:
        env.close()


def test_a_missed_table_grasp_is_seen_and_retried_from_a_new_plan():
    expert, info, phases = _run_moving_the_block_at_each_close(misses=1)
    assert any("jaws shut on nothing" in e for e in expert.events), expert.events
    assert "near_regrasp" in phases
    assert info["is_success"] == 1.0, (expert.phase, expert.failure, expert.events)


def test_missing_every_try_is_reported_in_the_grasp_phase_and_goes_no_further():
    expert, info, phases = _run_moving_the_block_at_each_close(misses=MAX_TABLE_TRIES)
    assert expert.failure is not None and expert.failure.phase == "near_grasp", expert.failure
    assert f"{MAX_TABLE_TRIES} tries" in expert.failure.reason
    assert "to_handover" not in phases and "far_pregrasp" not in phases
    assert info["is_success"] == 0.0
