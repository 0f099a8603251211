"""The trajectory follower alone (pure): where it puts the targets at any sim time."""
from __future__ import annotations

import numpy as np
import pytest

from robogym_ros.sim.trajectory_follower import TrajectoryCommand, TrajectoryFollower

S = 1_000_000_000
NAN = np.nan


def command(times_s, positions, velocities=None, start_ns=0, lower=-3.0, upper=3.0):
    positions = np.asarray(positions, float).reshape(len(times_s), -1)
    n = positions.shape[1]
    vel = np.full_like(positions, NAN) if velocities is None else np.asarray(velocities, float).reshape(positions.shape)
    times_ns = np.round(np.asarray(times_s) * S).astype(np.int64)
    return TrajectoryCommand(tuple(f"j{i}" for i in range(n)), start_ns, times_ns, positions, vel,
                             np.full(n, lower), np.full(n, upper))


def test_linear_between_points_from_the_held_targets():
    f = TrajectoryFollower(command([1.0, 3.0], [[1.0], [-1.0]]), taken_ns=5 * S, held=np.array([0.0]))
    assert f.sample(5 * S) == 0.0  # the start: where it was held
    assert f.sample(int(5.5 * S)) == pytest.approx(0.5)  # halfway into the first point
    assert f.sample(6 * S) == 1.0  # point 0 at start + 1 s
    assert f.sample(7 * S) == pytest.approx(0.0)  # halfway between the points
    assert f.sample(8 * S) == -1.0 and f.sample(20 * S) == -1.0  # the last point holds
    assert not f.finished(8 * S - 1) and f.finished(8 * S)


def test_a_stamped_start_holds_until_then():
    f = TrajectoryFollower(command([1.0], [[2.0]], start_ns=10 * S), taken_ns=5 * S, held=np.array([0.5]))
    assert f.sample(9 * S) == 0.5 and f.sample(10 * S) == 0.5
    assert f.sample(int(10.5 * S)) == pytest.approx(1.25)
    assert f.sample(11 * S) == 2.0


def test_a_start_in_the_past_joins_the_trajectory_where_it_now_is():
    f = TrajectoryFollower(command([0.0, 4.0], [[0.0], [4.0]], start_ns=1 * S), taken_ns=3 * S,
                           held=np.array([-2.0]))
    assert f.sample(3 * S) == pytest.approx(2.0)  # not the held -2: the trajectory's own value now
    assert f.sample(4 * S) == pytest.approx(3.0)


def test_cubic_hermite_where_velocities_are_given():
    f = TrajectoryFollower(command([0.0, 2.0], [[0.0], [1.0]], velocities=[[0.5], [-0.25]]), taken_ns=0,
                           held=np.array([0.0]))
    h = 1e-6
    for t_s, q, v in ((0.0, 0.0, 0.5), (2.0 - 2 * h, 1.0, -0.25)):
        t = round(t_s * S)
        assert f.sample(t)[0] == pytest.approx(q, abs=1e-5)
        assert (f.sample(t + round(h * S))[0] - f.sample(t)[0]) / h == pytest.approx(v, abs=1e-4)
    linear = TrajectoryFollower(command([0.0, 2.0], [[0.0], [1.0]]), taken_ns=0, held=np.array([0.0]))
    assert f.sample(S)[0] != pytest.approx(linear.sample(S)[0])  # the velocities do shape it
    # a segment with velocities at one end only is linear
    mixed = TrajectoryFollower(command([0.0, 2.0], [[0.0], [1.0]], velocities=[[0.5], [NAN]]), taken_ns=0,
                               held=np.array([0.0]))
    assert mixed.sample(S)[0] == pytest.approx(0.5)


def test_the_segment_into_the_first_point_starts_at_rest_when_velocities_are_given():
    f = TrajectoryFollower(command([1.0], [[1.0]], velocities=[[0.0]]), taken_ns=0, held=np.array([0.0]))
    h = 1e-6
    assert f.sample(round(h * S))[0] / h == pytest.approx(0.0, abs=1e-4)  # smooth start
    assert f.sample(S // 2)[0] == pytest.approx(0.5)


def test_targets_are_clipped_to_the_range():
    f = TrajectoryFollower(command([0.0, 1.0], [[0.9], [1.0]], velocities=[[5.0], [5.0]], upper=1.0),
                           taken_ns=0, held=np.array([0.9]))
    samples = np.array([f.sample(round(t * S))[0] for t in np.linspace(0, 1, 101)])
    assert samples.max() == 1.0  # the cubic overshoots 1.0; the target does not


def test_release_drops_joints():
    f = TrajectoryFollower(command([1.0], [[1.0, 2.0]]), taken_ns=0, held=np.zeros(2))
    f.release(["j0"])
    assert f.active.tolist() == [False, True] and not f.done_driving
    f.release(["j1", "unknown"])
    assert f.done_driving
