"""The Gymnasium env in local mode: registration, check_env, the observation, the one scene and
reset shared with the sim node, actions, goal functions, bad input, pixels, vector envs, and
that local mode imports no ROS."""
from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.camera.lens import Lens
from robogym_ros.camera.renderer import CameraRenderer
from robogym_ros.contract import POSE_SIZE
from robogym_ros.envs import DEFAULT_MAX_EPISODE_STEPS, ENV_ID, HandoverEnv
from robogym_ros.envs.pixels import FrameRenderer
from robogym_ros.sim.physics import Physics
from robogym_ros.task import goals, placement
from robogym_ros.task.scene import default_model_path

PHYSICS_DT_S, DECIMATION = 0.002, 5


def node_sequence(seed: int, n_resets: int):
    """What a sim node started with ``seed`` publishes for its first resets: the reference."""
    physics = Physics(default_model_path(), PHYSICS_DT_S, DECIMATION, seed)
    ticks = []
    for _ in range(n_resets):
        physics.reset_tick()
        ticks.append(physics.snapshot())
    return physics, ticks


def assert_obs_equal(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


# --- registration and the Gymnasium checker -------------------------------------------------

def test_make_registers_the_env_with_a_time_limit():
    env = gym.make(ENV_ID)
    try:
        assert env.spec.max_episode_steps == DEFAULT_MAX_EPISODE_STEPS
        assert isinstance(env.unwrapped, HandoverEnv)
        assert env.unwrapped.mode == "local"
    finally:
        env.close()


def test_check_env_passes():
    env = gym.make(ENV_ID)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_check_env_passes_with_pixels_and_rgb_array():
    env = gym.make(ENV_ID, cameras=["overhead", "left_wrist"], camera_width_px=80, camera_height_px=60,
                   render_mode="rgb_array")
    try:
        check_env(env.unwrapped)
        obs, _ = env.reset(seed=0)
        assert obs["pixels/overhead"].shape == (60, 80, 3) and obs["pixels/overhead"].dtype == np.uint8
        frame = env.render()
        assert frame.shape == (60, 80, 3) and frame.any()
    finally:
        env.close()


# --- one scene, one reset: the sim node's own physics -----------------------------------------

def test_seeded_reset_is_the_first_reset_of_a_node_with_that_seed_and_the_sequence_continues():
    env = HandoverEnv()
    try:
        _, (first, second, third) = node_sequence(seed=5, n_resets=3)
        for expected, obs_info in zip((first, second, third),
                                      (env.reset(seed=5), env.reset(), env.reset())):
            obs, info = obs_info
            np.testing.assert_array_equal(obs["observation"][env.layout.positions], expected.position)
            np.testing.assert_array_equal(obs["achieved_goal"], expected.object_poses[0, :3])
            assert info["tick_index"] == expected.index
        obs_again, _ = env.reset(seed=5)
        np.testing.assert_array_equal(obs_again["achieved_goal"], first.object_poses[0, :3])
    finally:
        env.close()


def test_observation_layout_goal_and_info():
    env = HandoverEnv()
    try:
        obs, info = env.reset(seed=2)
        _, (tick,) = node_sequence(seed=2, n_resets=1)
        lay = env.layout
        o = obs["observation"]
        assert o.shape == (lay.size,) == (40,) and o.dtype == np.float64
        np.testing.assert_array_equal(o[lay.positions], tick.position)
        np.testing.assert_array_equal(o[lay.velocities], tick.velocity)
        np.testing.assert_array_equal(o[lay.object_poses].reshape(-1, POSE_SIZE), tick.object_poses)
        grippers = [env.joint_names.index("left_gripper"), env.joint_names.index("right_gripper")]
        np.testing.assert_array_equal(o[lay.gripper_efforts], tick.effort[grippers])
        names = lay.describe(env.joint_names, env.object_names)
        assert len(names) == lay.size and names[0] == "q/left_shoulder_pan" and names[-1] == "effort/right_gripper"
        tray = tick.object_poses[env.object_names.index("tray")]
        assert tray[4] == tray[5] == 0.0  # a tray on the table: its goal is straight above its origin
        np.testing.assert_array_equal(obs["desired_goal"], [tray[0], tray[1], tray[2] + placement.GOAL_ABOVE_TRAY_M])
        np.testing.assert_array_equal(obs["achieved_goal"], tick.object_poses[env.object_names.index("block"), :3])
        assert info == {"is_success": 0.0, "stage": 0, "distance_m": pytest.approx(np.linalg.norm(
                        obs["achieved_goal"] - obs["desired_goal"])),
                        "left_touches_block": False, "right_touches_block": False, "left_grasps_block": False,
                        "right_grasps_block": False, "block_on_tray": False, "block_on_table": True,
                        "block_speed_m_s": np.inf, "block_turn_rad_s": np.inf,  # no pose before a reset
                        "block_at_rest": False, "tray_quat": tuple(tray[3:7]), "tray_shift_m": (0.0, 0.0, 0.0),
                        "tick_index": 1, "stamp_ns": 10_000_000, "ticks_elapsed": 0, "blew_up": False}
        assert obs in env.observation_space
    finally:
        env.close()


@pytest.mark.parametrize("action_repeat", [1, 3])
def test_step_holds_the_targets_for_action_repeat_ticks(action_repeat):
    env = HandoverEnv(normalize_actions=False, action_repeat=action_repeat)
    try:
        env.reset(seed=4)
        physics, _ = node_sequence(seed=4, n_resets=1)
        targets = np.array([0.3, -0.5, 0.8, 0.9, 0.2, 1.0] * 2)
        obs, reward, terminated, truncated, info = env.step(targets.astype(np.float32))
        physics.set_targets(dict(zip(physics.joint_names, targets.astype(np.float32).astype(np.float64))))
        for _ in range(action_repeat):
            physics.step_tick()
        expected = physics.snapshot()
        np.testing.assert_array_equal(obs["observation"][env.layout.positions], expected.position)
        assert info["tick_index"] == 1 + action_repeat and info["ticks_elapsed"] == action_repeat
        assert info["stamp_ns"] == info["tick_index"] * 10_000_000
        assert (reward, terminated, truncated) == (-1.0, False, False)
    finally:
        env.close()


def test_normalised_actions_span_each_joint_range():
    env = HandoverEnv()
    try:
        lower, upper = (np.array(r) for r in zip(*env._backend.joint_ranges))
        assert env.action_space.low.tolist() == [-1.0] * 12 and env.action_space.high.tolist() == [1.0] * 12
        np.testing.assert_allclose(env._actions.targets(-np.ones(12)), lower)
        np.testing.assert_allclose(env._actions.targets(np.ones(12)), upper)
        np.testing.assert_allclose(env._actions.targets(np.zeros(12)), (lower + upper) / 2)
        mid = (lower + upper) / 2 + 0.1
        np.testing.assert_allclose(env._actions.targets(env._actions.action_of(mid)), mid, atol=1e-6)
    finally:
        env.close()


# --- goal functions ---------------------------------------------------------------------------

def _placed_info(**change) -> dict:
    """An info of a block lying released and at rest in an unmoved, unturned tray."""
    info = {"left_touches_block": False, "right_touches_block": False, "left_grasps_block": False,
            "right_grasps_block": False, "block_on_tray": True, "block_on_table": False, "block_at_rest": True,
            "tray_quat": (1.0, 0.0, 0.0, 0.0), "tray_shift_m": (0.0, 0.0, 0.0), "blew_up": False}
    return {**info, **change}


def test_goal_functions_are_batched_and_agree_with_step():
    envs = {kind: HandoverEnv(reward_type=kind) for kind in goals.REWARD_TYPES}
    env = envs["staged"]
    try:
        env.reset(seed=1)
        rng = np.random.default_rng(0)
        achieved, desired = rng.uniform(-0.3, 0.3, (2, 7, 3))
        achieved[:3] = desired[:3] + [0.02, -0.03, 0.01]  # inside the box at the goal
        infos = np.array([_placed_info(blew_up=i == 3, block_at_rest=i != 1, left_touches_block=i == 2)
                          for i in range(7)], dtype=object)
        for e in envs.values():
            for f in (e.compute_reward, e.compute_terminated, e.compute_truncated):
                out = f(achieved, desired, infos)
                assert out.shape == (7,)
                assert all(f(achieved[i], desired[i], infos[i]) == out[i] for i in range(7))
        # inside, at rest, released: placed; moving (1) or touched by an arm (2) or outside (3 ..): not
        assert env.compute_terminated(achieved, desired, infos).tolist() == [True] + [False] * 6
        assert envs["sparse"].compute_reward(achieved, desired, infos).tolist() == [0.0] + [-1.0] * 6
        np.testing.assert_array_equal(envs["dense"].compute_reward(achieved, desired, infos),
                                      -np.linalg.norm(achieved - desired, axis=-1))
        assert env.compute_truncated(achieved, desired, infos).tolist() == [i == 3 for i in range(7)]
        no_rest = {k: v for k, v in _placed_info().items() if k != "block_at_rest"}
        with pytest.raises(ValueError, match="info lacks 'block_at_rest'"):
            env.compute_terminated(achieved, desired, no_rest)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert reward == env.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
            assert terminated == env.compute_terminated(obs["achieved_goal"], obs["desired_goal"], info)
            assert truncated == env.compute_truncated(obs["achieved_goal"], obs["desired_goal"], info)
    finally:
        for e in envs.values():
            e.close()


def test_one_goals_success_and_stage_are_the_batchs_exactly():
    """step() judges one goal in Python floats, compute_* judge batches in numpy: the same answer
    for every goal, or a relabeller's reward would differ from the env's own. Goals at and
    around the box's faces, turned and shifted trays, every combination of contacts."""
    rng = np.random.default_rng(7)
    n = 20_000
    goal = rng.uniform(-0.3, 0.3, (n, 3))
    edge = np.array([placement.TRAY_INNER_HALF_M, placement.TRAY_INNER_HALF_M, 0.0])
    offset = rng.choice([-1.0, 1.0], (n, 3)) * edge * rng.uniform(0.97, 1.03, (n, 3))  # near the walls
    offset[:, 2] = rng.uniform(-0.015, 0.02, n)  # below the floor .. above the upright limit
    yaw = rng.choice([0.0, rng.uniform(-np.pi, np.pi)], n)
    quat = np.stack([np.cos(yaw / 2), np.zeros(n), np.zeros(n), np.sin(yaw / 2)], axis=1)
    shift = rng.choice([0.0, 0.01], (n, 1)) * rng.uniform(-1, 1, (n, 3))
    achieved = goal + shift + offset
    flags = rng.random((n, len(goals.FLAG_KEYS))) < 0.6
    infos = np.array([{**dict(zip(goals.FLAG_KEYS, map(bool, f))), "tray_quat": tuple(q), "tray_shift_m": tuple(sh)}
                      for f, q, sh in zip(flags, quat, shift)], dtype=object)
    batch_success, batch_stage = goals.success(achieved, goal, infos), goals.stage(achieved, goal, infos)
    one = [goals.success_and_stage(a.tolist(), g.tolist(), i) for a, g, i in zip(achieved, goal, infos)]
    assert [o[0] for o in one] == batch_success.tolist() and [o[1] for o in one] == batch_stage.tolist()
    assert batch_success.sum() > 50 and set(batch_stage.tolist()) == set(range(7))  # every case met


def test_the_box_at_a_goal_is_the_trays_interior():
    """Inside: the centre within the walls' inner faces (46 mm, in the tray's frame), no higher than an
    upright block standing on the floor; the box turns with the tray and moves with it."""
    goal = np.zeros(3)
    up = (1.0, 0.0, 0.0, 0.0)
    turned = (np.cos(np.pi / 8), 0.0, 0.0, np.sin(np.pi / 8))  # 45 degrees about z

    def inside(point, quat=up, shift=(0.0, 0.0, 0.0)):
        return bool(placement.inside_tray_at(np.array(point), goal, np.array(shift), np.array(quat)))

    assert inside([0.045, 0.045, 0.0]) and not inside([0.047, 0.0, 0.0]) and not inside([0.0, -0.047, 0.0])
    assert inside([0.0, 0.0, 0.0125 + 0.003]) and not inside([0.0, 0.0, 0.0125 + 0.004])  # upright + 3 mm
    assert not inside([0.0, 0.0, -0.0126])  # below the floor's top
    assert inside([0.045, 0.045, 0.0]) and not inside([0.045, 0.045, 0.0], turned)  # a corner turned away
    assert inside([0.06, 0.0, 0.0], turned)  # 60 mm along the turned tray's diagonal
    assert inside([0.1, 0.0, 0.0], shift=(0.1, 0.0, 0.0)) and not inside([0.0, 0.0, 0.0], shift=(0.1, 0.0, 0.0))


def test_the_scalar_distance_of_a_step_is_the_batched_distance_bit_for_bit():
    """step() computes one distance in Python floats; compute_reward computes batches in numpy.
    They must agree exactly, or a relabeller's reward would differ from the env's own."""
    rng = np.random.default_rng(5)
    achieved, desired = rng.uniform(-0.6, 0.6, (2, 20_000, 3))
    batched = goals.goal_distance(achieved, desired)
    scalar = np.array([goals.scalar_distance(a.tolist(), d.tolist()) for a, d in zip(achieved, desired)])
    np.testing.assert_array_equal(scalar, batched)
    np.testing.assert_array_equal(batched, np.linalg.norm(achieved - desired, axis=-1))


def test_block_dropped_into_the_tray_succeeds_once_it_rests():
    env = HandoverEnv()
    try:
        obs, _ = env.reset(seed=3)
        # Drop the block into the tray by hand (what a good policy would do), then let it settle.
        physics = env._backend._physics
        block = physics.model.joint("block_free").qposadr[0]
        physics.data.qpos[block:block + 3] = obs["desired_goal"] + [0.0, 0.0, 0.01]
        physics.data.qpos[block + 3:block + 7] = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]  # lying
        physics.data.qvel[:] = 0.0
        hold = env._actions.action_of(obs["observation"][env.layout.positions])
        obs, reward, terminated, truncated, info = env.step(hold)
        assert not terminated and info["block_speed_m_s"] > 1.0  # it flew from the table into the tray
        steps = 1
        while not terminated and steps < 25:
            obs, reward, terminated, truncated, info = env.step(hold)
            steps += 1
        assert terminated and steps <= 5, (steps, info)
        assert info["block_on_tray"] and info["block_at_rest"] and info["distance_m"] < 0.01, info
        assert (reward, terminated, truncated, info["is_success"], info["stage"]) == (0.0, True, False, 1.0, 6)
        assert np.copysign(1.0, reward) == 1.0  # +0.0, not -0.0
    finally:
        env.close()


