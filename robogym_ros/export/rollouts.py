"""Local-mode rollouts (no ROS) as LeRobot episodes: one per seeded reset.

Each env step is a frame: the state is the joint positions of the observation's tick, the
action the targets (rad) sent right after it (rounded to float32 before they are sent: the
dataset's action is exactly what the env got, so replaying a dataset reproduces it), the
images the env's cameras at that tick (the sim node's renderer and lens), optionally the
block's and the tray's poses (``observation.environment_state``). ``fps`` = 1 / (control dt x action_repeat).

An episode shows the whole task: it ends once the env's success (the block placed in the tray,
touching no arm, at rest) has held for ``success_hold_s`` (1 s): by then the arm has let go and
backed out (the expert's retreat takes 0.5 s), so the release and the retreat are in the data.
It also ends on a blow-up, or after ``max_steps`` steps without success (once success has come,
it may run on for the hold, ``max_steps`` + the hold's steps at most).

A replay sees what each action did through the next frame; the last action has no next frame,
yet it is a training target. So the export also writes ``meta/rollout_ends.json``: per episode
(in the dataset's order) its seed and the tick, joint positions and objects' poses after its
last action, as float32 (``ROLLOUT_ENDS``): a replay checks the last action against them.

Noisy rollouts (DART: demonstrations that show how to recover): with ``noise_rad`` > 0, a share
``noisy_share`` of the episodes (spread evenly over them) send the env the policy's action plus
Gaussian noise (standard deviation ``noise_rad`` per arm joint and step, drawn from the episode's seed,
clipped to the joints' ranges). The grippers get none, and where the policy says which joints move in
free space (``policy.free_joints()``, the expert's: bool per joint, after each action) only those do: an
arm that grips, carries or holds the block still for the other arm's grasp moves the block itself when
perturbed (the expert finished none of 10 episodes with 0.02 rad on every arm joint all along: the block
slipped at the handover), and what DART teaches is to bring a free arm back onto its path. The frame's
``action`` is the policy's clean action for the state actually reached, which the expert computes
from the perturbed scene (its grasp checks replan on what the physics shows); the targets sent are
stored as ``sim_executed_action``, which a replay sends.

Layouts (``LAYOUT``): ``environment_state_layout`` says what the environment state holds
(``envs.environment_state``: the objects' poses; with both grippers' grasp frames, computed from
the frame's joint positions; or with the block's orientation as numbers its symmetries leave be);
``relative_actions``
stores each action as the targets less the frame's joint positions (the env's
``action_mode="relative"`` adds them back), and the targets sent as ``sim_executed_action``.

A policy is made per episode by a factory, ``factory(env) -> policy``, with ``policy(obs) ->
targets`` in rad (the env is made with ``normalize_actions=False``). ``sweep`` is a
deterministic motion that does not solve the task; ``expert`` is the scripted handover
(robogym_ros.expert); ``module:attr`` names any other factory.
"""
from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from robogym_ros.contract import NS_PER_S
from robogym_ros.envs.environment_state import EnvironmentState, check_layout
from robogym_ros.envs.handover import HandoverEnv
from robogym_ros.export.dataset import ENVIRONMENT_OBJECTS, DatasetWriter

Policy = Callable[[dict], np.ndarray]
PolicyFactory = Callable[[HandoverEnv], Policy]
ROLLOUT_ENDS = "meta/rollout_ends.json"  # per episode: the state its last action led to
# what the dataset's environment_state and action hold: {"environment_state": "objects" or
# "objects_grasp", "action_mode": "absolute" or "relative"}, the env options that give a policy
# trained on it the same inputs and outputs (envs.lerobot_view); and the noise it was made with
LAYOUT = "meta/robogym.json"
SUCCESS_HOLD_S = 1.0  # success held this long ends an episode (the release and the retreat inside it)


