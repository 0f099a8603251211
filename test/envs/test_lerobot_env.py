"""The handover as LeRobot's evaluator sees gym envs (robogym_ros.envs.lerobot_view): LeRobot's
observation keys cut from the env's own observation, actions in rad, the env's success as a bool,
an integer render_fps. Needs no lerobot (test/export/test_lerobot_plugin.py has the LeRobot side)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the envs)
from robogym_ros.contract import POSE_LAYOUT
from robogym_ros.envs import LEROBOT_ENV_ID, HandoverEnv
from robogym_ros.envs.lerobot_view import OBS_TYPES, LeRobotView, feature_shapes, make_lerobot_env
from robogym_ros.export.rollouts import SweepPolicy

W, H = 64, 48


def _indices(env: HandoverEnv, names: list[str]) -> list[int]:
    """Where named quantities sit in the env's flat observation, by the layout's own names."""
    described = env.layout.describe(env.joint_names, env.object_names)
    return [described.index(n) for n in names]


def test_the_view_cuts_lerobots_keys_from_the_envs_own_observation():
    view = gym.make(LEROBOT_ENV_ID, obs_type="pixels_environment_state_agent_pos", cameras=["overhead"],
                    observation_width=W, observation_height=H)
    plain = HandoverEnv(normalize_actions=False, cameras=["overhead"], camera_width_px=W, camera_height_px=H)
    try:
        q_idx = _indices(plain, [f"q/{j}" for j in plain.joint_names])
        pose_idx = _indices(plain, [f"pose/{o}/{c}" for o in ("block", "tray") for c in POSE_LAYOUT])
        obs, info = view.reset(seed=7)
        ref, ref_info = plain.reset(seed=7)
        policy = SweepPolicy(plain)
        for _ in range(12):
            assert set(obs) == {"agent_pos", "environment_state", "pixels"}
            assert view.observation_space.contains(obs)
            assert np.array_equal(obs["agent_pos"], ref["observation"][q_idx])
            assert np.array_equal(obs["environment_state"], ref["observation"][pose_idx])
            assert obs["environment_state"].shape == (14,)
            assert list(obs["pixels"]) == ["overhead"]
            assert np.array_equal(obs["pixels"]["overhead"], ref["pixels/overhead"])
            assert info["is_success"] is bool(ref_info["is_success"])
            action = policy(ref)  # rad, as a dataset's action
            obs, reward, terminated, truncated, info = view.step(action.astype(np.float32))
            ref, ref_reward, ref_terminated, ref_truncated, ref_info = plain.step(action.astype(np.float32))
            assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
            assert info["tick_index"] == ref_info["tick_index"] and info["actions_clipped"] == 0
    finally:
        view.close()
        plain.close()


def test_actions_are_rad_and_outside_a_range_are_clipped_and_counted():
    view = make_lerobot_env("environment_state_agent_pos")
    plain = HandoverEnv(normalize_actions=False)
    try:
        assert np.array_equal(view.action_space.low, plain.action_space.low)
        assert np.array_equal(view.action_space.high, plain.action_space.high)
        obs, _ = view.reset(seed=3)
        plain.reset(seed=3)
        action = obs["agent_pos"].astype(np.float32)
        action[2] = plain.action_space.high[2] + 0.5  # past the elbow's range
        action[5] = plain.action_space.low[5] - 0.1
        obs, *_, info = view.step(action)
        assert info["actions_clipped"] == 2
        clipped = action.copy()
        clipped[2], clipped[5] = plain.action_space.high[2], plain.action_space.low[5]
        ref, *_ = plain.step(clipped)
        assert np.array_equal(obs["agent_pos"], ref["observation"][plain.layout.positions])
        nan = clipped.copy()
        nan[4] = np.nan
        with pytest.raises(ValueError, match=f"action for '{plain.joint_names[4]}' is not finite"):
            view.step(nan)
        with pytest.raises(ValueError, match="shape"):
            view.step(clipped[:5])
    finally:
        view.close()
        plain.close()


def test_render_fps_is_the_integer_step_rate():
    view = make_lerobot_env("environment_state_agent_pos")
    fast = HandoverEnv(action_repeat=2)
    try:
        for env, fps in ((view, 25), (view.unwrapped, 25), (fast, 50)):
            assert type(env.metadata["render_fps"]) is int and env.metadata["render_fps"] == fps
    finally:
        view.close()
        fast.close()


def test_each_obs_type_gives_its_keys_and_only_pixels_render_cameras():
    for obs_type, keys in OBS_TYPES.items():
        env = make_lerobot_env(obs_type, observation_width=W, observation_height=H)
        try:
            obs, _ = env.reset(seed=1)
            assert tuple(obs) == keys and tuple(env.observation_space) == keys
            assert env.unwrapped.cameras == (("overhead",) if "pixels" in keys else ())
        finally:
            env.close()
    assert feature_shapes() == {"agent_pos": (12,), "environment_state": (14,), "action": (12,)}


def test_render_mode_renders_the_first_camera_for_videos():
    env = make_lerobot_env("environment_state_agent_pos", cameras=["left_wrist", "overhead"],
                           observation_width=W, observation_height=H, render_mode="rgb_array")
    try:
        env.reset(seed=2)
        frame = env.render()
        assert frame.shape == (H, W, 3) and frame.dtype == np.uint8
    finally:
        env.close()


def test_bad_arguments_name_what_was_wrong():
    with pytest.raises(ValueError, match="obs_type must be one of .*got 'pixels'"):
        make_lerobot_env("pixels")
    with pytest.raises(ValueError, match="cameras must name at least one camera"):
        make_lerobot_env(cameras=[])
    normalised = HandoverEnv()
    try:
        with pytest.raises(ValueError, match="actions in rad.*normalize_actions=False"):
            LeRobotView(normalised, "environment_state_agent_pos")
    finally:
        normalised.close()
    no_cameras = HandoverEnv(normalize_actions=False)
    try:
        with pytest.raises(ValueError, match="gives pixels: make the env with cameras"):
            LeRobotView(no_cameras, "pixels_agent_pos")
    finally:
        no_cameras.close()


def test_grasp_frames_and_relative_actions_give_the_policy_what_such_a_dataset_holds():
    """environment_state="objects_grasp": the objects' poses, then the grasp frames of agent_pos;
    action_mode="relative": the env is sent agent_pos + the action, clipped to the ranges as ever."""
    from robogym_ros.envs.grasp_frames import GraspFrames
    view = make_lerobot_env("environment_state_agent_pos", environment_state="objects_grasp", action_mode="relative")
    plain = make_lerobot_env("environment_state_agent_pos")
    try:
        assert view.observation_space["environment_state"].shape == (32,)
        assert feature_shapes(environment_state="objects_grasp")["environment_state"] == (32,)
        span = plain.action_space.high - plain.action_space.low
        assert np.array_equal(view.action_space.high, span) and np.array_equal(view.action_space.low, -span)
        frames = GraspFrames(view.unwrapped.joint_names)
        obs, _ = view.reset(seed=11)
        ref, _ = plain.reset(seed=11)
        rng = np.random.default_rng(0)
        for k in range(10):
            assert np.array_equal(obs["agent_pos"], ref["agent_pos"])
            assert np.array_equal(obs["environment_state"][:14], ref["environment_state"])
            assert np.array_equal(obs["environment_state"][14:], frames(obs["agent_pos"]))
            assert view.observation_space.contains(obs)
            delta = rng.normal(0.0, 0.05, 12)
            if k == 9:
                delta[0] = 100.0  # far past the pan's range: clipped like an absolute target
            obs, _, _, _, info = view.step(delta)
            ref, _, _, _, ref_info = plain.step(ref["agent_pos"] + delta)
            assert info["actions_clipped"] == ref_info["actions_clipped"] == (1 if k == 9 else 0)
        assert np.array_equal(obs["agent_pos"], ref["agent_pos"])
        with pytest.raises(ValueError, match="action_mode"):
            make_lerobot_env("environment_state_agent_pos", action_mode="delta")
        with pytest.raises(ValueError, match="environment_state"):
            make_lerobot_env("environment_state_agent_pos", environment_state="objects_hands")
    finally:
        view.close()
        plain.close()
