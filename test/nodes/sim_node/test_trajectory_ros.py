"""JointTrajectory over real DDS: the subscriber class (robogym_ros.nodes.sim_node.commands.joint_trajectory)
with a real physics process; then the same through the sim node, once it creates the class."""
from __future__ import annotations

import time

import numpy as np
import pytest

msgs = pytest.importorskip("trajectory_msgs.msg", reason="trajectory_msgs is not installed (standalone extra)")

from simharness import wait_for  # noqa: E402
from spinning import Spinning  # noqa: E402

from robogym_ros.contract import RunAnswer  # noqa: E402
from robogym_ros.nodes.sim_node.commands.joint_trajectory import JOINT_TRAJECTORY, TrajectorySubscriber  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.sim.loop import LoopConfig  # noqa: E402
from robogym_ros.sim.physics import Physics  # noqa: E402
from robogym_ros.sim.process import SimProcess  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402

S = 1_000_000_000
DT_NS = 10_000_000
PAN = "left_shoulder_pan"
TOL_RAD = 0.5 * 0.5 * DT_NS * 1e-9  # half a tick of motion at 0.5 rad/s


def trajectory_msg(names, points, stamp_ns=0, velocities=None):
    msg = msgs.JointTrajectory()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, S)
    msg.joint_names = list(names)
    for k, (positions, t_s) in enumerate(points):
        p = msgs.JointTrajectoryPoint()
        p.positions = [float(v) for v in positions]
        if velocities is not None:
            p.velocities = [float(v) for v in velocities[k]]
        p.time_from_start.sec, p.time_from_start.nanosec = divmod(round(t_s * S), S)
        msg.points.append(p)
    return msg


def reached_within_a_tick(stamps, q, target, t_ns) -> bool:
    near = np.abs(np.asarray(stamps) - t_ns) <= DT_NS
    return bool(near.any() and (np.abs(np.asarray(q)[near] - target) <= TOL_RAD).any())


BAD = [
    (trajectory_msg(["left_shoulder_pan", "nope"], [([0.1, 0.1], 1)]), "unknown joint 'nope'"),
    (trajectory_msg([PAN, PAN], [([0.1, 0.1], 1)]), f"joint '{PAN}' appears more than once"),
    (trajectory_msg([PAN], [([0.1, 0.2], 1)]), "point 0: len(positions) = 2 but len(joint_names) = 1"),
    (trajectory_msg([PAN], [([float("nan")], 1)]), f"point 0: position for '{PAN}' is not finite"),
    (trajectory_msg([PAN], [([0.1], 1), ([5.0], 2)]), f"point 1: position for '{PAN}' is 5, outside its range"),
    (trajectory_msg([PAN], [([0.1], 1), ([0.2], 1)]), "point 1: time_from_start 1 s is not after point 0's 1 s"),
]


@pytest.fixture
def rig(ros, request):
    """A sim-side node holding a TrajectorySubscriber over a paused physics process, and a
    client node that publishes, both spun in this process."""
    import rclpy
    ns = f"/traj_{time.monotonic_ns() % 10**9}"
    sim = SimProcess(LoopConfig(model_path=default_model_path(), real_time_factor=0.0, start_paused=True))
    description = sim.describe()
    ranges = {j.name: (j.lower, j.upper) for j in description.joints}
    node = rclpy.create_node("robogym_sim", namespace=ns)
    latest = {"stamp_ns": 0}
    subscriber = TrajectorySubscriber(node, sim, ranges, now_ns=lambda: latest["stamp_ns"])
    client = rclpy.create_node("trajectory_client", namespace=ns)
    pub = client.create_publisher(msgs.JointTrajectory, JOINT_TRAJECTORY, qos.COMMAND_QOS)
    spinning = Spinning(node, client)
    deadline = time.monotonic() + 10
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    yield sim, subscriber, pub, [j.name for j in description.joints]
    spinning.close()
    sim.close()


def step_positions(sim: SimProcess, n: int) -> tuple[list[int], np.ndarray]:
    stamps, q = [], []
    for _ in range(n):
        sim.step()
        tick = sim.recv_tick(5.0)
        stamps.append(tick.stamp_ns)
        q.append(tick.position)
    return stamps, np.array(q)


