"""Episodes out of a vector env's stream, for HER (``relabel``, ``HerReplay``).

A Gymnasium 1.x vector env with next-step autoreset returns, on the step after a sub-env's
episode ended, that sub-env's reset observation: not a transition. :class:`EpisodeCollector`
follows each sub-env, skips those steps, and hands back each finished episode as a
:class:`~robogym_ros.checks.her_consistency.GoalBatch` with the same rows a single env's episode gives
(each info as the single env's dict of Python scalars), ready for ``relabel`` and
``HerReplay.add_episode`` with the vector env's own ``compute_*`` functions.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from robogym_ros.checks.her_consistency import GoalBatch


def _row(obs: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
    return {k: np.array(v[i]) for k, v in obs.items()}


def _info_row(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env i's info as a single env gives it: the keys its mask marks, as Python scalars."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is None or mask[i]:
            v = value[i]
            out[key] = v.item() if isinstance(v, np.generic) else v
    return out


class EpisodeCollector:
    """Feed it ``reset`` once and then every ``step`` result; it returns finished episodes."""

    def __init__(self, num_envs: int):
        if not (isinstance(num_envs, (int, np.integer)) and num_envs >= 1):
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self._obs: list[dict[str, np.ndarray]] | None = None
        self._steps: list[list[tuple]] = [[] for _ in range(self.num_envs)]
        self._resetting = np.zeros(self.num_envs, dtype=bool)

    def reset(self, obs: dict[str, np.ndarray]) -> None:
        """The observations ``vec.reset()`` returned: every sub-env starts a new episode."""
        self._obs = [_row(obs, i) for i in range(self.num_envs)]
        self._steps = [[] for _ in range(self.num_envs)]
        self._resetting[:] = False

    def add(self, actions, next_obs, rewards, terminated, truncated, infos) -> list[tuple[int, GoalBatch]]:
        """One ``vec.step(actions)``; returns (sub-env, episode) for each episode that ended in it."""
        if self._obs is None:
            raise RuntimeError("add() before reset(): pass the observations of vec.reset() first")
        finished = []
        for i in range(self.num_envs):
            row = _row(next_obs, i)
            if self._resetting[i]:  # this step reset sub-env i: its observation starts the next episode
                self._obs[i] = row
                continue
            self._steps[i].append((self._obs[i], np.array(actions[i]), float(rewards[i]), bool(terminated[i]),
                                   bool(truncated[i]), row, _info_row(infos, i)))
            self._obs[i] = row
            if terminated[i] or truncated[i]:
                finished.append((i, GoalBatch.from_steps(self._steps[i])))
                self._steps[i] = []
        self._resetting = np.logical_or(terminated, truncated)
        return finished
