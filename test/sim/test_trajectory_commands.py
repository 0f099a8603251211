"""JointTrajectory validation (robogym_ros.sim.commands.validate_trajectory): each fault is
rejected whole with its reason; a good trajectory comes out as arrays. Real trajectory_msgs
messages where the package is installed (it is in the ``standalone`` extra)."""
from __future__ import annotations

import numpy as np
import pytest

from robogym_ros.sim.commands import MAX_REASON_CHARS, CommandRejected, validate_trajectory

msgs = pytest.importorskip("trajectory_msgs.msg", reason="trajectory_msgs is not installed")

RANGES = {"a": (-1.0, 1.0), "b": (0.0, 2.0)}
S = 1_000_000_000


def point(positions, t_s, velocities=(), accelerations=(), effort=()):
    p = msgs.JointTrajectoryPoint()
    p.positions = [float(v) for v in positions]
    p.velocities = [float(v) for v in velocities]
    p.accelerations = [float(v) for v in accelerations]
    p.effort = [float(v) for v in effort]
    p.time_from_start.sec, p.time_from_start.nanosec = divmod(round(t_s * S), S)
    return p


def validate(names, points, start_ns=0, now_ns=None):
    return validate_trajectory(names, points, start_ns, RANGES, now_ns=now_ns)


def test_a_good_trajectory():
    cmd = validate(["b", "a"], [point([0.5, 0.1], 0.5), point([1.5, -0.2], 1.25, velocities=[0.1, 0.0])],
                   start_ns=3 * S)
    assert cmd.joint_names == ("b", "a") and cmd.start_ns == 3 * S
    assert cmd.times_ns.tolist() == [S // 2, 5 * S // 4]
    assert cmd.positions.tolist() == [[0.5, 0.1], [1.5, -0.2]]
    assert np.isnan(cmd.velocities[0]).all() and cmd.velocities[1].tolist() == [0.1, 0.0]
    assert not cmd.has_velocity(0) and cmd.has_velocity(1)
    assert cmd.lower.tolist() == [0.0, -1.0] and cmd.upper.tolist() == [2.0, 1.0]
    assert validate(["a"], [point([0.0], 0.0)]).times_ns.tolist() == [0]  # a first point at 0 is fine


BAD = {
    "no names": ([], [point([], 1)], "the trajectory names no joints"),
    "unknown joint": (["a", "zz"], [point([0, 0], 1)], "unknown joint 'zz'; known joints: a, b"),
    "duplicate joint": (["a", "a"], [point([0, 0], 1)], "joint 'a' appears more than once"),
    "no points": (["a"], [], "the trajectory has no points"),
    "positions length": (["a", "b"], [point([0, 0], 1), point([0], 2)],
                         r"point 1: len\(positions\) = 1 but len\(joint_names\) = 2: it must be 2"),
    "velocities length": (["a", "b"], [point([0, 0], 1, velocities=[1])],
                          r"point 0: len\(velocities\) = 1 but len\(joint_names\) = 2: it must be 0 or 2"),
    "nan position": (["a"], [point([0], 1), point([float("nan")], 2)],
                     r"point 1: position for 'a' is not finite \(nan\)"),
    "inf velocity": (["a"], [point([0], 1, velocities=[float("inf")])],
                     r"point 0: velocity for 'a' is not finite \(inf\)"),
    "out of range": (["a", "b"], [point([0, 2.5], 1)], r"point 0: position for 'b' is 2.5, outside its range \[0, 2\]"),
    "time not increasing": (["a"], [point([0], 1), point([0.5], 1)],
                            "point 1: time_from_start 1 s is not after point 0's 1 s: times must strictly increase"),
    "time going back": (["a"], [point([0], 1), point([0.5], 2), point([0.2], 1.5)],
                        "point 2: time_from_start 1.5 s is not after point 1's 2 s"),
    "negative time": (["a"], [point([0], -0.5)], "point 0: time_from_start -0.5 s is negative"),
    "accelerations": (["a"], [point([0], 1, accelerations=[0.0])],
                      r"point 0: accelerations and effort are not supported: send positions \(and velocities\)"),
    "effort": (["a"], [point([0], 1, effort=[0.0])], "accelerations and effort are not supported"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_fault_is_rejected_with_its_reason(case):
    names, points, reason = BAD[case]
    with pytest.raises(CommandRejected, match=reason):
        validate(names, points)


def test_a_stamp_that_ends_in_the_past_is_rejected_zero_is_now():
    with pytest.raises(CommandRejected,
                       match=r"ends at 2\.5 s, before the sim's time 3 s: header.stamp is in the past"):
        validate(["a"], [point([0], 0.5)], start_ns=2 * S, now_ns=3 * S)
    validate(["a"], [point([0], 0.5)], start_ns=0, now_ns=3 * S)  # 0 = now
    validate(["a"], [point([0], 0.5), point([0.2], 2)], start_ns=2 * S, now_ns=3 * S)  # still running: joins
    with pytest.raises(CommandRejected, match="header.stamp is negative"):
        validate(["a"], [point([0], 0.5)], start_ns=-S)


def test_reasons_stay_bounded_whatever_comes_in():
    huge = "x" * 5_000_000
    with pytest.raises(CommandRejected) as err:
        validate([huge], [point([0], 1)])
    assert len(str(err.value)) <= MAX_REASON_CHARS and "(5000000 characters)" in str(err.value)
    many = [point([0.0], 1 + k) for k in range(20_000)] + [point([9.0], 30_000)]
    with pytest.raises(CommandRejected, match="point 20000: position for 'a' is 9"):
        validate(["a"], many)
