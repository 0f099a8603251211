"""HER relabelling on real episodes of the env, and the consistency checker's positive controls.

Every fault the checker names is injected by a relabeller broken in that one way; the correct
relabeller gives zero findings on the same episode.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.checks.her_consistency import GoalBatch, check_her_consistency
from robogym_ros.envs import ENV_ID, HandoverEnv, HerReplay, relabel
from robogym_ros.envs.her import relabel_with_goals
from robogym_ros.task import goals

EPISODE_STEPS = 12


def run_episode(env, seed: int = 21) -> GoalBatch:
    """One episode to its end (the TimeLimit truncates it), random actions."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    steps = []
    while True:
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs, action, reward, terminated, truncated, next_obs, info))
        obs = next_obs
        if terminated or truncated:
            return GoalBatch.from_steps(steps)


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV_ID, max_episode_steps=EPISODE_STEPS)
    yield e
    e.close()


@pytest.fixture(scope="module")
def episode(env):
    ep = run_episode(env)
    assert len(ep) == EPISODE_STEPS and ep.truncated[-1] and not ep.truncated[:-1].any()
    return ep


def check(batch, env, originals=None):
    u = env.unwrapped
    return check_her_consistency(batch, u.compute_reward, u.compute_terminated, u.compute_truncated,
                                 originals=originals)


def codes(result) -> set[str]:
    return {f.code for f in result.findings}


# --- the relabeller -------------------------------------------------------------------------

def test_relabelling_with_the_original_goal_reproduces_the_env(env, episode):
    same = relabel_with_goals(episode, np.arange(len(episode)), episode.obs["desired_goal"], env)
    np.testing.assert_array_equal(same.reward, episode.reward)
    np.testing.assert_array_equal(same.terminated, episode.terminated)
    np.testing.assert_array_equal(same.truncated, episode.truncated)  # the TimeLimit's, kept
    assert same.infos == episode.infos
    assert check(episode, env).ok and check(same, env, originals=episode).ok


@pytest.mark.parametrize("strategy, per_transition", [("final", 1), ("future", 4), ("episode", 4)])
def test_each_strategy_gives_consistent_transitions(env, episode, strategy, per_transition):
    out = relabel(episode, env, strategy, k=4, rng=0)
    n = len(episode)
    assert len(out) == n * per_transition
    np.testing.assert_array_equal(out.source, np.repeat(np.arange(n), per_transition))
    achieved = episode.next_obs["achieved_goal"]
    for goal, s in zip(out.obs["desired_goal"], out.source):
        allowed = {"final": achieved[n - 1:], "future": achieved[s:], "episode": achieved}[strategy]
        assert (allowed == goal).all(axis=1).any(), (strategy, s, goal)
    np.testing.assert_array_equal(out.next_obs["desired_goal"], out.obs["desired_goal"])
    np.testing.assert_array_equal(out.obs["achieved_goal"], episode.obs["achieved_goal"][out.source])
    assert out.truncated[out.source == n - 1].all()  # the time limit survives every new goal
    result = check(out, env, originals=episode)
    assert result.ok, result.summary
    # The block hardly moves under random arm motion: goals it achieved are successes.
    assert out.terminated.any() and not episode.terminated.any()


def test_relabel_touches_nothing_of_the_episode(env, episode):
    before = {k: v.copy() for k, v in episode.obs.items()}
    out = relabel(episode, env, "future", k=2, rng=1)
    for k, v in before.items():
        np.testing.assert_array_equal(episode.obs[k], v)
    for key in out.obs:
        assert not np.shares_memory(out.obs[key], episode.obs[key])
        assert not np.shares_memory(out.obs[key], out.next_obs[key])
    assert all(a is not b for a, b in zip(out.infos, [episode.infos[s] for s in out.source]))


