"""``robogym_ros/Handover-v0`` as a native Gymnasium ``VectorEnv``: K scenes in one process.

    envs = gym.make_vec("robogym_ros/Handover-v0", num_envs=8, vectorization_mode="vector_entry_point")

Physics: :mod:`robogym_ros.envs.vector.scene_batch` (``mujoco.rollout`` per scene on a thread pool,
the GIL released while MuJoCo steps). Actions, observations, rewards, goals and infos are
computed with numpy for the whole batch at once.

Same behaviour as K single envs: sub-env i reset with seed s and given the same actions
returns, bit for bit, what ``gym.make("robogym_ros/Handover-v0")`` reset with seed s returns,
through terminations, truncations (the time limit is applied here, as the single env's
TimeLimit wrapper applies it) and Gymnasium 1.x's next-step autoreset: the step after a
sub-env ended resets it (unseeded: the next scene of its seed's sequence), ignores its action
and returns its reset observation and info with reward 0, not terminated, not truncated
(test/test_env_batched.py). Every returned array, and every info array and mask, is new.

Local mode only: a batch of ROS sims is a fleet (robogym_ros.envs.vector.sim_fleet).
"""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from robogym_ros.contract import POSE_SIZE
from robogym_ros.envs.actions import action_array
from robogym_ros.envs.handover import DEFAULT_ACTION_REPEAT, HandoverEnv
from robogym_ros.envs.local import SEED_LIMIT
from robogym_ros.envs.vector.scene_batch import SceneBatch
from robogym_ros.task import goals
from robogym_ros.task.placement import PlacementJudge, speeds
from robogym_ros.task.scene import default_model_path

INFO_TYPES = {"is_success": np.float64, "stage": np.int64, "distance_m": np.float64,
              **{k: np.bool_ for k in goals.FLAG_KEYS}, "block_speed_m_s": np.float64, "block_turn_rad_s": np.float64,
              goals.TRAY_QUAT_KEY: np.float64, goals.TRAY_SHIFT_KEY: np.float64,
              "tick_index": np.int64, "stamp_ns": np.int64, "ticks_elapsed": np.int64, "blew_up": np.bool_}


def vector_seeds(seed, num_envs: int) -> list[int | None]:
    """SyncVectorEnv's seed rule (None, s -> s + i, or one per sub-env), each checked against
    the single env's range before any sub-env is reset."""
    if seed is None:
        seeds = [None] * num_envs
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seeds = [int(seed) + i for i in range(num_envs)]
    elif isinstance(seed, (list, tuple)) and len(seed) == num_envs:
        seeds = list(seed)
    else:
        raise ValueError(f"seed must be None, an integer or a list of {num_envs} seeds, got {seed!r:.80}")
    for i, s in enumerate(seeds):
        if s is not None and not (isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                  and 0 <= s < SEED_LIMIT):
            raise ValueError(f"seed of sub-env {i} must be an integer in 0 .. {SEED_LIMIT - 1} "
                             f"(the sim node's range), got {s!r}")
    return seeds