def read_layout(root) -> dict:
    """The dataset at ``root``'s ``LAYOUT``, with the defaults of a dataset written before there was
    one: the objects' poses, absolute targets, no noise."""
    path = Path(root) / LAYOUT
    kept = json.loads(path.read_text()) if path.exists() else {}
    return {"environment_state": "objects", "action_mode": "absolute", "noise_rad": 0.0, "noisy_share": 1.0, **kept}


class SweepPolicy:
    """Every joint swings around where the reset left it (a slow sine, its own phase), clipped to
    its range: deterministic motion that fills every image and joint; it does not do the handover."""

    def __init__(self, env: HandoverEnv, period_s: float = 2.0, amplitude: float = 0.35):
        space = env.action_space
        self._low, self._high = space.low, space.high
        self._period_ticks = period_s * NS_PER_S / (env.control_dt_ns * env.action_repeat)
        self._amplitude = amplitude
        self._centre: np.ndarray | None = None
        self._k = 0

    def __call__(self, obs: dict) -> np.ndarray:
        n = len(self._low)
        if self._centre is None:
            self._centre = np.asarray(obs["observation"][:n], np.float64).copy()
        phase = 2 * np.pi * (self._k / self._period_ticks + np.arange(n) / n)
        self._k += 1
        return np.clip(self._centre + self._amplitude * np.sin(phase), self._low, self._high)


def policy_factory(name: str) -> PolicyFactory:
    """``expert``, ``sweep``, or ``package.module:attr`` (a factory ``attr(env) -> policy``); ValueError
    says why not."""
    if name == "sweep":
        return SweepPolicy
    if name == "expert":
        from robogym_ros.expert.runner import EnvExpert  # the scripted handover (mujoco IK): only when asked
        return EnvExpert
    module, _, attr = name.partition(":")
    if not module or not attr:
        raise ValueError(f"policy must be 'expert', 'sweep' or 'package.module:factory', got {name!r}")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"policy {name!r} cannot be loaded: {type(err).__name__}: {err}") from None
    if not callable(factory):
        raise ValueError(f"policy {name!r} is not callable")
    return factory


@dataclass(frozen=True)
class RolloutFrame:
    """One env step: the frame's tick, its state and images, and the action sent after it."""

    stamp_ns: int
    state: np.ndarray  # joint positions at the frame's tick (rad)
    action: np.ndarray  # targets sent after it (rad)
    images: dict[str, np.ndarray]
    environment_state: np.ndarray  # block then tray pose at the frame's tick (14: POSE_LAYOUT each)
    executed: np.ndarray | None = None  # the targets sent (rad): the action plus noise (noisy episodes)


@dataclass(frozen=True)
class RolloutEpisode:
    """One rolled-out episode: its seed, frames, and how it ended."""

    seed: int
    frames: list[RolloutFrame]
    outcome: str  # "success" (held for the hold), "blew up" or "time limit"
    first_success_step: int | None = None  # the step (1 = the first) after which the env first said success
    end: RolloutFrame | None = None  # the tick after the last action (its action: none, empty)
    noisy: bool = False  # noise was injected into the targets sent


def make_env(cameras: Sequence[str] = ("overhead",), *, width_px: int = 320, height_px: int = 240,
             action_repeat: int = 4) -> HandoverEnv:
    """The local-mode env rollouts run in: targets in rad, the cameras rendered every step."""
    return HandoverEnv(cameras=tuple(cameras), normalize_actions=False, action_repeat=action_repeat,
                       camera_width_px=width_px, camera_height_px=height_px)


def hold_steps(env: HandoverEnv, success_hold_s: float) -> int:
    """Env steps that make up ``success_hold_s`` of sim time (at least one)."""
    return max(1, math.ceil(round(success_hold_s * NS_PER_S) / (env.control_dt_ns * env.action_repeat)))


def noisy_episode(i: int, noisy_share: float) -> bool:
    """Whether episode ``i`` (0-based) is noisy: ``noisy_share`` of every run of episodes, spread evenly."""
    return math.floor((i + 1) * noisy_share + 1e-9) > math.floor(i * noisy_share + 1e-9)