# --- bad input: one clear error, nothing changed ---------------------------------------------

def test_actions_at_the_edges_within_float32_rounding_are_taken():
    env = HandoverEnv()
    try:
        env.reset(seed=8)
        edge = np.array([1.0 + 5e-7, -1.0 - 5e-7] * 6)  # a float32 sample of the bounds may be a hair out
        env.step(edge)
        assert np.array_equal(env._actions.targets(edge), env._actions.targets(np.array([1.0, -1.0] * 6)))
    finally:
        env.close()


@pytest.mark.parametrize("action, message", [
    (np.zeros(11), r"action must have shape \(12,\), got \(11,\)"),
    (np.array([0.0] * 5 + [np.nan] + [0.0] * 6), r"action for 'left_gripper' is not finite"),
    (np.array([0.0] * 7 + [1.5] + [0.0] * 4), r"action for 'right_shoulder_lift' is 1\.5, outside \[-1, 1\]"),
    (np.array([-1.0 - 2e-6] + [0.0] * 11), r"action for 'left_shoulder_pan' is -1, outside \[-1, 1\]"),
    (np.array([np.inf] + [0.0] * 10 + [-np.inf]), r"action for 'left_shoulder_pan' is not finite"),
    ("fast", r"action must be 12 numbers"),
])
def test_bad_action_is_refused_and_changes_nothing(action, message):
    env, reference = HandoverEnv(), HandoverEnv()
    try:
        env.reset(seed=8)
        reference.reset(seed=8)
        with pytest.raises(ValueError, match=message):
            env.step(action)
        good = np.full(12, 0.25, dtype=np.float32)
        assert_obs_equal(env.step(good)[0], reference.step(good)[0])
    finally:
        env.close()
        reference.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "remote"}, r"mode must be one of \('local', 'ros_lockstep', 'ros_realtime'\)"),
    ({"reward_type": "shaped"}, r"reward_type must be one of \('sparse', 'dense', 'staged'\)"),
    ({"action_repeat": 0}, r"action_repeat must be an integer >= 1"),
    ({"render_mode": "human"}, r"render_mode must be None or one of \['rgb_array'\]"),
    ({"cameras": "overhead"}, r"cameras must be a list of camera names"),
    ({"cameras": ["ceiling"]}, r"no camera named 'ceiling' in the model"),
    ({"mode": "ros_lockstep", "namespace": "1bad"}, r"namespace '1bad' is not a valid ROS namespace"),
])
def test_bad_constructor_argument_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HandoverEnv(**kwargs)


