"""The objects' orientations as numbers their symmetries leave be (robogym_ros.envs.block_symmetry),
and the environment-state layouts built on them (robogym_ros.envs.environment_state): a block
turned into a pose that looks the same reads the same, one that looks different does not, and
the LeRobot view gives what the export writes."""
from __future__ import annotations

import math

import numpy as np
import pytest

from robogym_ros.envs.block_symmetry import SYMMETRIC_POSE, symmetric_pose
from robogym_ros.envs.environment_state import EnvironmentState, environment_state_names
from robogym_ros.envs.lerobot_view import feature_shapes, make_lerobot_env


def _quat(axis, angle_rad: float) -> np.ndarray:
    a = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.r_[math.cos(angle_rad / 2), math.sin(angle_rad / 2) * a]


def _mul(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


# the cuboid's turns onto itself (square cross-section across x y, long along z), in its own frame
SYMMETRIES = [_quat([0, 0, 1], math.pi / 2), _quat([0, 0, 1], math.pi), _quat([1, 0, 0], math.pi),
              _quat([0, 1, 0], math.pi), _quat([1, 1, 0], math.pi)]


def test_every_turn_of_the_block_onto_itself_reads_the_same_and_so_does_minus_q():
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        pose = np.r_[rng.normal(size=3), q]
        ref = symmetric_pose(pose)
        assert np.array_equal(ref[:3], pose[:3])
        for s in SYMMETRIES:
            assert symmetric_pose(np.r_[pose[:3], _mul(q, s)]) == pytest.approx(ref, abs=1e-12)
        assert symmetric_pose(np.r_[pose[:3], -q]) == pytest.approx(ref, abs=1e-12)


def test_poses_that_look_different_read_differently_and_nearby_poses_nearby():
    upright = [symmetric_pose(np.r_[0, 0, 0, _quat([0, 0, 1], math.radians(d))]) for d in range(0, 90, 5)]
    for a in range(len(upright)):  # every yaw within a quarter turn is told apart
        for b in range(a + 1, len(upright)):
            assert np.abs(upright[a] - upright[b]).max() > 0.01
    names = dict(zip(SYMMETRIC_POSE, upright[2]))  # 10 degrees standing: cos 40, sin 40
    assert names["up2"] == pytest.approx(1.0) and names["side_c4"] == pytest.approx(math.cos(math.radians(40)))
    assert names["side_s4"] == pytest.approx(math.sin(math.radians(40)))
    lying = symmetric_pose(np.r_[0, 0, 0, _quat([1, 0, 0], math.pi / 2)])  # long axis along -y
    assert lying[3] == pytest.approx(0.0, abs=1e-12) and lying[4] == pytest.approx(-1.0)
    assert np.abs(lying - upright[0]).max() > 0.5
    # continuous: a small turn about any axis moves every number a little
    rng = np.random.default_rng(4)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        step = _quat(rng.normal(size=3), 1e-4)
        moved = symmetric_pose(np.r_[0, 0, 0, _mul(q, step)]) - symmetric_pose(np.r_[0, 0, 0, q])
        assert np.abs(moved).max() < 1e-3


def test_a_pose_that_is_not_seven_finite_numbers_is_refused():
    with pytest.raises(ValueError, match="7 finite numbers"):
        symmetric_pose(np.zeros(6))
    with pytest.raises(ValueError, match="7 finite numbers"):
        symmetric_pose([0, 0, 0, 1, 0, 0, float("nan")])
    with pytest.raises(ValueError, match="2 poses"):
        EnvironmentState("objects_symmetric", [])(np.zeros(7), np.zeros(12))
    with pytest.raises(ValueError, match="environment_state must be one of"):
        environment_state_names("objects_sym")


def test_the_view_gives_each_objects_symmetric_pose_in_the_named_order():
    """environment_state="objects_symmetric": block then tray, each position and orientation numbers,
    computed from the same env's poses as the plain view gives them."""
    view = make_lerobot_env("environment_state_agent_pos", environment_state="objects_symmetric")
    plain = make_lerobot_env("environment_state_agent_pos")
    try:
        names = environment_state_names("objects_symmetric")
        assert names[:8] == [f"block.{c}" for c in SYMMETRIC_POSE]
        assert names[8:] == [f"tray.{c}" for c in SYMMETRIC_POSE]
        assert view.observation_space["environment_state"].shape == (16,)
        assert feature_shapes(environment_state="objects_symmetric")["environment_state"] == (16,)
        obs, _ = view.reset(seed=21)
        ref, _ = plain.reset(seed=21)
        rng = np.random.default_rng(1)
        for _ in range(5):
            poses = ref["environment_state"]
            assert np.array_equal(obs["environment_state"], np.r_[symmetric_pose(poses[:7]), symmetric_pose(poses[7:])])
            assert view.observation_space.contains(obs)
            action = ref["agent_pos"] + rng.normal(0.0, 0.05, 12)
            obs, *_ = view.step(action)
            ref, *_ = plain.step(action)
    finally:
        view.close()
        plain.close()
