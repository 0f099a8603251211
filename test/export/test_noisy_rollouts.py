"""Noisy expert rollouts (DART): the env is sent the expert's action plus noise, the dataset's
action is the expert's clean action for the state actually reached, and a replay of the targets
sent reproduces every frame."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

lerobot_reason = "needs the optional lerobot extra (Python >= 3.12)"


def _rows(out):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset("robogym_ros/t", root=out, video_backend="pyav")
    return ds, {k: np.asarray(v) for k, v in ds.hf_dataset.with_format("numpy")[:].items()}


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import main
    out = tmp_path_factory.mktemp("dart") / "ds"
    assert main(["--rollouts", "2", "--seed", "3", "--max-steps", "60", "--task", "t", "--no-cameras",
                 "--environment-state", "--noise-rad", "0.05", "--noisy-share", "0.5", "--out", str(out)]) == 0
    return out


def test_the_label_is_the_experts_clean_action_for_the_state_the_noise_led_to(noisy):
    """Replayed with the targets sent, a fresh expert sees each frame's (perturbed) scene and must
    answer the stored action; the noisy episode's states leave the clean rollout of its seed."""
    from robogym_ros.expert.runner import EnvExpert
    from robogym_ros.export.dataset import EXECUTED, SEED, STATE
    from robogym_ros.export.rollouts import make_env, rollouts
    ds, rows = _rows(noisy)
    env = make_env(cameras=())
    try:
        for e, want_noisy in ((0, False), (1, True)):  # a share of 0.5: every second episode
            sel = rows["episode_index"] == e
            sent, label = rows[EXECUTED][sel].astype(np.float64), rows["action"][sel].astype(np.float64)
            assert (np.abs(sent - label).max() > 0.02) == want_noisy
            grippers = [i for i, name in enumerate(env.joint_names) if name.endswith("_gripper")]
            assert len(grippers) == 2 and np.array_equal(sent[:, grippers], label[:, grippers])  # no noise
            obs, _ = env.reset(seed=int(rows[SEED][sel][0]))
            expert = EnvExpert(env)
            expert.reset()
            held_still = 0  # frames of the noisy episode with an arm's joints kept clean
            for k, target in enumerate(sent):
                clean = np.asarray(expert(obs), np.float64).astype(np.float32)
                assert np.array_equal(clean, label[k].astype(np.float32)), (e, k)
                # an arm that grips, carries or steadies the block gets no noise: only free joints differ
                free = expert.free_joints()
                assert np.array_equal(sent[k][~free], label[k][~free]), (e, k, expert.expert.phase)
                held_still += want_noisy and not free[~np.isin(np.arange(12), grippers)].all()
                obs, *_ = env.step(target)
            assert held_still > 10 or not want_noisy, held_still  # the near arm's grasp is inside 60 steps
        clean_states = next(rollouts(env, 1, EnvExpert, seed=int(rows[SEED][rows["episode_index"] == 1][0]),
                                     max_steps=60)).frames
        noisy_states = rows[STATE][rows["episode_index"] == 1]
        m = min(len(clean_states), len(noisy_states))
        gap = max(float(np.abs(clean_states[k].state - noisy_states[k]).max()) for k in range(m))
        assert gap > 0.01, gap  # the noise moved the arms (rad)
    finally:
        env.close()


def test_a_noisy_dataset_replays_exactly_from_the_targets_sent(noisy, capsys):
    spec = importlib.util.spec_from_file_location("verify_rollouts", Path(__file__).parents[2] / "recipes" /
                                                  "verify_rollouts.py")
    verify = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verify)
    assert verify.main(["--dataset", str(noisy)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("args, says", [
    (["--noise-rad", "-0.1"], "noise_rad (--noise-rad) must be a number in 0 .. 1"),
    (["--noise-rad", "nan"], "noise_rad (--noise-rad) must be a number in 0 .. 1"),
    (["--noise-rad", "0.1", "--noisy-share", "1.5"], "noisy_share (--noisy-share) must be a number in 0 .. 1"),
])
def test_bad_noise_arguments_are_named_and_nothing_is_written(tmp_path, capsys, args, says):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import EXIT_FAILED, main
    assert main(["--rollouts", "1", "--task", "t", "--no-cameras", "--out", str(tmp_path / "ds"), *args]) \
        == EXIT_FAILED
    assert says in capsys.readouterr().err and not (tmp_path / "ds").exists()
