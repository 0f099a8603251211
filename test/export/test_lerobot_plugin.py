"""LeRobot's own tools on the sim: the env plugin (plugins/lerobot_env_robogym) makes
``--env.type=robogym_handover`` valid; a policy sees in the env what it saw in an exported dataset;
LeRobot's evaluator scores the env's own success; and docs/lerobot.md's train-and-evaluate commands
run. Skips, saying why, where lerobot (Python >= 3.12) or the plugin is not installed."""
from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lerobot", reason="needs the optional lerobot extra (./dev lerobot, or pip install -e "
                    "'.[lerobot]'; lerobot 0.6 needs Python >= 3.12)")
try:
    md.distribution("lerobot_env_robogym")
except md.PackageNotFoundError:
    pytest.skip("the LeRobot env plugin is not installed (./dev lerobot, or pip install -e "
                "./plugins/lerobot_env_robogym)", allow_module_level=True)

import lerobot_env_robogym  # noqa: E402, F401  (registers robogym_handover, as lerobot-eval's plugin import does)
from lerobot.envs.factory import make_env, make_env_config  # noqa: E402
from lerobot.envs.utils import env_to_policy_features, preprocess_observation  # noqa: E402

W, H = 64, 48
BIN = Path(sys.executable).parent


def _vector_env(**config):
    cfg = make_env_config("robogym_handover", **config)
    return cfg, make_env(cfg, n_envs=1)["robogym_handover"][0]


