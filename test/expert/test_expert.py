"""The scripted handover expert in local mode: it completes the handover, and its grasp checks react.

Real MuJoCo physics through the Gymnasium env; the expert sees only the env's observation.
A missed grasp is made real (the block is moved away while the jaws close): the check must
see jaws shut on nothing, and the expert must re-plan from where the block now is, or, when
every try misses, stop in the grasp phase with the reason, never carry on to the handover.
A block that slips in the far jaws, or falls from them, is made real too, and what the expert
says is checked against the physics' own contacts. Its rollouts use no wall clock: a clock
that jumps (a loaded machine) changes no action.
"""
from __future__ import annotations

import itertools
import time

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.expert.holding import HoldChecks
from robogym_ros.expert.percept import Percept
from robogym_ros.expert.policy import MAX_TABLE_TRIES
from robogym_ros.expert.runner import EnvExpert, run_episode
from robogym_ros.task import goals, scene
from robogym_ros.task.placement import goal_of_tray


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
    np.testing.assert_array_equal(goal_of_tray(tray), goals.goal_from_tray_pose(tray))
    np.testing.assert_allclose(goal_of_tray(tray), [0.16, 0.29, 0.0165], atol=1e-15)


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


# --- what the expert says about its grip, against the physics' own contacts -------------------

def _physics_contacts(physics) -> dict[str, set[str]]:
    """Ground truth: the geoms touching the block in the physics' own MjData (after mj_forward)."""
    m, d = physics.model, physics.data
    mujoco.mj_forward(m, d)
    block = m.body("block").id
    out = set()
    for c in d.contact[:d.ncon]:
        g1, g2 = int(c.geom[0]), int(c.geom[1])
        if m.geom_bodyid[g1] == block or m.geom_bodyid[g2] == block:
            out.add(m.geom(g2 if m.geom_bodyid[g1] == block else g1).name)
    return out


def _percept_of(physics, time_s: float = 0.0) -> Percept:
    m, d = physics.model, physics.data
    q = np.array([d.qpos[m.joint(n).qposadr[0]] for n in scene.JOINT_NAMES])
    pose = {b: d.qpos[m.joint(f"{b}_free").qposadr[0]:][:7].copy() for b in ("block", "tray")}
    return Percept(time_s, q, pose["block"], pose["tray"])


@pytest.fixture(scope="module")
def carried():
    """An expert episode (seed 0, the right arm places) stopped on its way to the tray, the block
    in the far jaws: the env and the physics there."""
    env = gym.make("robogym_ros/Handover-v0")
    runner = EnvExpert(env)
    runner.reset()
    obs, _ = env.reset(seed=0)
    while runner.expert.phase != "to_tray":
        obs, *_ = env.step(runner(obs))
    for _ in range(3):
        obs, *_ = env.step(runner(obs))
    yield env, runner
    env.close()


def _shifted(physics, offset_m) -> None:
    """Move the block by ``offset_m`` (world) in the physics' state; the caller restores it."""
    adr = physics.model.joint("block_free").qposadr[0]
    physics.data.qpos[adr:adr + 3] += offset_m


def test_a_block_that_slid_in_the_jaws_is_held_one_on_a_jaw_slips_and_one_on_the_table_fell(carried):
    """The hold the expert reads from what it observes against the physics' contacts of the full
    state: a block that slid along the jaws is still held (it is placed from there), one past the
    moving jaw's end hangs on the fixed jaw (slipping, not fallen), one on the table fell."""
    env, runner = carried
    physics = env.unwrapped._backend._physics
    checks = HoldChecks(env.unwrapped._model_path)
    far = "right"
    jaws = {f"{far}_fixed_jaw", f"{far}_moving_jaw_finger"}
    site_x = physics.data.site(f"{far}_grasp").xmat.reshape(3, 3)[:, 0]  # along the jaws, toward the tips
    cases = {"held where grasped": np.zeros(3), "slid 10 mm toward the tips": 0.010 * site_x,
             "slid 25 mm toward the palm": -0.025 * site_x}
    saved = physics.data.qpos.copy()
    try:
        for what, offset in cases.items():
            physics.data.qpos[:] = saved
            _shifted(physics, offset)
            touching = _physics_contacts(physics)
            assert jaws <= touching, (what, touching)  # ground truth: between both jaws
            hold = checks.hold(_percept_of(physics), far)
            assert hold.held, (what, hold)
        # slid 20 mm toward the tips: past the moving jaw's end, on the fixed jaw alone: slipping, not fallen
        physics.data.qpos[:] = saved
        _shifted(physics, 0.020 * site_x)
        touching = _physics_contacts(physics)
        assert touching == {f"{far}_fixed_jaw"}, touching
        hold = checks.hold(_percept_of(physics), far)
        assert hold.state == "slipping" and "slipped out of the right jaws" in hold.reason("x"), hold
        # on the table, far from any arm: it fell, and the reason says where it lies
        physics.data.qpos[:] = saved
        adr = physics.model.joint("block_free").qposadr[0]
        physics.data.qpos[adr:adr + 7] = [0.25, 0.0, 0.0125, np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]
        touching = _physics_contacts(physics)
        assert touching == {"table"}, touching
        hold = checks.hold(_percept_of(physics), far)
        assert hold.state == "fell" and "fell from the right gripper" in hold.reason("on the way to the tray")
        assert "on the table" in hold.reason("x"), hold.reason("x")
    finally:
        physics.data.qpos[:] = saved
        mujoco.mj_forward(physics.model, physics.data)


