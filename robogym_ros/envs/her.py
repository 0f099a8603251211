"""Hindsight Experience Replay: relabel an episode's transitions with goals it achieved.

:func:`relabel` is pure: it takes one episode (a :class:`~robogym_ros.checks.her_consistency.GoalBatch`, in
order) and returns new transitions (new arrays; the episode is not touched). For each new
goal it calls the env's own ``compute_reward``, ``compute_terminated`` and
``compute_truncated``, batched, once each. The new goal goes into ``desired_goal`` of the
current and of the next observation; ``achieved_goal`` is never edited; each ``info`` is kept
(a copy of the original's). A truncation the env's ``compute_truncated`` does not explain
came from the TimeLimit wrapper and is kept whatever the goal; ``terminated`` is whatever
``compute_terminated`` says for the new goal, never inferred from the reward.

Strategies (Andrychowicz et al. 2017): ``final`` (the goal achieved at the episode's end, one
per transition), ``future`` (k goals achieved at this or a later step), ``episode`` (k goals
achieved anywhere in the episode). ``robogym_ros.checks.her_consistency.check_her_consistency`` checks
the result, here and in any other learner's buffer.
"""
from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from robogym_ros.checks.her_consistency import GoalBatch

STRATEGIES = ("final", "future", "episode")


def goal_functions(env: Any):
    """The env's (compute_reward, compute_terminated, compute_truncated); wrappers are looked through."""
    for candidate in (env, getattr(env, "unwrapped", None)):
        if candidate is not None and all(hasattr(candidate, f) for f in
                                         ("compute_reward", "compute_terminated", "compute_truncated")):
            return candidate.compute_reward, candidate.compute_terminated, candidate.compute_truncated
    raise TypeError(f"{type(env).__name__} has no compute_reward/compute_terminated/compute_truncated: "
                    "pass a gymnasium_robotics GoalEnv (or one wrapped)")


