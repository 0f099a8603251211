"""robot_description, objects_description and the sim's TF over real DDS
(robogym_ros.nodes.sim_node.description), tested on the class directly; the sim node's own topics are
tested at the end, once the node creates it."""
from __future__ import annotations

import time

import mujoco
import numpy as np
import pytest
from simharness import wait_for
from spinning import Spinning
from std_msgs.msg import String

from robogym_ros.description.tf_frames import camera_optical_frames
from robogym_ros.description.urdf import objects_urdf, robot_urdf
from robogym_ros.nodes.sim_node import description as desc
from robogym_ros.ros.qos import profile
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path


@pytest.fixture
def sim_side(ros, request):
    import rclpy
    ns = f"/desc_{request.node.name[:20].replace('[', '_').replace(']', '')}_{time.monotonic_ns() % 10**6}"
    node = rclpy.create_node("robogym_sim", namespace=ns)
    physics = Physics(default_model_path(), 0.002, 5, seed=1)
    publisher = desc.DescriptionPublisher(node, default_model_path(), physics.object_names)
    yield node, publisher, physics, ns
    node.destroy_node()


def test_descriptions_are_latched_for_late_subscribers(sim_side):
    import rclpy
    node, publisher, physics, ns = sim_side
    model = mujoco.MjModel.from_xml_path(default_model_path())
    got = {}
    late = rclpy.create_node("late_reader", namespace=ns)  # joins after the publish
    for topic in (desc.ROBOT_DESCRIPTION, desc.OBJECTS_DESCRIPTION):
        late.create_subscription(String, topic, lambda m, t=topic: got.__setitem__(t, m.data),
                                 profile(desc.DESCRIPTION_QOS))
    spin = Spinning(late)
    try:
        wait_for(lambda: len(got) == 2, what="both descriptions")
    finally:
        spin.close()
    assert got[desc.ROBOT_DESCRIPTION] == robot_urdf(model)
    assert got[desc.OBJECTS_DESCRIPTION] == objects_urdf(model)
    topics = publisher.spec_topics(node)
    assert topics[desc.ROBOT_DESCRIPTION].name == f"{ns}/robot_description"
    assert topics[desc.ROBOT_DESCRIPTION].qos.durability == "transient_local"


def test_without_tf2_msgs_tf_is_reported_unavailable(sim_side):
    node, publisher, physics, _ = sim_side
    if publisher.tf_available:
        pytest.skip("tf2_msgs is installed here: /tf is published (see the test below)")
    assert publisher.tf_status.startswith("unavailable: tf2_msgs is not installed")
    publisher.publish(physics.snapshot())  # harmless
    assert publisher.published == 0 and "tf" not in publisher.spec_topics(node)


@pytest.mark.toolchain
def test_tf_carries_the_frames_stamped_with_the_tick(sim_side):
    tf2_msgs = pytest.importorskip("tf2_msgs.msg", reason=desc.TF_UNAVAILABLE or "tf2_msgs missing")
    import rclpy
    node, publisher, physics, ns = sim_side
    static, dynamic = [], []
    reader = rclpy.create_node("tf_reader", namespace=ns)
    reader.create_subscription(tf2_msgs.TFMessage, desc.TF_STATIC, static.append, profile(desc.TF_STATIC_QOS))
    reader.create_subscription(tf2_msgs.TFMessage, desc.TF, dynamic.append, profile(desc.TF_QOS))
    spin = Spinning(reader)
    try:
        wait_for(lambda: static, what="/tf_static")
        wait_for(lambda: reader.count_publishers(desc.TF) > 0, what="a /tf publisher")
        time.sleep(0.5)
        physics.step_tick()
        tick = physics.snapshot()
        publisher.publish(tick)
        wait_for(lambda: dynamic, what="/tf")
    finally:
        spin.close()
    children = {t.child_frame_id: t for t in static[-1].transforms}
    assert set(children) == {f.child for f in camera_optical_frames(physics.model)}
    block = next(t for t in dynamic[-1].transforms if t.child_frame_id == "block")
    assert block.header.frame_id == "world"
    assert block.header.stamp.sec * 10**9 + block.header.stamp.nanosec == tick.stamp_ns
    np.testing.assert_array_equal([block.transform.translation.x, block.transform.translation.y,
                                   block.transform.translation.z], tick.object_poses[0, :3])


def test_the_sim_node_publishes_robot_description(make_sim):
    """End to end: waits for the sim node to create a DescriptionPublisher."""
    sim, obs = make_sim(camera_period_s=0.0)
    if "robot_description" not in obs.spec["topics"]:
        pytest.skip("the sim node does not publish robot_description yet (DescriptionPublisher not wired)")
    got = []
    obs.node.create_subscription(String, "robot_description", lambda m: got.append(m.data),
                                 profile(desc.DESCRIPTION_QOS))
    obs.wait_for(lambda: got, 10, "robot_description")
    assert got[0] == robot_urdf(mujoco.MjModel.from_xml_path(default_model_path()))
    assert obs.spec["topics"]["robot_description"]["name"] == f"/{obs.namespace}/robot_description"
    assert "tf" in obs.spec["topics"] or "unavailable" in str(obs.spec.get("tf", ""))
