"""Gymnasium env of the handover, its HER relabeller and replay helper.

Importing this package registers ``robogym_ros/Handover-v0`` (TimeLimit of
``DEFAULT_MAX_EPISODE_STEPS``); it imports neither rclpy nor any GL library::

    import gymnasium as gym
    import robogym_ros.envs  # noqa: F401  (registers the env)
    env = gym.make("robogym_ros/Handover-v0")
    envs = gym.make_vec("robogym_ros/Handover-v0", num_envs=8, vectorization_mode="vector_entry_point")
"""
from __future__ import annotations

import gymnasium

# MuJoCo reads MUJOCO_GL once, when first imported, and the env imports it (through the physics)
# before any camera: the headless choice (EGL) must be made here, or an env that renders on a
# machine without a display (lerobot-eval's videos) fails with "gladLoadGL error".
import robogym_ros.camera.gl  # noqa: F401,I001  (chooses EGL when nothing is chosen and no display)
from robogym_ros.envs.handover import DEFAULT_MAX_EPISODE_STEPS, MODES, HandoverEnv
from robogym_ros.envs.her import STRATEGIES, HerReplay, relabel

ENV_ID = "robogym_ros/Handover-v0"
# The same env as LeRobot's evaluator sees gym envs (agent_pos, environment_state, pixels; actions
# in rad): what the lerobot_env_robogym plugin's `lerobot-eval --env.type=robogym_handover` makes.
LEROBOT_ENV_ID = "robogym_ros/LeRobotHandover-v0"

if ENV_ID not in gymnasium.registry:
    # vector_entry_point: gym.make_vec(ENV_ID, num_envs=K, vectorization_mode="vector_entry_point")
    # gives the native batched env (robogym_ros.envs.vector.batched), K scenes in this process.
    gymnasium.register(id=ENV_ID, entry_point="robogym_ros.envs.handover:HandoverEnv",
                       vector_entry_point="robogym_ros.envs.vector.batched:BatchedHandoverEnv",
                       max_episode_steps=DEFAULT_MAX_EPISODE_STEPS)
if LEROBOT_ENV_ID not in gymnasium.registry:
    gymnasium.register(id=LEROBOT_ENV_ID, entry_point="robogym_ros.envs.lerobot_view:make_lerobot_env",
                       max_episode_steps=DEFAULT_MAX_EPISODE_STEPS)

__all__ = ["ENV_ID", "LEROBOT_ENV_ID", "MODES", "DEFAULT_MAX_EPISODE_STEPS", "HandoverEnv", "STRATEGIES", "HerReplay",
           "relabel"]
