"""Observation aliasing on the env path: what a buffer keeps by reference must stay what it was.

A buffer that appends the env's observations without copying holds, in each slot, exactly
the object the env returned. If the env reuses its arrays, every slot turns into the newest
value, and only the *oldest* slot shows it: its error is the motion over the whole buffer,
the newest slot's is zero. So each test compares the oldest slot with a copy taken when
that step was seen. A deliberately broken env (it reuses its buffers) is the positive
control: Gymnasium's check_env, this oldest-slot test and our checks.audit_observations must
each catch it.
"""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import FrameStackObservation

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros import checks
from robogym_ros.envs import HandoverEnv


class ReusedBuffersEnv(HandoverEnv):
    """Broken on purpose: fills the same arrays (and the same info) in place on every call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._obs_buffers = None
        self._info_buffer = {}

    def _observation(self, tick):
        fresh = super()._observation(tick)
        if self._obs_buffers is None:
            self._obs_buffers = fresh
        else:
            for key, value in fresh.items():
                self._obs_buffers[key][...] = value
        return self._obs_buffers

    def _info(self, tick, obs, **kwargs):
        self._info_buffer.update(super()._info(tick, obs, **kwargs))
        return self._info_buffer


def sweep(env, n_steps: int):
    """N steps of a steady sweep; (stored by reference, copies taken when seen, stamps)."""
    obs, info = env.reset(seed=9)
    stored, seen, stamps = [], [], []
    for i in range(n_steps):
        # Each step a new target for every joint, so consecutive observations always differ.
        action = np.full(12, -0.8 + 1.6 * (i % 7) / 6, dtype=np.float32)
        obs, _, _, _, info = env.step(action)
        stored.append(obs)  # a plain list, no copy: what a naive replay buffer does
        seen.append(obs["observation"].copy())
        stamps.append(info["stamp_ns"])
    return stored, seen, stamps


def oldest_slot_error(env, n_steps: int) -> float:
    stored, seen, _ = sweep(env, n_steps)
    return float(np.max(np.abs(stored[0]["observation"] - seen[0])))


@pytest.mark.parametrize("n_slots", [2, 4, 50])
def test_oldest_slot_keeps_the_value_seen_at_its_step(n_slots):
    env = HandoverEnv()
    try:
        stored, seen, _ = sweep(env, n_slots)
        assert not np.array_equal(seen[0], seen[-1])  # the motion the test relies on
        for slot, truth in zip(stored, seen):
            np.testing.assert_array_equal(slot["observation"], truth)
    finally:
        env.close()


@pytest.mark.parametrize("n_slots", [2, 4, 50])
def test_broken_env_fails_the_oldest_slot_test(n_slots):
    env = ReusedBuffersEnv()
    try:
        assert oldest_slot_error(env, n_slots) > 1e-3
    finally:
        env.close()


def test_frame_stack_gives_four_distinct_frames():
    env = FrameStackObservation(HandoverEnv(), 4)
    try:
        env.reset(seed=9)
        for i in range(4):
            obs, *_ = env.step(np.full(12, -0.6 + 0.4 * i, dtype=np.float32))
        frames = obs["observation"]
        assert frames.shape == (4, 40)
        assert len({frame.tobytes() for frame in frames}) == 4
    finally:
        env.close()


def test_frame_stack_of_the_broken_env_repeats_one_frame():
    """Positive control: FrameStackObservation keeps references, so reused buffers collapse."""
    env = FrameStackObservation(ReusedBuffersEnv(), 4)
    try:
        env.reset(seed=9)
        for i in range(4):
            obs, *_ = env.step(np.full(12, -0.6 + 0.4 * i, dtype=np.float32))
        assert len({frame.tobytes() for frame in obs["observation"]}) == 1
    finally:
        env.close()


def test_check_env_catches_the_broken_env():
    env = ReusedBuffersEnv()
    try:
        with pytest.raises(AssertionError, match="share an object"):
            check_env(env)
    finally:
        env.close()


def audit(env, n_steps: int = 6):
    stored, seen, stamps = sweep(env, n_steps)
    return checks.audit_observations(stamps, [o["observation"] for o in stored], stamps, np.array(seen),
                                     control_dt_ns=env.control_dt_ns * env.action_repeat)


def test_audit_observations_passes_the_env():
    env = HandoverEnv()
    try:
        results = audit(env)
        assert all(r.ok for r in results), [(r.name, r.summary) for r in results if not r.ok]
    finally:
        env.close()


def test_audit_observations_flags_the_broken_env():
    env = ReusedBuffersEnv()
    try:
        results = {r.name: r for r in audit(env)}
        assert not results["buffer_audit"].ok, results["buffer_audit"].summary
        failed = [name for name, r in results.items() if not r.ok]
        assert {"buffer_audit", "slot_error"} <= set(failed), failed
    finally:
        env.close()