def test_bad_seed_and_step_before_reset_are_named():
    env = HandoverEnv()
    try:
        with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):
            env.step(np.zeros(12))
        with pytest.raises(ValueError, match=r"seed must be an integer in 0 \.\. 2147483647"):
            env.reset(seed=2**31)
    finally:
        env.close()


# --- pixels -----------------------------------------------------------------------------------

def test_pixels_from_joint_positions_and_poses_equal_pixels_from_the_full_state():
    """ROS mode renders from what the topics carry (positions and poses); that must be the image
    the full physics state gives, so local and ROS pixels are the same."""
    _, ticks = node_sequence(seed=6, n_resets=1)
    physics, _ = node_sequence(seed=6, n_resets=1)
    physics.set_targets({"left_shoulder_lift": 0.4, "right_elbow_flex": 0.2})
    for _ in range(20):
        physics.step_tick()
    lens = Lens(96, 72)
    frames = FrameRenderer(default_model_path(), ["overhead", "right_wrist"], lens)
    full = CameraRenderer(physics.model, ["overhead", "right_wrist"], lens)
    try:
        for tick in (ticks[0], physics.snapshot()):
            a, b = frames.render(tick), full.render(tick.state)
            for cam in a:
                np.testing.assert_array_equal(a[cam], b[cam], err_msg=cam)
        assert not np.array_equal(frames.render(ticks[0])["overhead"], frames.render(physics.snapshot())["overhead"])
    finally:
        frames.close()
        full.close()


