"""The native batched env (robogym_ros.envs.vector.batched): K scenes stepped by mujoco.rollout on
threads must be K single envs, bit for bit, through terminations, truncations, blow-ups and
next-step autoresets, and every array it returns must be its own.

Positive controls: a wrong seed for one sub-env, and a rollout started without the scene's
warm start (what ``mujoco.rollout`` does when ``initial_warmstart`` is not given), each make
the comparison fail; an array returned twice makes the memory check fail.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from batched_reference import compare_with_singles, hold_the_reset_pose, put_block_in_tray, shared_pairs
from gymnasium.vector import AutoresetMode

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.checks import check_her_consistency
from robogym_ros.envs import ENV_ID, HerReplay, relabel
from robogym_ros.envs.vector.batched import BatchedHandoverEnv
from robogym_ros.envs.vector.episodes import EpisodeCollector
from robogym_ros.task import goals


def make_vec(k: int, **kwargs):
    return gym.make_vec(ENV_ID, num_envs=k, vectorization_mode="vector_entry_point", **kwargs)


def test_make_vec_gives_the_batched_env_with_next_step_autoreset():
    vec = make_vec(2, num_threads=2)
    try:
        assert isinstance(vec, BatchedHandoverEnv) and vec.num_envs == 2 and vec.num_threads == 2
        assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        assert vec.max_episode_steps == 250  # the registered TimeLimit, applied per sub-env
        assert vec.action_space.shape == (2, 12)
        assert vec.observation_space["observation"].shape == (2, 40)
    finally:
        vec.close()


def _blocks_into_trays(t, vec, singles):
    """Both sides alike: each new scene's block is laid in its tray (the step after it comes to
    rest there, the episode succeeds: placed, touching no arm)."""
    for i, env in enumerate(singles):
        physics = env.unwrapped._backend._physics
        if put_block_in_tray(physics.data, physics.model):
            p = vec._scenes.physics(i)
            assert put_block_in_tray(p.data, p.model)


@pytest.mark.parametrize("case, kwargs", [
    # 5-step episodes: time-limit truncations, two autoresets per sub-env in 13 steps
    ("time limit", {"max_episode_steps": 5, "reward_type": "dense"}),
    # each new scene's block laid in the tray, arms held folded: success two steps later, 3-step episodes
    ("success", {"max_episode_steps": 50, "reward_type": "staged"}),
])
# 3 scenes: the task's facts scene by scene; 6 (> goals.SCALAR_BATCH_MAX, held at 4 here): over the batch in numpy
@pytest.mark.parametrize("seeds", [[11, 0, 5], [11, 0, 5, 7, 2, 9]])
def test_sub_envs_equal_single_envs_bit_for_bit(case, kwargs, seeds, monkeypatch):
    monkeypatch.setattr(goals, "SCALAR_BATCH_MAX", 4)
    vec = make_vec(len(seeds), num_threads=2, **kwargs)
    success = case == "success"
    try:
        result = compare_with_singles(vec, seeds, 13, single_kwargs=kwargs,
                                      before_step=_blocks_into_trays if success else None,
                                      actions=hold_the_reset_pose if success else None)
    finally:
        vec.close()
    assert result.mismatches == [], result.mismatches
    assert (result.autoresets >= 2).all(), result.autoresets  # at least two episodes each, then a third
    assert (result.truncations if case == "time limit" else result.terminations) >= 2 * len(seeds)
    pairs = shared_pairs(result.returned)
    assert len(result.returned) > 200 and pairs == [], pairs[:5]


def test_a_blow_up_is_the_single_envs_blow_up():
    """An absurd joint velocity makes MuJoCo reset the scene mid-step (rollout stops there):
    the batch falls back to the single env's path and matches it."""
    def blow_up_sub_env_1(t, vec, singles):
        if t == 2:
            vec._scenes.physics(1).data.qvel[0] = 1e12
            singles[1].unwrapped._backend._physics.data.qvel[0] = 1e12

    vec = make_vec(3, num_threads=2, max_episode_steps=20)
    try:
        result = compare_with_singles(vec, [3, 4, 5], 5, single_kwargs={"max_episode_steps": 20},
                                      before_step=blow_up_sub_env_1)
    finally:
        vec.close()
    assert result.mismatches == [], result.mismatches
    assert result.truncations == 1 and result.autoresets.tolist() == [0, 1, 0]


def test_positive_controls_wrong_seed_missing_warm_start_and_a_shared_array():
    vec = make_vec(3, num_threads=2, max_episode_steps=5)
    try:
        wrong = compare_with_singles(vec, [11, 0, 5], 3, single_kwargs={"max_episode_steps": 5},
                                     vec_seeds=[11, 1, 5])
        assert wrong.mismatches and all("sub-env 1" in m for m in wrong.mismatches if "sub-env" in m)

        def drop_warm_start(t, vec, singles):  # rollout without initial_warmstart starts from zero
            vec._scenes.physics(2).data.qacc_warmstart[:] = 0.0

        cold = compare_with_singles(vec, [11, 0, 5], 4, single_kwargs={"max_episode_steps": 5},
                                    before_step=drop_warm_start)
        assert cold.mismatches and all("sub-env 2" in m for m in cold.mismatches if "sub-env" in m)
    finally:
        vec.close()
    a = np.zeros(4)
    assert shared_pairs([np.zeros(3), a, np.ones(2), a[1:]]) == [(1, 3)]


