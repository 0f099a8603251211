"""The ROS side shared by robogym_mcp and robogym_viewer (robogym_ros.ros.sim_client) against a
real sim process: what it takes in (spec, run state, diagnostics, joint ticks joined with the
frames of their tick, the sim's reports of frames it skipped) and its service calls."""
from __future__ import annotations

import threading
import time

import rclpy
from sensor_msgs.msg import JointState
from simharness import new_namespace
from spinning import Spinning
from std_msgs.msg import Header

from robogym_ros import contract
from robogym_ros.contract import RunAnswer
from robogym_ros.ros.qos import COMMAND_QOS, STREAM_QOS
from robogym_ros.ros.sim_client import SimClient, SimUnavailable
from robogym_ros.ros.stamps import stamp_msg


def test_the_link_takes_what_the_sim_publishes_and_calls_its_services(make_sim):
    _sim, obs = make_sim()
    node = rclpy.create_node("link_under_test", namespace=f"/{obs.namespace}")
    link = SimClient(node, joints=True)
    spinning = Spinning(node)
    try:
        spec = link.wait_spec(20.0)
        assert spec.joint_names == [j["name"] for j in obs.spec["joints"]] and link.sim_present()
        assert link.buffer.cameras == ("left_wrist", "right_wrist", "overhead")
        obs.wait_for(lambda: link.buffer.newest(images=True) is not None, 20, "a tick with its frames")
        newest = link.buffer.newest(images=True)
        assert newest.joints.stamp_ns == newest.stamp_ns
        assert {f.stamp_ns for f in newest.frames.frames} == {newest.stamp_ns}
        obs.wait_for(lambda: link.diagnostics is not None, 20, "the sim's diagnostics")
        assert link.run_state is not None and link.run_state.paused is False
        ok, message = link.call("pause", 10.0)
        assert ok and RunAnswer.from_json(message).action == "pause" and RunAnswer.from_json(message).paused
        obs.wait_for(lambda: link.run_state.paused, 10, "the pause state")
        ok, message = link.call("reset", 10.0)
        answer = RunAnswer.from_json(message)
        assert ok and answer.action == "reset" and answer.paused and answer.tick > 0
        obs.wait_for(lambda: link.last_reset is not None and link.last_reset.reason == "reset", 10, "the reset state")
        # the sim's report of a frame it skipped (published here as the sim publishes it)
        skips = node.create_publisher(Header, contract.CAMERA_SKIPS_TOPIC, STREAM_QOS)
        obs.wait_for(lambda: skips.get_subscription_count() >= 1, 10, "the link's skip subscription")
        skips.publish(Header(stamp=stamp_msg(1_230_000_000), frame_id="left_wrist,right_wrist,overhead"))
        obs.wait_for(lambda: 1_230_000_000 in link.skipped_frames, 10, "the skip report")
        ok, message = link.call("resume", 10.0)
        assert ok and RunAnswer.from_json(message).action == "resume" and not RunAnswer.from_json(message).paused
    finally:
        spinning.close()


def test_inputs_wait_for_the_sims_reader_to_match_and_say_so_when_none_does(ros):
    """A RELIABLE, volatile message published before discovery has matched the sim's reader is
    lost without a word: the link waits for the match (bounded) and then sends; with no reader
    it says so, naming the topic and the wait. (A stand-in reader plays the sim's here: what is
    under test is the link's wait, which a one-shot count at send time gets wrong.)"""
    namespace = f"/{new_namespace('link')}"
    node = rclpy.create_node("link_under_test", namespace=namespace)
    reader_node = rclpy.create_node("stand_in_sim", namespace=namespace)
    link = SimClient(node, joints=False)
    spinning = Spinning(node, reader_node)
    try:
        for inputs in (contract.JOINT_COMMANDS, contract.JOINT_TRAJECTORY):
            try:
                link.wait_listener(inputs, 0.5)
            except SimUnavailable as exc:
                assert str(exc) == f"no sim in {namespace} subscribes {namespace}/{inputs} (waited 0.5 s): nothing sent"
            else:
                raise AssertionError(f"{inputs}: no reader, yet the wait passed")
        received = []
        # the reader appears while the link waits (as a sim's reader does, ms after its ticks)
        timer = threading.Timer(0.3, lambda: reader_node.create_subscription(
            JointState, contract.JOINT_COMMANDS, received.append, COMMAND_QOS))
        timer.start()
        link.wait_listener(contract.JOINT_COMMANDS, 20.0)
        link.send_targets({"left_gripper": 0.25})
        deadline = time.monotonic() + 10
        while not received and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [list(m.position) for m in received] == [[0.25]]  # sent once matched: not lost
    finally:
        spinning.close()


def test_a_client_that_watches_nothing_takes_no_run_state_diagnostics_skips_or_step_results(ros):
    """The ROS env reads its own answers: its client (watch=False) has no callback on the topics
    that carry one message per lockstep step, and says so if asked for what they carry."""
    watched = {contract.STATE_TOPIC, contract.DIAGNOSTICS, contract.CAMERA_SKIPS_TOPIC, contract.STEP_RESULT_TOPIC}
    taken = {}
    for watch in (True, False):
        node = rclpy.create_node("link_under_test", namespace=f"/{new_namespace('watch')}")
        try:
            link = SimClient(node, joints=False, cameras=False, watch=watch)
            taken[watch] = {s.topic_name.rsplit("/", 1)[-1] for s in node.subscriptions}
            if not watch:
                for call in (lambda: link.wait_state(lambda s: True, 0.1),
                             lambda: link.step_request(0, {}, 1, 0.1)):
                    try:
                        call()
                    except RuntimeError as exc:
                        assert "watch=False" in str(exc)
                    else:
                        raise AssertionError("a client that watches nothing answered from what it does not take")
        finally:
            node.destroy_node()
    short = {t.rsplit("/", 1)[-1] for t in watched}
    assert short <= taken[True], taken[True]  # the control: a watching client takes them all
    assert not short & taken[False], taken[False]
    assert "spec" in taken[False]