# --- many envs, and no ROS in local mode ------------------------------------------------------

def test_async_vector_env_runs_each_env_with_its_own_seed():
    seeds = [11, 12]
    vec = gym.vector.AsyncVectorEnv([lambda: gym.make(ENV_ID) for _ in seeds])
    singles = [HandoverEnv() for _ in seeds]
    try:
        obs, _ = vec.reset(seed=seeds)
        single_obs = [env.reset(seed=s)[0] for env, s in zip(singles, seeds)]
        for i in range(len(seeds)):
            assert_obs_equal({k: v[i] for k, v in obs.items()}, single_obs[i])
        assert not np.array_equal(obs["observation"][0], obs["observation"][1])
        rng = np.random.default_rng(1)
        for _ in range(5):
            actions = rng.uniform(-1, 1, (len(seeds), 12)).astype(np.float32)
            obs, rewards, *_ = vec.step(actions)
            for i, env in enumerate(singles):
                np.testing.assert_array_equal(obs["observation"][i], env.step(actions[i])[0]["observation"])
    finally:
        vec.close()
        for env in singles:
            env.close()


ROS_MODULES = """
import json, sys
{setup}
ros = sorted(m for m in sys.modules if m.split('.')[0] in
             {{'rclpy', 'rcl_interfaces', 'std_msgs', 'sensor_msgs', 'geometry_msgs', 'std_srvs'}}
             or m.startswith('robogym_ros.nodes'))
print(json.dumps(ros))
"""


def ros_modules_after(setup: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", ROS_MODULES.format(setup=setup)], capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_local_mode_imports_no_ros():
    loaded = ros_modules_after(
        "import gymnasium as gym\n"  # the module:id form registers the env on its own
        "env = gym.make('robogym_ros.envs:robogym_ros/Handover-v0')\n"
        "env.reset(seed=0)\n"
        "env.step(env.action_space.sample())")
    assert loaded == []
    # Positive control: the same probe sees rclpy once the ROS mode's module is imported.
    assert "rclpy" in ros_modules_after("import robogym_ros.envs.ros.backend")