def check_noise(noise_rad: float, noisy_share: float) -> None:
    """ValueError naming the argument and its range."""
    if not (isinstance(noise_rad, (int, float)) and math.isfinite(noise_rad) and 0 <= noise_rad <= 1):
        raise ValueError(f"noise_rad (--noise-rad) must be a number in 0 .. 1 (rad, the noise's standard "
                         f"deviation), got {noise_rad!r}")
    if not (isinstance(noisy_share, (int, float)) and 0 <= noisy_share <= 1):
        raise ValueError(f"noisy_share (--noisy-share) must be a number in 0 .. 1 (the share of noisy episodes), "
                         f"got {noisy_share!r}")


def rollouts(env: HandoverEnv, n_episodes: int, factory: PolicyFactory, *, seed: int = 0,
             max_steps: int = 250, success_hold_s: float = SUCCESS_HOLD_S, noise_rad: float = 0.0,
             noisy_share: float = 1.0) -> Iterator[RolloutEpisode]:
    """``n_episodes`` episodes from seeds ``seed``, ``seed + 1``, ...; see the module's docstring
    for where each ends and what noise does."""
    if not (isinstance(n_episodes, int) and n_episodes >= 1):
        raise ValueError(f"rollouts must be a positive integer, got {n_episodes!r}")
    if not (isinstance(max_steps, int) and max_steps >= 2):
        raise ValueError(f"max_steps must be an integer >= 2, got {max_steps!r}")
    if not (isinstance(success_hold_s, (int, float)) and success_hold_s >= 0):
        raise ValueError(f"success_hold_s must be a number >= 0 (s), got {success_hold_s!r}")
    check_noise(noise_rad, noisy_share)
    n = len(env.joint_names)
    noisy_joints = np.array([not name.endswith("_gripper") for name in env.joint_names])
    low, high = env.action_space.low.astype(np.float64), env.action_space.high.astype(np.float64)
    hold = hold_steps(env, success_hold_s)
    poses = env.layout.object_poses
    order = [env.object_names.index(o) for o in ENVIRONMENT_OBJECTS]
    for i in range(n_episodes):
        obs, info = env.reset(seed=seed + i)
        policy = factory(env)
        if hasattr(policy, "reset"):  # a stateful policy (the expert's phases) starts its episode afresh
            policy.reset()
        frames, outcome, first, held = [], "time limit", None, 0
        noisy = noise_rad > 0 and noisy_episode(i, noisy_share)
        rng = np.random.default_rng([seed + i, 0xDA27])  # the episode's noise: its seed alone
        for step in range(1, max_steps + hold + 1):
            if step > max_steps and first is None:
                break  # the time limit, and no success to hold
            # what is sent is what the dataset stores (float32, LeRobot's dtype): a replay of it is exact
            action = np.asarray(policy(obs), np.float64).astype(np.float32).astype(np.float64)
            sent = action
            if noisy:  # float32 inside the ranges, as stored: a replay of it is exact
                free = noisy_joints & policy.free_joints() if hasattr(policy, "free_joints") else noisy_joints
                sent = np.clip(action + rng.normal(0.0, noise_rad, n) * free, low, high).astype(np.float32)
                sent = np.clip(sent.astype(np.float64), low, high)
            objects = obs["observation"][poses].reshape(len(env.object_names), -1)[order].reshape(-1)
            frames.append(RolloutFrame(int(info["stamp_ns"]), obs["observation"][:n].copy(), action.copy(),
                                       {c: obs[f"pixels/{c}"] for c in env.cameras}, objects.copy(), sent.copy()))
            obs, _, terminated, truncated, info = env.step(sent)
            if truncated:
                outcome = "blew up"
                break
            held = held + 1 if terminated else 0
            if terminated and first is None:
                first = step
            if held >= hold:
                outcome = "success"
                break
        objects = obs["observation"][poses].reshape(len(env.object_names), -1)[order].reshape(-1)
        end = RolloutFrame(int(info["stamp_ns"]), obs["observation"][:n].copy(), np.zeros(0), {}, objects.copy())
        yield RolloutEpisode(seed + i, frames, outcome, first, end, noisy)