def _expert_reaches(env, phase: str):
    """The expert run from seed 0's reset until it enters ``phase``: (runner, obs, physics, the
    block's qpos address), so a test can move the block there."""
    runner = EnvExpert(env)
    runner.reset()
    obs, _ = env.reset(seed=0)
    physics = env.unwrapped._backend._physics
    adr = physics.model.joint("block_free").qposadr[0]
    while runner.expert.phase != phase:
        obs, *_ = env.step(runner(obs))
    return runner, obs, physics, adr


def test_a_block_dropped_on_the_way_to_the_tray_is_reported_as_fallen_where_it_lies():
    env = gym.make("robogym_ros/Handover-v0")
    try:
        runner, obs, physics, adr = _expert_reaches(env, "to_tray")
        physics.data.qpos[adr:adr + 7] = [0.25, 0.0, 0.0125, np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]
        physics.data.qvel[:] = 0.0
        for _ in range(100):
            obs, *_ = env.step(runner(obs))
            if runner.expert.failure is not None:
                break
        failure = runner.expert.failure
        assert failure is not None and failure.phase == "to_tray", (runner.expert.phase, failure)
        touching = _physics_contacts(physics)
        assert not any(g.startswith("right_") for g in touching) and "table" in touching, touching
        assert "fell from the right gripper" in failure.reason and "on the table" in failure.reason, failure
    finally:
        env.close()


# --- no wall clock ------------------------------------------------------------------------------

def test_a_rollout_is_the_same_whatever_the_wall_clock_says(monkeypatch):
    """A loaded machine makes every call look slow: here each reading of the wall clock jumps by
    a second. The expert reads none, so every action is the same, bit for bit."""
    env = gym.make("robogym_ros/Handover-v0")
    try:
        quiet = run_episode(env, 3, EnvExpert(env))
        clock = itertools.count(0.0, 1.0)
        for name in ("perf_counter", "monotonic", "time", "process_time", "thread_time"):
            monkeypatch.setattr(time, name, lambda: next(clock))
        loaded = run_episode(env, 3, EnvExpert(env))
    finally:
        env.close()
    assert quiet.success and (loaded.digest, loaded.steps) == (quiet.digest, quiet.steps), (quiet, loaded)


def test_a_block_dropped_where_only_the_far_arm_reaches_is_picked_by_the_far_arm():
    """The block falls from the near gripper on its way to the handover and lands on the far arm's
    side of the table (put there, at rest): the expert says it fell and lies on the table, finds the
    near arm cannot reach it, and the far arm picks it from the table and places it."""
    env = gym.make("robogym_ros/Handover-v0", max_episode_steps=400)
    try:
        runner = EnvExpert(env)
        runner.reset()
        obs, _ = env.reset(seed=1)
        physics = env.unwrapped._backend._physics
        adr = physics.model.joint("block_free").qposadr[0]
        far_side = -np.sign(obs["achieved_goal"][1])
        while runner.expert.phase != "to_handover":
            obs, *_ = env.step(runner(obs))
        physics.data.qpos[adr:adr + 7] = [0.14, far_side * 0.15, 0.0125, np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]
        physics.data.qvel[:] = 0.0
        phases = set()
        for _ in range(350):
            obs, _, terminated, truncated, info = env.step(runner(obs))
            phases.add(runner.expert.phase)
            if terminated or runner.expert.failure is not None:
                break
        events = runner.expert.events
        assert terminated and info["is_success"] == 1.0, (runner.expert.phase, runner.expert.failure, events)
        assert "lies on the table" in events[0] and "far arm picks it" in events[1], events
        assert {"far_table_descend", "far_table_close"} <= phases and "far_descend" not in phases
    finally:
        env.close()


def test_a_block_that_falls_into_the_tray_is_let_be_and_the_episode_succeeds():
    """On the way to the tray the block drops from the jaws into the tray (put there, resting on its
    floor): the expert says so, lets go and is done; the env judges the block placed."""
    env = gym.make("robogym_ros/Handover-v0")
    try:
        runner, obs, physics, adr = _expert_reaches(env, "to_tray")
        tray = obs["observation"][env.unwrapped.layout.object_poses][7:]
        physics.data.qpos[adr:adr + 7] = [*(obs["desired_goal"] + [0.02, 0.0, 0.0]), np.cos(np.pi / 4),
                                          np.sin(np.pi / 4), 0.0, 0.0]
        physics.data.qvel[:] = 0.0
        assert tray[2] < 0.01  # the tray on the table
        for _ in range(100):  # on past the env's success (it comes at once): until the expert is done
            obs, _, terminated, truncated, info = env.unwrapped.step(runner(obs))
            if runner.expert.done or runner.expert.failure is not None:
                break
        assert runner.expert.done and runner.expert.failure is None, (runner.expert.phase, runner.expert.failure)
        assert any("lies in the tray" in e for e in runner.expert.events), runner.expert.events
        for _ in range(10):  # let go: the block lies in the tray, placed
            obs, _, terminated, truncated, info = env.unwrapped.step(runner(obs))
        assert terminated and info["is_success"] == 1.0, info
    finally:
        env.close()
