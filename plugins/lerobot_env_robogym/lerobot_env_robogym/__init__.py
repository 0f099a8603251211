"""LeRobot env plugin: ``--env.type=robogym_handover`` is robogym_ros' SO-101 handover in local mode.

LeRobot 0.6's ``lerobot-eval`` (and ``lerobot-record``, ``lerobot-rollout``) import every installed
distribution named ``lerobot_env_*``; importing this one registers the config below::

    lerobot-eval --env.type=robogym_handover --policy.path=outputs/train/.../pretrained_model \\
      --eval.n_episodes=50 --seed=100000

The env is ``robogym_ros/LeRobotHandover-v0`` (robogym_ros.envs.lerobot_view): observations as
LeRobot's gym envs give them (``agent_pos`` = the 12 joint positions, ``environment_state`` = block
and tray poses, ``pixels/<camera>``), actions in rad, one step = 4 control ticks (25 fps), episodes
cut at ``episode_length`` steps (250 = 10 s, the env's registered limit) and ended by the env's
success, which ``info["is_success"]`` carries to lerobot-eval's ``pc_success``; with
``--env.reward_type=staged`` each episode's ``max_reward`` is (furthest stage - 6) / 6. Seeds: episode i of
an eval runs ``reset(seed=cfg.seed + i)``, the scene a sim node started with that seed draws first.
LeRobot seeds whole batches: n episodes in batches of b use S .. S + ceil(n / b) * b - 1, which must
stay within the env's seeds (0 .. 2**31 - 1); under lerobot-eval the config refuses a ``--seed``
beyond that before any env is made. Under lerobot-eval ``render_mode`` is ``rgb_array`` only: it renders up
to 10 episodes into videos whatever the env's render_mode (LeRobot 0.6 turns them off only with
``--eval.recording=true``), and a None frame breaks its video writer.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE

import robogym_ros.envs  # noqa: F401  (registers robogym_ros/LeRobotHandover-v0, also in async eval workers)
from robogym_ros.envs.lerobot_view import (
    AGENT_POS,
    DEFAULT_OBS_TYPE,
    DEFAULT_TASK,
    ENVIRONMENT_STATE,
    OBS_TYPES,
    PIXELS,
    check_layout,
    feature_shapes,
)
from robogym_ros.task.goals import REWARD_TYPES

__all__ = ["RobogymHandoverEnv", "eval_seed_problem"]

SEED_MAX = 2**31 - 1  # the env's seeds: 0 .. 2**31 - 1 (the sim node's seed parameter)


def eval_seed_problem(seed: int | None, n_episodes: int, batch_size: int) -> str | None:
    """Why lerobot-eval's seeds would leave the env's range (None: they do not). LeRobot seeds each
    batch of ``batch_size`` envs with consecutive seeds, the last batch included in full."""
    if seed is None:
        return None  # not seeded
    last = seed + math.ceil(n_episodes / batch_size) * batch_size - 1
    if seed < 0 or last > SEED_MAX:
        top = SEED_MAX - (math.ceil(n_episodes / batch_size) * batch_size - 1)
        return (f"--seed={seed} with --eval.n_episodes={n_episodes} --eval.batch_size={batch_size}: LeRobot seeds "
                f"whole batches, {seed} .. {last} (S + ceil(n / b) * b - 1), and the env's seeds are "
                f"0 .. {SEED_MAX}: --seed must be in 0 .. {top}")
    return None


def _eval_arguments(argv: list[str]) -> dict[str, str]:
    """``--name=value`` and ``--name value`` pairs of a command line."""
    out, i = {}, 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                value, i = argv[i + 1], i + 1
            out[name] = value
        i += 1
    return out


def _check_lerobot_eval_seeds(argv: list[str]) -> None:
    """lerobot-eval's command line: refuse seeds its batches would take past the env's range, before any episode."""
    from lerobot.configs.default import EvalConfig
    from lerobot.configs.eval import EvalPipelineConfig
    args = _eval_arguments(argv[1:])
    try:
        raw = args.get("seed")
        seed = EvalPipelineConfig.__dataclass_fields__["seed"].default if raw is None else (
            None if raw.lower() in ("null", "none") else int(raw))
        defaults = EvalConfig.__dataclass_fields__
        n = int(args.get("eval.n_episodes", defaults["n_episodes"].default))
        b = int(args.get("eval.batch_size", defaults["batch_size"].default))
        batch = EvalConfig(n_episodes=n, batch_size=b).batch_size  # LeRobot's own choice (0: by CPU count)
    except (ValueError, TypeError):
        return  # LeRobot's own parser says what is wrong with these
    problem = eval_seed_problem(seed, n, batch)
    if problem:
        raise ValueError(problem)


@EnvConfig.register_subclass("robogym_handover")
@dataclass
class RobogymHandoverEnv(EnvConfig):
    """``--env.type=robogym_handover``: which observation keys, cameras and image size, the episode limit."""

    task: str | None = "LeRobotHandover-v0"
    fps: int = 25  # one env step = action_repeat 4 x control dt 10 ms: the exported datasets' fps
    episode_length: int = 250
    # which keys the env gives: environment_state_agent_pos (no cameras rendered), pixels_agent_pos,
    # or all three (what a policy trained on an exported dataset with images and state may ask for)
    obs_type: str = DEFAULT_OBS_TYPE
    cameras: list[str] = field(default_factory=lambda: ["overhead"])
    observation_width: int = 320  # the export's default image size
    observation_height: int = 240
    render_mode: str = "rgb_array"  # lerobot-eval's videos: the first camera of `cameras`
    task_description: str = DEFAULT_TASK
    # what the dataset the policy learned from holds (its meta/robogym.json): the objects' poses, those
    # and both grasp frames, or the objects' symmetric poses (robogym_ros.envs.environment_state); the
    # targets, or the targets less the observed joint positions
    environment_state: str = "objects"
    action_mode: str = "absolute"
    # the env's reward (robogym_ros.task.goals.REWARD_TYPES): sparse (0 placed, -1 otherwise), dense, or
    # staged, (stage - 6) / 6, so that lerobot-eval's per-episode max_reward says the furthest stage reached
    reward_type: str = "sparse"
    features: dict[str, PolicyFeature] = field(default_factory=dict)
    features_map: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.obs_type not in OBS_TYPES:
            raise ValueError(f"env.obs_type must be one of {sorted(OBS_TYPES)}, got {self.obs_type!r}")
        if self.fps != 25:
            raise ValueError(f"env.fps is the env's step rate, 25 (4 control ticks of 10 ms); got {self.fps}")
        if not self.cameras:
            raise ValueError("env.cameras must name at least one camera")
        try:
            check_layout(self.environment_state, self.action_mode)
        except ValueError as err:
            raise ValueError(f"env.{err}") from None
        if self.reward_type not in REWARD_TYPES:
            raise ValueError(f"env.reward_type must be one of {list(REWARD_TYPES)}, got {self.reward_type!r}")
        if Path(sys.argv[0]).name == "lerobot-eval":  # its own rollout() needs no render (a test runs it so)
            if self.render_mode != "rgb_array":
                raise ValueError(f"env.render_mode must be 'rgb_array' under lerobot-eval, got {self.render_mode!r}: "
                                 "it renders up to 10 episodes into videos whatever the env's render_mode (LeRobot "
                                 "0.6 turns them off only with --eval.recording=true)")
            _check_lerobot_eval_seeds(sys.argv)
        shapes = feature_shapes(environment_state=self.environment_state)
        keys = OBS_TYPES[self.obs_type]
        self.features = {ACTION: PolicyFeature(type=FeatureType.ACTION, shape=shapes["action"])}
        self.features_map = {ACTION: ACTION}
        if AGENT_POS in keys:
            self.features[AGENT_POS] = PolicyFeature(type=FeatureType.STATE, shape=shapes[AGENT_POS])
            self.features_map[AGENT_POS] = OBS_STATE
        if ENVIRONMENT_STATE in keys:
            self.features[ENVIRONMENT_STATE] = PolicyFeature(type=FeatureType.ENV, shape=shapes[ENVIRONMENT_STATE])
            self.features_map[ENVIRONMENT_STATE] = OBS_ENV_STATE
        if PIXELS in keys:
            for cam in self.cameras:
                self.features[f"{PIXELS}/{cam}"] = PolicyFeature(
                    type=FeatureType.VISUAL, shape=(self.observation_height, self.observation_width, 3))
                self.features_map[f"{PIXELS}/{cam}"] = f"{OBS_IMAGES}.{cam}"

    @property
    def package_name(self) -> str:
        return "robogym_ros.envs"  # imported by EnvConfig.create_envs where the gym id is not registered

    @property
    def gym_id(self) -> str:
        return f"robogym_ros/{self.task}"

    @property
    def gym_kwargs(self) -> dict:
        return {
            "obs_type": self.obs_type,
            "cameras": list(self.cameras),
            "observation_width": self.observation_width,
            "observation_height": self.observation_height,
            "render_mode": self.render_mode,
            "task_description": self.task_description,
            "max_episode_steps": self.episode_length,
            "environment_state": self.environment_state,
            "action_mode": self.action_mode,
            "reward_type": self.reward_type,
        }