class BatchedHandoverEnv(VectorEnv):
    """K handover scenes stepped together; the keyword arguments are HandoverEnv's (local mode),
    plus ``max_episode_steps`` (the TimeLimit; None: none) and ``num_threads`` (default: cores)."""

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int, *, max_episode_steps: int | None = None, num_threads: int | None = None,
                 mode: str = "local", model_path: str | None = None, physics_dt_s: float = 0.002,
                 decimation: int = 5, action_repeat: int = DEFAULT_ACTION_REPEAT, **kwargs: Any):
        if not (isinstance(num_envs, (int, np.integer)) and num_envs >= 1):
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if mode != "local":
            raise ValueError(f"the batched env runs local physics only, got mode={mode!r}; "
                             "for ROS sims use robogym_ros.envs.vector.sim_fleet.SimFleet with AsyncVectorEnv")
        if max_episode_steps is not None and not (isinstance(max_episode_steps, int) and max_episode_steps >= 1):
            raise ValueError(f"max_episode_steps must be None or an integer >= 1, got {max_episode_steps!r}")
        if num_threads is None:
            num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if not (isinstance(num_threads, int) and num_threads >= 1):
            raise ValueError(f"num_threads must be an integer >= 1, got {num_threads!r}")
        model_path = model_path or default_model_path()
        self._scenes = None
        # One single env: it checks every argument as the single env does, defines the spaces,
        # the goal functions and the action map, and renders the pixels (one GL context).
        self._template = HandoverEnv(mode="local", model_path=model_path, physics_dt_s=physics_dt_s,
                                     decimation=decimation, action_repeat=action_repeat, **kwargs)
        t = self._template
        self.num_envs = int(num_envs)
        self.max_episode_steps = max_episode_steps
        self.render_mode = t.render_mode
        self.metadata = {**self.metadata, "render_fps": t.metadata["render_fps"]}
        self.single_observation_space = t.observation_space
        self.single_action_space = t.action_space
        self.observation_space = batch_space(t.observation_space, self.num_envs)
        self.action_space = batch_space(t.action_space, self.num_envs)
        self.control_dt_ns = t.control_dt_ns
        self.reward_type = t.reward_type
        self.cameras = t.cameras
        self._actions = t._actions
        self._block, self._tray, self._grippers = t._block, t._tray, np.array(t.layout.gripper_index)
        try:
            self._scenes = SceneBatch(self.num_envs, model_path, physics_dt_s, decimation, action_repeat, num_threads)
        except BaseException:
            t.close()  # its renderer holds a GL context
            raise
        self.num_threads = self._scenes.num_threads
        k = self.num_envs
        self._goals = np.zeros((k, goals.GOAL_SIZE))
        self._elapsed = np.zeros(k, dtype=np.int64)
        self._autoreset = np.zeros(k, dtype=bool)
        self._started = np.zeros(k, dtype=bool)
        self._last = None  # (positions, object poses) of the latest observation, for render()
        # one judge per stepping thread: each scans the scenes it stepped, in parallel
        self._judges = [PlacementJudge(model_path, t.joint_names, t.object_names) for _ in range(self.num_threads)]
        self._judge = self._judges[0]
        self._scanned: list = [None] * k
        self._block_before = np.zeros((k, POSE_SIZE))  # each scene's block pose at its latest observation

    # --- Gymnasium VectorEnv API -----------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        """Seeds as SyncVectorEnv takes them: None, an int s (sub-env i gets s + i) or one per
        sub-env; ``options={"reset_mask": mask}`` resets only the sub-envs marked True."""
        seeds = vector_seeds(seed, self.num_envs)
        mask = np.ones(self.num_envs, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = self._reset_mask(options["reset_mask"])
        super().reset(seed=seed if isinstance(seed, int) else None)
        for i in np.flatnonzero(mask):
            self._reset_scene(int(i), seeds[i])
        self._autoreset[mask] = False
        obs, poses = self._observe()
        zero = np.zeros(self.num_envs, dtype=np.int64)
        self._scanned = [None] * self.num_envs
        placed = self._placement(obs, poses, zero, fresh=mask)
        return obs, self._infos(self._scenes.tick_index(), placed, zero, np.zeros(self.num_envs, dtype=bool), mask)

    def step(self, actions):
        if not self._started.all():
            raise RuntimeError("step() before reset(): call reset() first (every sub-env needs one)")
        resetting = self._autoreset.copy()
        active = ~resetting
        targets = self._targets(actions, active)  # ValueError naming the sub-env and joint; nothing changed
        before = self._scenes.tick_index()
        for i in np.flatnonzero(resetting):
            self._reset_scene(int(i), None)
        self._scanned = [None] * self.num_envs
        blew_up, state = self._scenes.step(targets, active, self._scan)
        obs, poses = self._observe(state)
        tick = self._scenes.tick_index()
        elapsed = np.where(active, tick - before, 0)
        placed = self._placement(obs, poses, elapsed, fresh=resetting)
        self._elapsed[active] += 1
        # the single env's step: reward and terminated from the step's own info (task's functions)
        if self.reward_type == "sparse":
            reward = np.where(placed["is_success"] > 0, 0.0, -1.0)
        elif self.reward_type == "dense":
            reward = -placed["distance_m"]
        else:
            reward = (placed["stage"] - goals.TOP_STAGE) / goals.TOP_STAGE
        reward = np.where(active, reward, 0.0)
        terminated = active & (placed["is_success"] > 0)
        truncated = active & blew_up
        if self.max_episode_steps is not None:
            truncated |= active & (self._elapsed >= self.max_episode_steps)
        self._autoreset = terminated | truncated
        infos = self._infos(tick, placed, elapsed, blew_up, np.ones(self.num_envs, dtype=bool))
        return obs, reward, terminated, truncated, infos

    def compute_reward(self, achieved_goal, desired_goal, info):
        return self._template.compute_reward(achieved_goal, desired_goal, info)

    def compute_terminated(self, achieved_goal, desired_goal, info):
        return self._template.compute_terminated(achieved_goal, desired_goal, info)

    def compute_truncated(self, achieved_goal, desired_goal, info):
        return self._template.compute_truncated(achieved_goal, desired_goal, info)

    def render(self):
        """One image per sub-env (``render_mode="rgb_array"``), rendered scene by scene."""
        if self.render_mode != "rgb_array" or self._last is None:
            return None
        cam = self._template.render_camera
        return tuple(self._template._pixels(SimpleNamespace(position=q, object_poses=p), (cam,))[cam]
                     for q, p in zip(*self._last))

    def close_extras(self, **kwargs):
        if self._scenes is not None:
            self._scenes.close()
            self._scenes = None
        self._template.close()

    # --- the batch ---------------------------------------------------------------------------
    def _reset_mask(self, mask) -> np.ndarray:
        if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (self.num_envs,)):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                             f"got {mask!r:.80}")
        if not mask.any():
            raise ValueError("options['reset_mask'] marks no sub-env")
        return mask.copy()

    def _reset_scene(self, i: int, seed: int | None) -> None:
        self._scenes.reset(i, seed)
        p = self._scenes.physics(i)
        poses = p.data.qpos[self._scenes.pose_idx].reshape(-1, POSE_SIZE)
        self._goals[i] = goals.goal_from_tray_pose(poses[self._tray])
        self._elapsed[i] = 0
        self._started[i] = True

    def _targets(self, actions, active: np.ndarray) -> np.ndarray:
        """ActionMap.targets for every row (same arithmetic, the whole batch at once)."""
        m = self._actions
        a = action_array(actions, self.action_space.shape, "actions", self.action_space.shape)
        ok = m.in_range(a).all(axis=1) | ~active
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            try:
                m.targets(a[i])
            except ValueError as exc:
                raise ValueError(f"sub-env {i}: {exc}") from None
        return m.clipped_targets(a)

    def _observe(self, state=None) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Observations from ``state`` (SceneBatch.gather's arrays; gathered here if None), and the
        object poses (K, objects, 7)."""
        s = self._scenes
        qpos, qvel, force = s.gather() if state is None else state
        position, velocity, poses = qpos[:, s.qpos_adr], qvel[:, s.dof_adr], qpos[:, s.pose_idx]
        effort = force[:, s.actuators]
        block = poses[:, self._block * POSE_SIZE:self._block * POSE_SIZE + 3]
        obs = {
            "observation": np.concatenate((position, velocity, poses, effort[:, self._grippers]), axis=1),
            "achieved_goal": block.copy(),
            "desired_goal": self._goals.copy(),
        }
        poses = poses.reshape(self.num_envs, -1, POSE_SIZE)
        self._last = (position, poses)
        for cam in self.cameras:
            obs[f"pixels/{cam}"] = np.stack([self._template._pixels(SimpleNamespace(position=q, object_poses=p),
                                                                    (cam,))[cam] for q, p in zip(position, poses)])
        return obs, poses

    def _scan(self, i: int, worker: int, qpos: np.ndarray) -> None:
        self._scanned[i] = self._judges[worker].contacts_of_qpos(qpos)

    def _placement(self, obs, poses: np.ndarray, ticks_elapsed: np.ndarray, fresh: np.ndarray) -> dict[str, np.ndarray]:
        """The single env's placement entries of each scene's info (``fresh``: scenes just reset,
        no pose before), each computed as the single env computes its own."""
        position = obs["observation"][:, :len(self._template.joint_names)]
        judge, block, contacts = self._judge, self._block, []
        speed, turn = np.empty(self.num_envs), np.empty(self.num_envs)
        for i in range(self.num_envs):  # one contact scan per scene; the rest over the batch at once
            scanned = self._scanned[i]  # by the thread that stepped it (None: not stepped)
            contacts.append(judge.contacts(position[i], poses[i]) if scanned is None else scanned)
            before = None if fresh[i] else self._block_before[i]
            speed[i], turn[i] = speeds(before, poses[i][block], int(ticks_elapsed[i]) * self.control_dt_ns * 1e-9)
        self._block_before = poses[:, block].copy()
        return goals.batch_facts(contacts, speed, turn, poses[:, self._tray], obs["desired_goal"],
                                 obs["achieved_goal"])

    def _infos(self, tick: np.ndarray, placed: dict[str, np.ndarray], ticks_elapsed: np.ndarray, blew_up: np.ndarray,
               mask: np.ndarray) -> dict[str, np.ndarray]:
        """The single env's info keys, batched as SyncVectorEnv batches them (with ``_key`` masks)."""
        values = {
            "is_success": placed["is_success"], "stage": placed["stage"], "distance_m": placed["distance_m"],
            **{k: v for k, v in placed.items() if k not in ("is_success", "stage", "distance_m")},
            "tick_index": tick,
            "stamp_ns": tick * self.control_dt_ns,
            "ticks_elapsed": np.asarray(ticks_elapsed, dtype=np.int64).copy(),
            "blew_up": np.asarray(blew_up, dtype=bool).copy(),
        }
        infos = {}
        whole = bool(mask.all())
        for key, value in values.items():
            if not whole:  # a masked reset: the others' entries are zeros, as SyncVectorEnv leaves them
                keep = mask.reshape(mask.shape + (1,) * (np.ndim(value) - 1))
                value = np.where(keep, value, np.zeros((), dtype=INFO_TYPES[key]))
            infos[key] = value.astype(INFO_TYPES[key], copy=False)
            infos[f"_{key}"] = mask.copy()
        return infos
