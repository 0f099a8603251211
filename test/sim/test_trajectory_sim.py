"""Trajectories in the physics (robogym_ros.sim.physics and the physics process): reached on
the ground truth at their times, frozen by pause, dropped by reset, overridden by later
position commands for the joints those name."""
from __future__ import annotations

import time
from types import SimpleNamespace as NS

import numpy as np
import pytest

from robogym_ros.sim.commands import validate_trajectory
from robogym_ros.sim.loop import LoopConfig
from robogym_ros.sim.physics import Physics
from robogym_ros.sim.process import SimProcess
from robogym_ros.task.scene import default_model_path

S = 1_000_000_000
DT_NS = 10_000_000  # control dt: physics 2 ms x decimation 5
PAN, ELBOW = "left_shoulder_pan", "left_elbow_flex"  # the pan axis is vertical: no gravity load
# At 0.5 rad/s from the folded pose (pan 0): through 0.3 at 0.6 s, turning at 0.6 at 1.2 s,
# stopping at 0.2 at 2.0 s: a point passed at speed, a turnaround and a stop.
POINTS = ((0.3, 0.6), (0.6, 1.2), (0.2, 2.0))
SPEED = 0.5  # rad/s on every segment
# Half a tick of motion: a point reached a whole tick early or late is this far off at its time.
TOL_RAD = 0.5 * SPEED * DT_NS * 1e-9


def point(positions, t_s, velocities=()):
    return NS(positions=list(positions), velocities=list(velocities), accelerations=[], effort=[],
              time_from_start=NS(sec=int(t_s), nanosec=round((t_s % 1) * S)))


def trajectory(physics_joints, names=(PAN,), points=POINTS, start_ns=0):
    ranges = {j.name: (j.lower, j.upper) for j in physics_joints}
    pts = [point([q] * len(names), t) for q, t in points]
    return validate_trajectory(list(names), pts, start_ns, ranges)


