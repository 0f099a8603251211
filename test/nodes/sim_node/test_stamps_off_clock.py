"""Stamps far from sim time (a wall-clock stamp on the sim-time interfaces): a trajectory is
refused, a joint command applies with a warning; both times are in the message. Real sim
process over real DDS."""
from __future__ import annotations

import time

import pytest

msgs = pytest.importorskip("trajectory_msgs.msg", reason="trajectory_msgs is not installed (standalone extra)")

from sensor_msgs.msg import JointState  # noqa: E402

from robogym_ros.nodes.sim_node.commands.clock_check import MAX_OFF_S, off_clock  # noqa: E402
from robogym_ros.nodes.sim_node.commands.joint_trajectory import JOINT_TRAJECTORY  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.ros.stamps import stamp_msg  # noqa: E402

S = 1_000_000_000
PAN = "left_shoulder_pan"


def test_off_clock_names_both_times_and_a_wall_clock_stamp():
    wall = time.time_ns()
    text = off_clock(wall, 2 * S, wall_ns=wall)
    assert text.startswith(f"header.stamp {wall / S:.3f} s is ") and "years) ahead of the sim's time 2.000 s" in text
    assert "it is the wall clock" in text and "0 for now" in text
    assert off_clock(0, 10**6 * S) is None  # 0 = now
    assert off_clock(2 * S + int(MAX_OFF_S * S), 2 * S) is None  # the bound itself is allowed
    text = off_clock(5 * S, 8000 * S, wall_ns=wall)
    assert text.startswith("header.stamp 5.000 s is 7995.000 s behind the sim's time 8000.000 s")
    assert "wall clock" not in text


def trajectory(stamp_ns: int, target: float) -> msgs.JointTrajectory:
    msg = msgs.JointTrajectory()
    msg.header.stamp = stamp_msg(stamp_ns)
    msg.joint_names = [PAN]
    point = msgs.JointTrajectoryPoint(positions=[target])
    point.time_from_start.sec = 1
    msg.points.append(point)
    return msg


def test_a_wall_clock_stamped_trajectory_is_refused_and_a_command_warned(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, start_paused=True, diagnostics_period_s=0.1)
    pub = obs.node.create_publisher(msgs.JointTrajectory, JOINT_TRAJECTORY, qos.COMMAND_QOS)
    obs.wait_for(lambda: pub.get_subscription_count() > 0 and obs.commands.get_subscription_count() > 0,
                 10, "the sim's command subscriptions")
    # `ros2 topic pub ... "{header: auto, ...}"`: the wall clock, ~56 years ahead of sim time 0.
    pub.publish(trajectory(time.time_ns(), 0.3))
    obs.wait_for(lambda: obs.diag_values().get("commands_rejected") == "1", 10, "the rejection")
    reason = obs.diag_values()["last_rejection"]
    assert reason.startswith("joint_trajectory: header.stamp ") and "ahead of the sim's time 0.000 s" in reason
    assert "it is the wall clock" in reason and "it would never run" in reason, reason
    # Positive control: stamped on sim time, a little ahead, it is accepted.
    pub.publish(trajectory(S // 2, 0.3))
    obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == "1", 10, "the sim-time trajectory")
    # A joint command's stamp schedules nothing: applied, counted as stamped off the clock, warned.
    command = JointState(name=[PAN], position=[0.2])
    command.header.stamp = stamp_msg(time.time_ns())
    obs.commands.publish(command)
    obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == "2", 10, "the command")
    values = obs.diag_values()
    assert values["commands_stamped_off_clock"] == "1", values
    assert values["last_stamp_warning"].startswith("joint_commands: header.stamp ")
    assert "ahead of the sim's time 0.000 s" in values["last_stamp_warning"]
    obs.commands.publish(JointState(name=[PAN], position=[0.1]))  # unstamped: nothing to say
    obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == "3", 10, "the unstamped command")
    assert obs.diag_values()["commands_stamped_off_clock"] == "1"
    log = sim.output()
    assert "trajectory rejected: header.stamp" in log and "joint command applied, but header.stamp" in log, log