def test_lerobot_finds_the_plugin_by_its_distribution_name():
    """What lerobot-eval does at start-up (register_third_party_plugins), in a fresh process."""
    code = ("from lerobot.utils.import_utils import register_third_party_plugins\n"
            "from lerobot.envs.configs import EnvConfig\n"
            "before = 'robogym_handover' in EnvConfig.get_known_choices()\n"
            "register_third_party_plugins()\n"
            "print(before, 'robogym_handover' in EnvConfig.get_known_choices())\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split()[-2:] == ["False", "True"]


def test_the_config_declares_what_the_env_gives():
    cfg, env = _vector_env(observation_width=W, observation_height=H)
    try:
        obs, _ = env.reset(seed=[4])
        batch = preprocess_observation(obs)
        features = env_to_policy_features(cfg)
        assert set(batch) == set(features) - {"action"} == {
            "observation.state", "observation.environment_state", "observation.images.overhead"}
        for key, value in batch.items():
            assert tuple(value.shape[1:]) == features[key].shape, key
        assert features["action"].shape == env.single_action_space.shape == (12,)
        assert env.unwrapped.metadata["render_fps"] == cfg.fps == 25
        assert env.call("_max_episode_steps") == (cfg.episode_length,)
    finally:
        env.close()
    with pytest.raises(ValueError, match="env.obs_type must be one of"):
        make_env_config("robogym_handover", obs_type="state")


def test_a_policy_sees_in_the_env_what_it_saw_in_the_dataset(tmp_path):
    """An exported rollout, replayed through LeRobot's own env path (make_env, preprocess_observation):
    every frame's observation.state and observation.environment_state equal the dataset's row
    (float32, bit for bit), its image is the dataset's within the video codec's error, and the
    dataset's features are the env config's."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.utils.feature_utils import dataset_to_policy_features

    from robogym_ros.export.rollouts import SweepPolicy, write_rollouts
    write_rollouts(tmp_path / "ds", "t", 1, SweepPolicy, seed=11, max_steps=10, width_px=W, height_px=H,
                   environment_state=True)
    ds = LeRobotDataset("robogym_ros/ds", root=tmp_path / "ds", video_backend="pyav")
    cfg, env = _vector_env(observation_width=W, observation_height=H)
    try:
        want = dataset_to_policy_features(ds.meta.features)
        have = env_to_policy_features(cfg)
        for key, feature in want.items():
            assert key in have and have[key].shape == feature.shape and have[key].type == feature.type, key
        obs, _ = env.reset(seed=[11])
        for k in range(ds.num_frames):
            row, batch = ds[k], preprocess_observation(obs)
            for key in ("observation.state", "observation.environment_state"):
                assert np.array_equal(batch[key][0].numpy(), row[key].numpy()), (k, key)
            image_error = (batch["observation.images.overhead"][0] - row["observation.images.overhead"]).abs()
            assert float(image_error.mean()) < 8 / 255, k  # AV1 at crf 30 (test_lerobot_export.py: ~2/255)
            obs, *_ = env.step(row["action"].numpy()[None].astype(np.float64))
    finally:
        env.close()


def test_lerobots_rollout_scores_the_envs_own_success():
    """The scripted expert as a LeRobot policy (it sees what a state policy sees), through LeRobot's
    own rollout: its per-episode successes are the env's verdicts on the same episodes, run here
    directly with the same float32 observations."""
    from lerobot.processor import PolicyProcessorPipeline
    from lerobot.scripts.lerobot_eval import rollout
    from lerobot_env_robogym.expert_policy import ExpertPolicy

    from robogym_ros.envs import HandoverEnv
    from robogym_ros.expert.percept import Percept
    from robogym_ros.expert.policy import HandoverExpert
    seeds = [0, 1]
    _, env = _vector_env(obs_type="environment_state_agent_pos", render_mode=None)
    identity = PolicyProcessorPipeline(steps=[])
    lerobot_success = []
    try:
        for seed in seeds:
            data = rollout(env, ExpertPolicy(), identity, identity, identity, lambda a: a, seeds=[seed])
            done = data["done"][0]
            lerobot_success.append(bool(data["success"][0][: int(done.float().argmax()) + 1].any()))
    finally:
        env.close()
    direct = []  # the plain env (no LeRobot, no view), fed the same float32 observations
    for seed in seeds:
        env, expert = HandoverEnv(normalize_actions=False), HandoverExpert()
        try:
            obs, _ = env.reset(seed=seed)
            q_at, poses_at = env.layout.positions, env.layout.object_poses
            assert env.object_names == ["block", "tray"]
            for step in range(250):  # the registered limit, as the plugin's episode_length
                o = np.float32(obs["observation"]).astype(np.float64)
                block, tray = np.split(o[poses_at], 2)
                obs, _, terminated, truncated, info = env.step(expert(Percept(step * 0.04, o[q_at], block, tray)))
                if terminated or truncated:
                    break
            direct.append(bool(info["is_success"]))
        finally:
            env.close()
    assert lerobot_success == direct
    assert any(direct), "the expert succeeded on neither seed: the comparison says nothing"


def test_the_staged_reward_gives_lerobot_eval_the_furthest_stage_each_episode_reached():
    """--env.reward_type=staged: through LeRobot's own rollout, the expert's rewards are the plain
    env's staged rewards step for step, rising to place (0) on a placed block; a reward type the
    env does not know is refused, naming the argument."""
    from lerobot.processor import PolicyProcessorPipeline
    from lerobot.scripts.lerobot_eval import rollout
    from lerobot_env_robogym.expert_policy import ExpertPolicy

    from robogym_ros.envs import HandoverEnv
    from robogym_ros.expert.percept import Percept
    from robogym_ros.expert.policy import HandoverExpert
    from robogym_ros.task.goals import STAGES, stage_of_staged_reward
    seed = 3
    _, env = _vector_env(obs_type="environment_state_agent_pos", render_mode=None, reward_type="staged")
    identity = PolicyProcessorPipeline(steps=[])
    try:
        data = rollout(env, ExpertPolicy(), identity, identity, identity, lambda a: a, seeds=[seed])
    finally:
        env.close()
    steps = int(data["done"][0].float().argmax()) + 1
    through_lerobot = data["reward"][0][:steps].tolist()
    env, expert = HandoverEnv(normalize_actions=False, reward_type="staged"), HandoverExpert()
    direct = []
    try:
        obs, _ = env.reset(seed=seed)
        q_at, poses_at = env.layout.positions, env.layout.object_poses
        for step in range(steps):
            o = np.float32(obs["observation"]).astype(np.float64)
            block, tray = np.split(o[poses_at], 2)
            obs, r, *_ = env.step(expert(Percept(step * 0.04, o[q_at], block, tray)))
            direct.append(r)
    finally:
        env.close()
    assert through_lerobot == pytest.approx(direct, abs=1e-7)  # LeRobot keeps rewards as float32
    reached = [STAGES[stage_of_staged_reward(r)] for r in through_lerobot]
    assert reached[-1] == "place" and {"grasp", "lift", "handover", "release"} <= set(reached), reached
    with pytest.raises(ValueError, match="env.reward_type must be one of"):
        make_env_config("robogym_handover", reward_type="shaped")


@pytest.mark.long
def test_the_readme_commands_export_train_and_evaluate(tmp_path):
    """docs/lerobot.md's LeRobot commands, made small: a state-only export (--no-cameras), lerobot-train,
    lerobot-eval --env.type=robogym_handover on the checkpoint: eval_info.json has pc_success and the
    video (PyAV needs an integer render_fps)."""
    state = tmp_path / "demos_state"
    _run([sys.executable, "-m", "robogym_ros.export.lerobot", "--rollouts", "2", "--max-steps", "30",
          "--environment-state", "--no-cameras", "--out", str(state), "--task", "hand the block over"])
    train = tmp_path / "train"
    _run([str(BIN / "lerobot-train"), "--dataset.repo_id=robogym_ros/demos_state", f"--dataset.root={state}",
          "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
          "--policy.pretrained_backbone_weights=null", "--policy.dim_model=32", "--policy.n_heads=2",
          "--policy.dim_feedforward=64", "--policy.n_encoder_layers=1", "--policy.use_vae=false",
          "--policy.chunk_size=5", "--policy.n_action_steps=5", "--batch_size=4", "--steps=2", "--save_freq=2",
          "--num_workers=0", "--wandb.enable=false", f"--output_dir={train}"])
    checkpoint = train / "checkpoints" / "last" / "pretrained_model"
    assert (checkpoint / "model.safetensors").exists()
    out = tmp_path / "eval"
    run = _run([str(BIN / "lerobot-eval"), "--env.type=robogym_handover", f"--policy.path={checkpoint}",
                "--env.episode_length=8", "--eval.n_episodes=1", "--eval.batch_size=1", "--seed=100000",
                "--policy.temporal_ensemble_coeff=0.01", "--policy.n_action_steps=1", f"--output_dir={out}"])
    info = json.loads((out / "eval_info.json").read_text())
    assert set(info["overall"]) >= {"pc_success", "avg_sum_reward", "n_episodes"}, info
    assert info["overall"]["n_episodes"] == 1 and info["overall"]["pc_success"] == 0.0  # 8 steps: no handover
    assert list(out.rglob("*.mp4")), run.stdout[-2000:]


def _eval_refused(tmp_path, *args: str) -> str:
    """lerobot-eval with these arguments (and a policy path that does not exist: the env's config is
    parsed first); it must fail before any env is made, writing nothing; its output comes back."""
    out = tmp_path / "eval"
    run = subprocess.run([str(BIN / "lerobot-eval"), "--env.type=robogym_handover", "--policy.path=/no/such/policy",
                          f"--output_dir={out}", *args], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert not out.exists()
    return run.stdout + run.stderr


def test_render_mode_null_is_refused_saying_lerobot_eval_renders_anyway(tmp_path):
    """lerobot-eval renders up to 10 episodes whatever the env's render_mode: None frames broke its video
    writer and left phantom video paths in eval_info.json. The config refuses it, naming the option."""
    assert "env.render_mode must be 'rgb_array' under lerobot-eval, got None" in _eval_refused(
        tmp_path, "--env.render_mode=null")
    make_env_config("robogym_handover", render_mode=None)  # elsewhere (LeRobot's rollout() alone) it is fine


def test_eval_seeds_past_the_envs_range_are_refused_before_any_episode(tmp_path):
    """LeRobot seeds whole batches (S .. S + ceil(n / b) * b - 1): 3 episodes in batches of 2 from
    2147483645 would reach 2**31 in a worker and lose every result. Refused up front naming --seed and
    its range; the last seed allowed is one the env takes."""
    from lerobot_env_robogym import eval_seed_problem
    out = _eval_refused(tmp_path, "--eval.n_episodes=3", "--eval.batch_size=2", "--seed=2147483645")
    assert "--seed=2147483645 with --eval.n_episodes=3 --eval.batch_size=2" in out
    assert "--seed must be in 0 .. 2147483644" in out
    assert eval_seed_problem(2147483644, 3, 2) is None and eval_seed_problem(2147483645, 3, 2)
    assert eval_seed_problem(2147483647, 1, 1) is None and eval_seed_problem(-1, 1, 1)
    assert eval_seed_problem(None, 3, 2) is None
    _, env = _vector_env(obs_type="environment_state_agent_pos")
    try:  # the last seed allowed runs; one past it is the env's own refusal
        env.reset(seed=[2147483647])
        with pytest.raises(Exception, match="2147483647"):
            env.reset(seed=[2147483648])
    finally:
        env.close()


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    return run