def relabel(episode: GoalBatch, env: Any, strategy: str = "future", *, k: int = 4,
            rng: np.random.Generator | int | None = None) -> GoalBatch:
    """New transitions for ``episode`` with goals from its own achieved goals (see module doc).

    ``final`` gives one per transition; ``future`` and ``episode`` give ``k`` per transition.
    ``result.source[i]`` is the row of ``episode`` that row i was relabelled from.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise ValueError(f"k must be an integer >= 1 (goals per transition), got {k!r}")
    n = len(episode)
    if n == 0:
        raise ValueError("the episode has no transitions")
    rng = np.random.default_rng(rng)
    if strategy == "final":
        source = np.arange(n)
        goal_row = np.full(n, n - 1)
    else:
        source = np.repeat(np.arange(n), k)
        low = source if strategy == "future" else np.zeros_like(source)
        goal_row = rng.integers(low, n)  # upper bound exclusive: rows low .. n-1
    goals = episode.next_obs["achieved_goal"][goal_row]
    return relabel_with_goals(episode, source, goals, env)


def relabel_with_goals(episode: GoalBatch, source, goals, env: Any) -> GoalBatch:
    """Row i: transition ``source[i]`` of ``episode`` with the goal ``goals[i]``; all new arrays."""
    compute_reward, compute_terminated, compute_truncated = goal_functions(env)
    source = np.asarray(source, dtype=np.int64)
    goals = np.array(goals, dtype=episode.obs["desired_goal"].dtype)
    if goals.shape != (len(source), *episode.obs["desired_goal"].shape[1:]):
        raise ValueError(f"goals must have shape {(len(source), *episode.obs['desired_goal'].shape[1:])}, "
                         f"got {goals.shape}")
    # The episode's own truncations that its own goals do not explain: the time limit's.
    base = np.asarray(compute_truncated(episode.next_obs["achieved_goal"], episode.obs["desired_goal"],
                                        episode.info_array()), dtype=bool).reshape(len(episode))
    external = np.asarray(episode.truncated, dtype=bool) & ~base

    obs = {key: value[source] for key, value in episode.obs.items()}  # fancy indexing copies
    next_obs = {key: value[source] for key, value in episode.next_obs.items()}
    obs["desired_goal"] = goals
    next_obs["desired_goal"] = goals.copy()
    infos = [dict(episode.infos[s]) for s in source]
    batch_infos = np.empty(len(infos), dtype=object)
    batch_infos[:] = infos
    achieved = next_obs["achieved_goal"]
    n = len(source)
    return GoalBatch(
        obs=obs, next_obs=next_obs, action=episode.action[source],
        reward=np.asarray(compute_reward(achieved, goals, batch_infos), dtype=np.float64).reshape(n),
        terminated=np.asarray(compute_terminated(achieved, goals, batch_infos), dtype=bool).reshape(n),
        truncated=external[source] | np.asarray(compute_truncated(achieved, goals, batch_infos),
                                                dtype=bool).reshape(n),
        infos=infos, source=source)


class HerReplay:
    """A small replay buffer: each episode is stored with its relabelled transitions.

    Everything stored is a copy (the episode's arrays are never kept by reference); the oldest
    episodes go once more than ``capacity`` transitions are held.
    """

    def __init__(self, env: Any, capacity: int, strategy: str = "future", *, k: int = 4,
                 seed: int | None = None):
        if not (isinstance(capacity, int) and capacity >= 1):
            raise ValueError(f"capacity must be an integer >= 1 (transitions), got {capacity!r}")
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        goal_functions(env)  # fail now, not at the first episode
        self.env, self.capacity, self.strategy, self.k = env, capacity, strategy, k
        self.rng = np.random.default_rng(seed)
        self._chunks: deque[GoalBatch] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add_episode(self, episode: GoalBatch) -> GoalBatch:
        """Store ``episode`` (copied) and its relabelled transitions; returns those."""
        relabelled = relabel(episode, self.env, self.strategy, k=self.k, rng=self.rng)
        for chunk in (_copy(episode), relabelled):
            self._chunks.append(chunk)
            self._size += len(chunk)
        while self._size > self.capacity and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())
        return relabelled

    def sample(self, batch_size: int) -> GoalBatch:
        """``batch_size`` stored transitions drawn uniformly (with replacement), in stored order; new arrays."""
        if self._size == 0:
            raise ValueError("the buffer is empty: add an episode first")
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        picks = np.sort(self.rng.integers(0, self._size, size=batch_size))
        parts, start = [], 0
        for chunk in self._chunks:
            rows = picks[(picks >= start) & (picks < start + len(chunk))] - start
            if rows.size:
                parts.append(_take(chunk, rows))
            start += len(chunk)
        return _concat(parts)


def _take(b: GoalBatch, rows: np.ndarray) -> GoalBatch:
    return GoalBatch(obs={k: v[rows] for k, v in b.obs.items()},
                     next_obs={k: v[rows] for k, v in b.next_obs.items()},
                     action=b.action[rows], reward=b.reward[rows], terminated=b.terminated[rows],
                     truncated=b.truncated[rows], infos=[dict(b.infos[r]) for r in rows])


def _copy(b: GoalBatch) -> GoalBatch:
    return _take(b, np.arange(len(b)))


def _concat(parts: list[GoalBatch]) -> GoalBatch:
    first = parts[0]
    return GoalBatch(obs={k: np.concatenate([p.obs[k] for p in parts]) for k in first.obs},
                     next_obs={k: np.concatenate([p.next_obs[k] for p in parts]) for k in first.next_obs},
                     action=np.concatenate([p.action for p in parts]),
                     reward=np.concatenate([p.reward for p in parts]),
                     terminated=np.concatenate([p.terminated for p in parts]),
                     truncated=np.concatenate([p.truncated for p in parts]),
                     infos=[i for p in parts for i in p.infos])
