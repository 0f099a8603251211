"""The scripted trajectory: within the limits, smooth from the folded pose, clear of the table."""
import math

import mujoco
import numpy as np
import pytest

from robogym_ros.nodes.motion.scripted_motion import RAMP_S, targets_at
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path, folded_pose


@pytest.fixture(scope="module")
def physics():
    return Physics(default_model_path(), 0.002, 5, seed=0)


def test_targets_start_at_the_folded_pose_and_stay_in_range(physics):
    assert targets_at(0.0) == pytest.approx(folded_pose())
    ranges = {j.name: (j.lower, j.upper) for j in physics.joints}
    for t in np.arange(0.0, 60.0, 0.01):
        for name, q in targets_at(float(t)).items():
            lower, upper = ranges[name]
            assert lower <= q <= upper, (name, t, q)


def test_targets_are_smooth():
    dt = 0.001
    t = np.arange(0.0, 20.0, dt)
    q = np.array([list(targets_at(float(x)).values()) for x in t])
    velocity = np.diff(q, axis=0) / dt
    acceleration = np.diff(velocity, axis=0) / dt
    # Bounded velocity and acceleration everywhere, the ramp included: no steps, no kinks.
    assert np.abs(velocity).max() < 2.0
    assert np.abs(acceleration).max() < 5.0


def test_motion_moves_every_joint_without_touching_the_table(physics):
    m, d = physics.model, physics.data
    table = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "table")
    assert table >= 0
    objects = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in ("block", "tray")}
    q_min = np.full(12, math.inf)
    q_max = np.full(12, -math.inf)
    table_contacts = 0
    for k in range(int(60.0 / physics.control_dt_s)):
        physics.set_targets(targets_at(k * physics.control_dt_s))
        assert not physics.step_tick(), "the scripted motion blew the sim up"
        q_min, q_max = np.minimum(q_min, physics.q), np.maximum(q_max, physics.q)
        for c in d.contact[:d.ncon]:
            bodies = {int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])}
            if table in (c.geom1, c.geom2) and not bodies & objects:
                table_contacts += 1
    assert table_contacts == 0
    assert (q_max - q_min > 0.2).all(), dict(zip(physics.joint_names, q_max - q_min))
    assert RAMP_S < 60.0


def test_command_clock_commands_once_per_period_of_sim_time_and_restarts_with_the_sim():
    from robogym_ros.nodes.motion.node import CommandClock
    clock = CommandClock(10_000_000)
    ticks = [k * 2_000_000 for k in range(1, 60)]  # /clock every 2 ms of sim time
    due = [t for t in ticks if clock.due(t)]
    assert due == list(range(2_000_000, 118_000_000, 10_000_000)) and clock.start_ns == 2_000_000
    # a /clock every 30 ms (faster than real time, coarse ticks): once per message, never a burst
    clock = CommandClock(10_000_000)
    assert [clock.due(t) for t in range(0, 300_000_000, 30_000_000)] == [True] * 10
    # the sim restarted: time goes back, the trajectory starts over from the new first stamp
    clock = CommandClock(10_000_000)
    assert clock.due(500_000_000) and not clock.due(505_000_000)
    assert clock.due(10_000_000) and clock.start_ns == 10_000_000
    with pytest.raises(ValueError, match="command_period_s must be > 0"):
        CommandClock(0)