def test_bad_relabel_arguments_are_named(env, episode):
    with pytest.raises(ValueError, match=r"strategy must be one of \('final', 'future', 'episode'\)"):
        relabel(episode, env, "random")
    with pytest.raises(ValueError, match=r"k must be an integer >= 1"):
        relabel(episode, env, "future", k=0)
    with pytest.raises(TypeError, match=r"has no compute_reward"):
        relabel(episode, object())
    with pytest.raises(ValueError, match=r"obs\['desired_goal'\] has 3 rows, the batch has 12"):
        GoalBatch({**episode.obs, "desired_goal": episode.obs["desired_goal"][:3]}, episode.next_obs,
                  episode.action, episode.reward, episode.terminated, episode.truncated, episode.infos)


def test_her_is_consistent_on_an_episode_that_places_the_block():
    """The expert's episode, to the step the block is placed (terminated): relabelled with its own
    goals, the env's functions give back every reward and termination the env gave, success
    included; relabelled with goals it achieved later, the result is consistent."""
    from robogym_ros.expert.runner import EnvExpert
    for reward_type in ("sparse", "staged"):
        env = gym.make(ENV_ID, reward_type=reward_type)
        try:
            expert = EnvExpert(env)
            expert.reset()
            obs, _ = env.reset(seed=1)
            steps = []
            while True:
                action = expert(obs)
                next_obs, reward, terminated, truncated, info = env.step(action)
                steps.append((obs, action, reward, terminated, truncated, next_obs, info))
                obs = next_obs
                if terminated or truncated:
                    break
            episode = GoalBatch.from_steps(steps)
            assert episode.terminated[-1] and episode.infos[-1]["is_success"] == 1.0
            same = relabel_with_goals(episode, np.arange(len(episode)), episode.obs["desired_goal"], env)
            np.testing.assert_array_equal(same.reward, episode.reward)
            np.testing.assert_array_equal(same.terminated, episode.terminated)
            out = relabel(episode, env, "future", k=4, rng=0)
            result = check(out, env, originals=episode)
            assert result.ok, result.summary
            assert out.terminated.any()  # goals it reached and was left at, still: successes
        finally:
            env.close()


# --- the checker's positive controls: one broken relabeller per fault ----------------------------

def forgets_next_goal(episode, env):
    out = relabel(episode, env, "future", k=4, rng=0)
    out.next_obs["desired_goal"] = episode.next_obs["desired_goal"][out.source]
    return out


def keeps_old_terminated(episode, env):
    out = relabel(episode, env, "future", k=4, rng=0)
    out.terminated = episode.terminated[out.source].copy()
    return out


def drops_time_limit_truncation(episode, env):
    out = relabel(episode, env, "future", k=4, rng=0)
    u = env.unwrapped
    out.truncated = np.asarray(u.compute_truncated(out.next_obs["achieved_goal"], out.obs["desired_goal"],
                                                   out.info_array()), dtype=bool)
    return out


def edits_achieved_goal(episode, env):
    out = relabel(episode, env, "episode", k=4, rng=0)
    out.next_obs["achieved_goal"] = out.obs["desired_goal"].copy()
    return out


def stale_reward(episode, env):
    out = relabel(episode, env, "future", k=4, rng=0)
    out.reward = episode.reward[out.source].copy()
    return out


def replaces_info(episode, env):
    out = relabel(episode, env, "final")
    # keeps what the goal functions read (the physics of the step), drops the rest (tick, stamp, ...)
    out.infos = [{k: v for k, v in i.items() if k in (*goals.FLAG_KEYS, goals.TRAY_QUAT_KEY, goals.TRAY_SHIFT_KEY)}
                 for i in out.infos]
    return out


