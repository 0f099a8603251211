"""A control tick taken whole (robogym_ros.sim.physics.Physics.step_tick: the paused step, the
as-fast-as-possible pace, lockstep and the local env) is the tick the real-time loop takes one
physics step at a time, bit for bit, and a blown-up state is caught either way."""
from __future__ import annotations

import numpy as np
import pytest

from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path


def _by_physics_steps(p: Physics) -> bool:
    """A control tick as the real-time loop takes it (sim/loop.py)."""
    p.begin_tick()
    for _ in range(p.decimation):
        p.step_physics()
    return p.end_tick()


@pytest.mark.parametrize("decimation", [1, 5, 20])
def test_a_whole_tick_equals_its_physics_steps_taken_one_by_one(decimation):
    whole, stepped = (Physics(default_model_path(), 0.002, decimation, seed=7) for _ in range(2))
    rng = np.random.default_rng(decimation)
    lower, upper = (np.array(v) for v in zip(*((j.lower, j.upper) for j in whole.joints)))
    for tick in range(120):
        if tick % 10 == 0:  # new targets now and then, half the joints at a time
            names = [j.name for k, j in enumerate(whole.joints) if (k + tick // 10) % 2]
            chosen = dict(zip(names, rng.uniform(lower, upper)[[whole.joint_names.index(n) for n in names]]))
            whole.set_targets(chosen)
            stepped.set_targets(dict(chosen))
        assert whole.step_tick() is _by_physics_steps(stepped) is False
        a, b = whole.snapshot(), stepped.snapshot()
        np.testing.assert_array_equal(a.state, b.state)
        assert a.stamp_ns == b.stamp_ns
    first = Physics(default_model_path(), 0.002, decimation, seed=7).snapshot()
    assert np.abs(whole.snapshot().position - first.position).max() > 0.05, "the arms never moved: nothing compared"


@pytest.mark.parametrize("take_tick", [Physics.step_tick, _by_physics_steps], ids=["whole", "step_by_step"])
def test_a_blown_up_state_resets_the_scene_and_says_so_once(take_tick):
    p = Physics(default_model_path(), 0.002, 5, seed=3)
    episode = p.episode
    p.data.qvel[:] = 1e12  # far past what the solver can integrate: MuJoCo flags the state
    assert take_tick(p) is True
    assert p.episode == episode + 1, "a blow-up resets the scene"
    assert np.isfinite(p.data.qpos).all() and np.abs(p.data.qvel).max() < 1e3
    assert take_tick(p) is False, "the reset scene steps on: one blow-up is reported once"