def fps_of(env: HandoverEnv) -> int:
    """Frames per second of a rollout: one frame per env step."""
    period = env.control_dt_ns * env.action_repeat
    if NS_PER_S % period:
        raise ValueError(f"a step of {period} ns is not a whole frame rate (LeRobot's fps is an integer)")
    return NS_PER_S // period


def write_rollouts(out, task: str, n_episodes: int, factory: PolicyFactory, *, seed: int = 0,
                   cameras: Sequence[str] = ("overhead",), max_steps: int = 250, width_px: int = 320,
                   height_px: int = 240, action_repeat: int = 4, repo_id: str | None = None,
                   on_episode: Callable[[RolloutEpisode], None] | None = None,
                   only_success: bool = False, environment_state: bool = False,
                   success_hold_s: float = SUCCESS_HOLD_S, noise_rad: float = 0.0,
                   noisy_share: float = 1.0, environment_state_layout: str = "objects",
                   relative_actions: bool = False) -> DatasetWriter:
    """Roll out and write a new dataset at ``out``; ``on_episode`` sees each episode (a test does);
    ``only_success`` leaves out episodes that did not end in success; ``environment_state`` adds
    the objects' poses; ``noise_rad`` and ``noisy_share`` inject noise (the module's docstring) and
    store the targets sent; ``environment_state_layout`` and ``relative_actions``: the layouts above. Every frame
    carries its episode's seed (``sim_seed``)."""
    check_noise(noise_rad, noisy_share)
    check_layout(environment_state_layout)
    if environment_state_layout != "objects" and not environment_state:
        raise ValueError(f"the layout {environment_state_layout!r} is the environment state's: ask for it too "
                         "(--environment-state)")
    executed = (noise_rad > 0 and noisy_share > 0) or relative_actions
    env = make_env(cameras, width_px=width_px, height_px=height_px, action_repeat=action_repeat)
    objects = EnvironmentState(environment_state_layout, env.joint_names)
    ends = []
    try:
        sizes = {c: (height_px, width_px) for c in cameras}
        with DatasetWriter(out, fps=fps_of(env), joint_names=env.joint_names, camera_sizes=sizes, task=task,
                           repo_id=repo_id, environment_state=environment_state, seeds=True,
                           executed=executed, layout=environment_state_layout) as writer:
            for episode in rollouts(env, n_episodes, factory, seed=seed, max_steps=max_steps,
                                    success_hold_s=success_hold_s, noise_rad=noise_rad,
                                    noisy_share=noisy_share):
                if episode.outcome == "success" or not only_success:
                    for f in episode.frames:
                        action = f.action - f.state if relative_actions else f.action
                        state = objects(f.environment_state, f.state) if environment_state else None
                        writer.add(f.stamp_ns, f.state, action, f.images, environment_state=state,
                                   seed=episode.seed, executed=f.executed)
                    writer.end_episode()
                    e = episode.end
                    ends.append({"seed": episode.seed, "stamp_ns": e.stamp_ns,
                                 "state": e.state.astype(np.float32).tolist(),
                                 "environment_state": e.environment_state.astype(np.float32).tolist()})
                if on_episode is not None:
                    on_episode(episode)
    finally:
        env.close()
    (Path(out) / ROLLOUT_ENDS).write_text(json.dumps({"episodes": ends}))
    (Path(out) / LAYOUT).write_text(json.dumps({"environment_state": environment_state_layout,
                                                "action_mode": "relative" if relative_actions else "absolute",
                                                "noise_rad": noise_rad, "noisy_share": noisy_share}))
    return writer