@pytest.mark.parametrize("broken, code", [
    (forgets_next_goal, "goal_not_in_next_obs"),
    (keeps_old_terminated, "terminated_mismatch"),
    (drops_time_limit_truncation, "time_limit_truncation_dropped"),
    (edits_achieved_goal, "achieved_goal_edited"),
    (stale_reward, "reward_mismatch"),
    (replaces_info, "info_dropped"),
])
def test_checker_catches_each_broken_relabeller(env, episode, broken, code):
    result = check(broken(episode, env), env, originals=episode)
    assert code in codes(result), result.summary
    assert result.status == "fail"
    finding = next(f for f in result.findings if f.code == code)
    assert finding.figures["count"] > 0 and str(finding.figures["count"]) in finding.message


class ContinuingHandover(HandoverEnv):
    """A variant that never terminates (success is only rewarded): terminated cannot be read
    off the reward, so a relabeller that infers it from the reward is wrong here."""

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return np.zeros(np.shape(super().compute_terminated(achieved_goal, desired_goal, info)), dtype=bool)


def test_terminated_comes_from_the_env_never_from_the_reward():
    env = gym.wrappers.TimeLimit(ContinuingHandover(), EPISODE_STEPS)
    try:
        episode = run_episode(env)
        out = relabel(episode, env, "future", k=4, rng=0)
        assert (out.reward == 0.0).any() and not out.terminated.any()
        assert check(out, env, originals=episode).ok
        out.terminated = out.reward == 0.0  # the bug: "it looks like success, so it is terminal"
        result = check(out, env, originals=episode)
        assert "terminated_mismatch" in codes(result), result.summary
        assert next(f for f in result.findings if f.code == "terminated_mismatch").figures["set_where_env_says_not"] > 0
    finally:
        env.close()


def test_checker_refuses_unbatched_goal_functions(episode):
    with pytest.raises(ValueError, match=r"compute_reward returned shape \(\) for a batch of 12"):
        check_her_consistency(episode, lambda a, d, i: 0.0, lambda a, d, i: np.zeros(len(a), bool),
                              lambda a, d, i: np.zeros(len(a), bool))


# --- the replay helper --------------------------------------------------------------------------

def test_her_replay_stores_copies_and_samples_consistent_batches(env, episode):
    replay = HerReplay(env, capacity=200, strategy="future", k=4, seed=0)
    relabelled = replay.add_episode(episode)
    assert len(replay) == len(episode) + len(relabelled) == 60
    stored = replay._chunks[0]
    for key in episode.obs:
        assert not np.shares_memory(stored.obs[key], episode.obs[key])
    batch = replay.sample(64)
    assert len(batch) == 64
    assert check(batch, env).ok
    for seed in (22, 23, 24):
        replay.add_episode(run_episode(env, seed))
    assert len(replay) <= 200 and len(replay._chunks) < 8  # the oldest went


def test_her_replay_refuses_bad_arguments(env):
    with pytest.raises(ValueError, match=r"capacity must be an integer >= 1"):
        HerReplay(env, capacity=0)
    with pytest.raises(ValueError, match=r"the buffer is empty"):
        HerReplay(env, capacity=10).sample(4)


# --- a real learner's buffer ---------------------------------------------------------------------

def test_stable_baselines3_her_buffer_on_the_env():
    """SB3's HerReplayBuffer relabels with the env's compute_reward; success needs the step's
    info (contacts and speed are not in the goals), which SB3 passes only with
    ``copy_info_dict=True``. Its rewards for the env's own goals then equal the env's."""
    sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 (needs torch) is not installed; "
                              "it is never a dependency of robogym_ros")
    from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

    env = gym.make(ENV_ID, max_episode_steps=50)
    model = sb3.SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                    replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future",
                                          "copy_info_dict": True},
                    learning_starts=100, batch_size=64, policy_kwargs={"net_arch": [32, 32]}, seed=0,
                    device="cpu")
    model.learn(total_timesteps=300)  # relabelled rewards come from compute_reward with the stored infos
    samples = model.replay_buffer.sample(256)
    rewards = samples.rewards.cpu().numpy().ravel()
    assert set(np.unique(rewards)) <= {0.0, -1.0}, np.unique(rewards)  # sparse: success or not, nothing else
    env.close()