def test_episodes_relabel_and_her_replay():
    vec = make_vec(2, max_episode_steps=4)
    collector = EpisodeCollector(vec.num_envs)
    replay = HerReplay(vec, capacity=200, strategy="future", k=2, seed=0)
    episodes = []
    try:
        obs, _ = vec.reset(seed=7)
        collector.reset(obs)
        rng = np.random.default_rng(0)
        for _ in range(9):
            actions = rng.uniform(-1, 1, (2, 12)).astype(np.float32)
            episodes += collector.add(actions, *vec.step(actions))
        assert sorted(i for i, _ in episodes) == [0, 0, 1, 1] and all(len(e) == 4 for _, e in episodes)
        for _, episode in episodes:
            new = relabel(episode, vec, "future", k=3, rng=1)
            result = check_her_consistency(new, vec.compute_reward, vec.compute_terminated,
                                           vec.compute_truncated, originals=episode)
            assert result.status == "pass", result.summary
            replay.add_episode(episode)
        assert len(replay) == 4 * (4 + 4 * 2) and len(replay.sample(16)) == 16
        # the next episode starts at the reset observation, not where the one before ended
        first, second = episodes[0][1], episodes[2][1]
        assert not np.array_equal(first.next_obs["observation"][-1], second.obs["observation"][0])
        assert (second.obs["observation"][0][:12] == first.obs["observation"][0][:12]).all()  # folded arms
    finally:
        vec.close()


def test_pixels_equal_the_single_envs_pixels():
    kwargs = {"cameras": ["overhead"], "camera_width_px": 64, "camera_height_px": 48, "render_mode": "rgb_array"}
    vec = make_vec(2, **kwargs)
    try:
        result = compare_with_singles(vec, [1, 2], 2, single_kwargs=kwargs)
        assert result.mismatches == [], result.mismatches
        assert vec.observation_space["pixels/overhead"].shape == (2, 48, 64, 3)
        frames = vec.render()
        assert len(frames) == 2 and frames[0].shape == (48, 64, 3) and not np.shares_memory(frames[0], frames[1])
    finally:
        vec.close()


def test_reset_mask_resets_only_the_marked_sub_envs():
    vec = make_vec(3, max_episode_steps=5)
    try:
        vec.reset(seed=0)
        moved, _, _, _, _ = vec.step(np.full((3, 12), 0.5, dtype=np.float32))
        obs, info = vec.reset(seed=[None, 8, None], options={"reset_mask": np.array([False, True, False])})
        single = robogym_ros.envs.HandoverEnv()
        want, _ = single.reset(seed=8)
        single.close()
        assert np.array_equal(obs["observation"][1], want["observation"])
        for i in (0, 2):  # untouched: where the step left them, and no info for them
            assert np.array_equal(obs["observation"][i], moved["observation"][i])
        assert info["_tick_index"].tolist() == [False, True, False] and info["tick_index"][0] == 0
    finally:
        vec.close()


def test_bad_input_is_refused_and_changes_nothing():
    vec = make_vec(3, max_episode_steps=5)
    try:
        with pytest.raises(RuntimeError, match="reset"):
            vec.step(np.zeros((3, 12), dtype=np.float32))
        with pytest.raises(ValueError, match="seed of sub-env 2"):
            vec.reset(seed=[0, 1, -4])
        with pytest.raises(ValueError, match="seed must be"):
            vec.reset(seed=[0, 1])
        obs, info = vec.reset(seed=0)
        bad = np.zeros((3, 12), dtype=np.float32)
        bad[2, 5] = np.nan
        with pytest.raises(ValueError, match="sub-env 2: action for 'left_gripper' is not finite"):
            vec.step(bad)
        bad[2, 5] = 0.0
        bad[1, 0] = 3.0
        with pytest.raises(ValueError, match="sub-env 1: action for 'left_shoulder_pan' is 3"):
            vec.step(bad)
        with pytest.raises(ValueError, match="shape"):
            vec.step(np.zeros((2, 12), dtype=np.float32))
        _, _, _, _, after = vec.step(np.zeros((3, 12), dtype=np.float32))
        assert (after["tick_index"] == info["tick_index"] + 4).all()  # the refused steps stepped nothing
    finally:
        vec.close()
    with pytest.raises(ValueError, match="local physics only"):
        make_vec(2, mode="ros_lockstep")
    with pytest.raises(ValueError, match="reward_type"):
        make_vec(2, reward_type="shaped")
