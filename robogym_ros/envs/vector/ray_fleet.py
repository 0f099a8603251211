"""A fleet of batched envs on Ray: ``num_actors`` Ray actors, each a
:class:`~robogym_ros.envs.vector.batched.BatchedHandoverEnv` of ``envs_per_actor`` scenes, presented
as one Gymnasium ``VectorEnv`` of ``num_actors x envs_per_actor`` sub-envs::

    import ray
    ray.init()                                 # this machine; ray.init(address="auto") or
                                               # ray.init(address="ray://<head>:10001") for a cluster
    envs = RayFleetVectorEnv(num_actors=4, envs_per_actor=8, max_episode_steps=250)

Sub-env j is sub-env ``j % envs_per_actor`` of actor ``j // envs_per_actor``; seeds, actions
and every returned array are split and joined in that order, so sub-env j reset with seed s
is bit-identical to a single env reset with seed s, as in the batched env
(test/test_ray_fleet.py). Each step sends every actor its actions at once and waits for all:
the fleet steps as fast as its slowest actor. Joined arrays are new (never Ray's read-only
views into its object store). Needs ``ray`` (``pip install 'robogym_ros[ray]'``), on the
driver and on every node, with this package installed there.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from robogym_ros.envs.handover import HandoverEnv
from robogym_ros.envs.vector.batched import vector_seeds


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError("the Ray fleet needs ray: pip install 'robogym_ros[ray]'") from exc
    return ray


class _BatchActor:
    """Lives in a Ray worker: one batched env; its methods are the VectorEnv's."""

    def __init__(self, num_envs: int, env_kwargs: dict[str, Any]):
        from robogym_ros.envs.vector.batched import BatchedHandoverEnv
        self.env = BatchedHandoverEnv(num_envs, **env_kwargs)

    def spaces(self):
        e = self.env
        return e.single_observation_space, e.single_action_space, e.metadata["render_fps"]

    def reset(self, seeds, options):
        return self.env.reset(seed=seeds, options=options)

    def step(self, actions):
        return self.env.step(actions)

    def close(self) -> None:
        self.env.close()


def _join(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts, axis=0)  # always a new, writable array


class RayFleetVectorEnv(VectorEnv):
    """``num_actors`` batched envs on Ray as one VectorEnv (next-step autoreset, as each actor's)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_actors: int, envs_per_actor: int, *, cpus_per_actor: float = 1,
                 **env_kwargs: Any):
        for name, value in (("num_actors", num_actors), ("envs_per_actor", envs_per_actor)):
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if env_kwargs.get("render_mode") is not None:
            raise ValueError("the Ray fleet does not render: pixels come as observations (cameras=[...])")
        ray = _ray()
        self._actors: list = []
        # The goal functions are the single env's, here on the driver (no cameras: no GL here).
        goal_kwargs = {k: env_kwargs[k] for k in ("reward_type",) if k in env_kwargs}
        self._task = HandoverEnv(**goal_kwargs)
        actor_class = ray.remote(num_cpus=cpus_per_actor)(_BatchActor)
        self._actors = [actor_class.remote(envs_per_actor, env_kwargs) for _ in range(num_actors)]
        obs_space, act_space, fps = ray.get(self._actors[0].spaces.remote())
        self.envs_per_actor = envs_per_actor
        self.num_envs = num_actors * envs_per_actor
        self.single_observation_space, self.single_action_space = obs_space, act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.metadata = {**self.metadata, "render_fps": fps}

    def _split(self, values) -> list:
        n = self.envs_per_actor
        return [values[a * n:(a + 1) * n] for a in range(len(self._actors))]

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        seeds = vector_seeds(seed, self.num_envs)  # all checked here: a bad one resets no actor
        if options is not None and "reset_mask" in options:
            raise ValueError("the Ray fleet resets all its sub-envs (no reset_mask); "
                             "each sub-env resets itself when its episode ends")
        ray = _ray()
        results = ray.get([actor.reset.remote(part, options) for actor, part in zip(self._actors, self._split(seeds))])
        obs = {k: _join([r[0][k] for r in results]) for k in results[0][0]}
        return obs, self._join_infos([r[1] for r in results])

    def step(self, actions):
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(f"actions must have shape {self.action_space.shape}, got {actions.shape}")
        ray = _ray()
        results = ray.get([actor.step.remote(part) for actor, part in zip(self._actors, self._split(actions))])
        obs = {k: _join([r[0][k] for r in results]) for k in results[0][0]}
        reward, terminated, truncated = (_join([r[j] for r in results]) for j in (1, 2, 3))
        return obs, reward, terminated, truncated, self._join_infos([r[4] for r in results])

    @staticmethod
    def _join_infos(parts: list[dict]) -> dict:
        return {k: _join([p[k] for p in parts]) for k in parts[0]}

    def compute_reward(self, achieved_goal, desired_goal, info):
        return self._task.compute_reward(achieved_goal, desired_goal, info)

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return self._task.compute_terminated(achieved_goal, desired_goal, info)

    def compute_truncated(self, achieved_goal, desired_goal, info):
        return self._task.compute_truncated(achieved_goal, desired_goal, info)

    def close_extras(self, **kwargs):
        ray = _ray()
        if self._actors:
            ray.get([a.close.remote() for a in self._actors])
            for a in self._actors:
                ray.kill(a)
            self._actors = []
        self._task.close()