def test_each_bad_trajectory_is_rejected_with_its_reason_and_changes_nothing(rig):
    sim, subscriber, pub, names = rig
    for k, (msg, reason) in enumerate(BAD, start=1):
        pub.publish(msg)
        wait_for(lambda: subscriber.counts.rejected == k, what=f"rejection of {reason!r}")
        assert reason in subscriber.counts.last_rejection, (reason, subscriber.counts.last_rejection)
    assert subscriber.counts.accepted == 0
    # Nothing changed: the physics process steps exactly like an untouched one (same seed).
    _, q = step_positions(sim, 60)
    reference = Physics(default_model_path(), 0.002, 5, seed=0)
    expected = []
    for _ in range(60):
        reference.step_tick()
        expected.append(reference.snapshot().position)
    np.testing.assert_array_equal(q, np.array(expected))
    # Positive control: a good trajectory does change the motion.
    pub.publish(trajectory_msg([PAN], [([0.3], 0.3)]))
    wait_for(lambda: subscriber.counts.accepted == 1, what="the good trajectory")
    _, q = step_positions(sim, 40)
    assert q[-1, names.index(PAN)] == pytest.approx(0.3, abs=TOL_RAD)


def test_a_two_point_trajectory_over_ros_reaches_each_point_at_its_time(rig):
    sim, subscriber, pub, names = rig
    start_ns = sim.status().tick_index * DT_NS  # stamp 0 = the next tick
    pub.publish(trajectory_msg([PAN], [([0.3], 0.6), ([-0.1], 1.4)]))
    wait_for(lambda: subscriber.counts.accepted == 1, what="the trajectory")
    sim.set_targets({}, wait=True)  # a round trip: the trajectory is queued in the physics process
    stamps, q = step_positions(sim, 200)
    for target, t_s in ((0.3, 0.6), (-0.1, 1.4)):
        assert reached_within_a_tick(stamps, q[:, names.index(PAN)], target, start_ns + round(t_s * S))


# --- through the sim node (robogym_sim), once it creates TrajectorySubscriber ---------------------
def _wired(obs):
    if "joint_trajectory" not in obs.spec["topics"]:
        pytest.skip("the sim node does not subscribe joint_trajectory yet (TrajectorySubscriber not wired)")


def test_sim_node_follows_a_trajectory_and_a_later_command_wins(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, start_paused=True)
    _wired(obs)
    pub = obs.node.create_publisher(msgs.JointTrajectory, JOINT_TRAJECTORY, qos.COMMAND_QOS)
    obs.wait_for(lambda: pub.get_subscription_count() > 0, 10, "the sim's joint_trajectory subscription")
    pub.publish(trajectory_msg([PAN, "left_elbow_flex"], [([0.3, 0.8], 0.6), ([-0.1, 0.6], 1.4)]))
    obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == "1", 10, "the trajectory accepted")
    start = obs.call("step")  # paused: every tick on request, so timing is exact
    start_ns = RunAnswer.from_json(start.message).tick * DT_NS - DT_NS
    for _ in range(99):
        obs.call("step")
    obs.send([PAN], [0.05])  # a joint_commands message: wins the pan from its tick on
    obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == "2", 10, "the command accepted")
    for _ in range(150):
        obs.call("step")
    truth = obs.snapshot(obs.truth)
    stamps = [m.header.stamp.sec * S + m.header.stamp.nanosec for m in truth]
    pan = np.array([m.position[list(m.name).index(PAN)] for m in truth])
    elbow = np.array([m.position[list(m.name).index("left_elbow_flex")] for m in truth])
    assert reached_within_a_tick(stamps, pan, 0.3, start_ns + round(0.6 * S))
    assert reached_within_a_tick(stamps, elbow, 0.6, start_ns + round(1.4 * S))  # not named: follows on
    assert abs(pan[-1] - 0.05) < 2e-3  # the command, not the trajectory's -0.1


def test_sim_node_rejects_a_bad_trajectory_with_its_reason(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, start_paused=True)
    _wired(obs)
    pub = obs.node.create_publisher(msgs.JointTrajectory, JOINT_TRAJECTORY, qos.COMMAND_QOS)
    obs.wait_for(lambda: pub.get_subscription_count() > 0, 10, "the sim's joint_trajectory subscription")
    msg, reason = BAD[4]
    pub.publish(msg)
    obs.wait_for(lambda: reason in obs.diag_values().get("last_rejection", ""), 10, "the rejection in diagnostics")
    assert "rejected: " in sim.output() or "trajectory rejected" in sim.output()