def step(physics: Physics, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ground truth of ``n`` ticks: stamps and positions, as the sim publishes them."""
    stamps, q = [], []
    for _ in range(n):
        physics.step_tick()
        tick = physics.snapshot()
        stamps.append(tick.stamp_ns)
        q.append(tick.position)
    return np.array(stamps), np.array(q)


def reached_within_a_tick(stamps, q, target, t_ns) -> bool:
    """Some tick at most one control tick from ``t_ns`` has the joint within TOL_RAD of it."""
    near = np.abs(stamps - t_ns) <= DT_NS
    return bool(near.any() and (np.abs(q[near] - target) <= TOL_RAD).any())


@pytest.fixture
def physics():
    return Physics(default_model_path(), 0.002, 5, seed=0)


def test_a_trajectory_reaches_each_point_at_its_time(physics):
    step(physics, 3)
    start_ns = physics.tick_index * DT_NS  # zero stamp: now, the next tick
    physics.set_trajectory(trajectory(physics.joints))
    stamps, q = step(physics, 300)
    pan = q[:, physics.joint_names.index(PAN)]
    for target, t_s in POINTS:
        t_ns = start_ns + round(t_s * S)
        k = int(np.searchsorted(stamps, t_ns))
        print(f"point {target:+.1f} rad at {t_s} s: ground truth off by {pan[k] - target:+.5f} rad at its time")
        assert reached_within_a_tick(stamps, pan, target, t_ns)
    # Positive control: the same check with the point two ticks early or late fails (the point
    # passed at speed: a tick of motion is twice the tolerance).
    t0 = start_ns + round(POINTS[0][1] * S)
    assert not reached_within_a_tick(stamps, pan, POINTS[0][0], t0 + 2 * DT_NS)
    assert not reached_within_a_tick(stamps, pan, POINTS[0][0], t0 - 2 * DT_NS)


def test_a_two_point_trajectory_reaches_each_point_at_its_time(physics):
    start_ns = physics.tick_index * DT_NS
    physics.set_trajectory(trajectory(physics.joints, points=POINTS[1:]))
    stamps, q = step(physics, 250)
    pan = q[:, physics.joint_names.index(PAN)]
    for target, t_s in POINTS[1:]:
        assert reached_within_a_tick(stamps, pan, target, start_ns + round(t_s * S))
    # and the other joints held their targets
    others = [i for i, n in enumerate(physics.joint_names) if n.startswith("right_")]
    assert np.abs(q[:, others] - q[0, others]).max() < 1e-3


def test_cubic_trajectory_with_velocities_meets_its_points(physics):
    ranges = {j.name: (j.lower, j.upper) for j in physics.joints}
    cmd = validate_trajectory([PAN], [point([0.3], 0.6, [0.5]), point([0.6], 1.2, [0.0])], 0, ranges)
    start_ns = physics.tick_index * DT_NS
    physics.set_trajectory(cmd)
    stamps, q = step(physics, 150)
    pan = q[:, physics.joint_names.index(PAN)]
    assert reached_within_a_tick(stamps, pan, 0.3, start_ns + round(0.6 * S))
    assert reached_within_a_tick(stamps, pan, 0.6, start_ns + round(1.2 * S))


def test_a_later_command_wins_its_joints_from_its_tick_on(physics):
    physics.set_trajectory(trajectory(physics.joints, names=(PAN, ELBOW),
                                      points=((0.4, 0.8), (0.9, 2.0))))
    step(physics, 40)
    pan_a, elbow_a = (physics._actuator_of[n] for n in (PAN, ELBOW))
    before = physics.data.ctrl[elbow_a]
    physics.set_targets({PAN: 0.1})  # a joint_commands message naming the pan only
    pan_ctrl, elbow_ctrl = [], []
    for _ in range(60):
        physics.step_tick()
        pan_ctrl.append(physics.data.ctrl[pan_a])
        elbow_ctrl.append(physics.data.ctrl[elbow_a])
    assert pan_ctrl == [0.1] * 60  # from the command's tick on, the command's target
    assert np.all(np.diff([before] + elbow_ctrl) != 0)  # the elbow follows the trajectory on
    stamps, q = step(physics, 150)
    assert abs(q[-1, physics.joint_names.index(PAN)] - 0.1) < 2e-3  # the ground truth agrees
    assert abs(q[-1, physics.joint_names.index(ELBOW)] - 0.9) < 2e-3  # and reached its last point


def test_within_one_tick_the_later_message_wins(physics):
    pan_a = physics._actuator_of[PAN]
    physics.set_targets({PAN: 0.3})
    physics.set_trajectory(trajectory(physics.joints, points=((-0.2, 0.5),)))  # newer: wins,
    step(physics, 1)  # starting from the command's target: 0.3 - 0.5 / 0.5 s * 10 ms
    assert physics.data.ctrl[pan_a] == pytest.approx(0.29)
    physics.set_trajectory(trajectory(physics.joints, points=((-0.2, 0.5),)))
    physics.set_targets({PAN: 0.3})  # newer: wins
    step(physics, 5)
    assert physics.data.ctrl[pan_a] == 0.3


def test_reset_drops_the_trajectory(physics):
    physics.set_trajectory(trajectory(physics.joints))
    step(physics, 30)
    assert abs(physics.q[physics.joint_names.index(PAN)]) > 0.05  # moving
    physics.reset_tick()
    _, q = step(physics, 150)
    assert np.abs(q[:, physics.joint_names.index(PAN)]).max() < 1e-3  # held where reset put it


def test_a_stamped_start_waits_for_its_sim_time(physics):
    start_ns = physics.tick_index * DT_NS + S // 2
    physics.set_trajectory(trajectory(physics.joints, start_ns=start_ns))
    stamps, q = step(physics, 200)
    pan = q[:, physics.joint_names.index(PAN)]
    assert np.abs(pan[stamps <= start_ns]).max() < 1e-3
    assert reached_within_a_tick(stamps, pan, POINTS[0][0], start_ns + round(POINTS[0][1] * S))


def test_pause_freezes_the_trajectory_in_sim_time():
    """Through the physics process in real time: a 0.6 s pause in the middle moves nothing in
    sim time (the points are still reached at their sim times), and a step while paused
    advances it by one tick."""
    sim = SimProcess(LoopConfig(model_path=default_model_path(), real_time_factor=1.0, start_paused=True))
    try:
        names = [j.name for j in sim.describe().joints]
        pan = names.index(PAN)
        start_ns = sim.status().tick_index * DT_NS
        sim.set_trajectory(trajectory(sim.describe().joints), wait=True)
        sim.resume()
        ticks = []

        def take(until_ns):
            while not ticks or ticks[-1].stamp_ns < until_ns:
                tick = sim.recv_tick(5.0)
                assert tick is not None, "no tick from the physics process"
                ticks.append(tick)

        take(start_ns + S // 2)
        sim.pause()
        while (tick := sim.recv_tick(0.2)) is not None:  # the tick completed by the pause
            ticks.append(tick)
        paused_at = ticks[-1]
        time.sleep(0.6)  # wall time passes; sim time does not
        assert sim.recv_tick(0.1) is None
        sim.step()
        stepped = sim.recv_tick(5.0)
        assert stepped.stamp_ns == paused_at.stamp_ns + DT_NS
        assert stepped.position[pan] > paused_at.position[pan]  # the step moved along the trajectory
        ticks.append(stepped)
        sim.resume()
        take(start_ns + round(2.3 * S))
    finally:
        sim.close()
    stamps = np.array([t.stamp_ns for t in ticks])
    q = np.array([t.position[pan] for t in ticks])
    assert np.all(np.diff(stamps) == DT_NS)  # every tick, none twice
    for target, t_s in POINTS:
        assert reached_within_a_tick(stamps, q, target, start_ns + round(t_s * S)), (target, t_s)
