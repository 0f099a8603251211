"""LeRobot env plugin: ``--env.type=robogym_handover`` is robogym_ros' SO-101 handover in local mode.

LeRobot 0.6's ``lerobot-eval`` (and ``lerobot-record``, ``lerobot-rollout``) import every installed
distribution named ``lerobot_env_*``; importing this one registers the config below::

    lerobot-eval --env.type=robogym_handover --policy.path=outputs/train/.../pretrained_model \\
      --eval.n_episodes=50 --seed=100000

The env is ``robogym_ros/LeRobotHandover-v0`` (robogym_ros.envs.lerobot_view): observations as
LeRobot's gym envs give them (``agent_pos`` = the 12 joint positions, ``environment_state`` = block
and tray poses, ``pixels/<camera>``), actions in rad, one step = 4 control ticks (25 fps), episodes
cut at ``episode_length`` steps (250 = 10 s, the env's registered limit) and ended by the env's
success, which ``info["is_success"]`` carries to lerobot-eval's ``pc_success``. Seeds: episode i of
an eval runs ``reset(seed=cfg.seed + i)``, the scene a sim node started with that seed draws first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
    feature_shapes,
)

__all__ = ["RobogymHandoverEnv"]


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
    features: dict[str, PolicyFeature] = field(default_factory=dict)
    features_map: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.obs_type not in OBS_TYPES:
            raise ValueError(f"env.obs_type must be one of {sorted(OBS_TYPES)}, got {self.obs_type!r}")
        if self.fps != 25:
            raise ValueError(f"env.fps is the env's step rate, 25 (4 control ticks of 10 ms); got {self.fps}")
        if not self.cameras:
            raise ValueError("env.cameras must name at least one camera")
        shapes = feature_shapes()
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
        }
