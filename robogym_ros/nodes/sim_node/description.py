"""What RViz and robot_state_publisher need from the sim: the robot's description and the
transforms only the sim knows.

- ``robot_description`` (std_msgs/String, transient local, depth 1: robot_state_publisher's
  convention): the URDF of the loaded MJCF (robogym_ros.description.urdf); robot_state_publisher,
  fed the same URDF and joint_states, publishes the arm links' TF;
- ``objects_description``: the free bodies (block, tray) for a second RViz RobotModel;
- ``/tf_static``: each camera's ``<camera>_optical_frame`` on its link (REP 103), once;
- ``/tf``: ``world`` -> each free body, every tick, stamped with the tick.

tf2_msgs ships with every ROS install but has no wheel on PyPI: without it there is no /tf
or /tf_static; that is logged once at start-up and :attr:`DescriptionPublisher.tf_status`
says so for the spec. The descriptions need only std_msgs.
"""
from __future__ import annotations

from typing import Sequence

import mujoco
from std_msgs.msg import String

from robogym_ros.contract import QosSpec, TopicSpec
from robogym_ros.description.tf_frames import SceneFrames, Transform
from robogym_ros.description.urdf import objects_urdf, robot_urdf
from robogym_ros.ros.qos import profile
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.sim.tick import Tick

ROBOT_DESCRIPTION = "robot_description"
OBJECTS_DESCRIPTION = "objects_description"
TF, TF_STATIC = "/tf", "/tf_static"  # absolute: tf2's convention, whatever the namespace
DESCRIPTION_QOS = QosSpec(depth=1, durability="transient_local")
TF_QOS = QosSpec(depth=100)  # tf2_ros' TransformBroadcaster
TF_STATIC_QOS = QosSpec(depth=1, durability="transient_local")  # tf2_ros' StaticTransformBroadcaster
STRING_TYPE = "std_msgs/msg/String"
TF_TYPE = "tf2_msgs/msg/TFMessage"

try:
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
    TF_UNAVAILABLE = ""
except ImportError as exc:  # no wheel on PyPI: a pip-only install has none
    TFMessage = TransformStamped = None
    TF_UNAVAILABLE = (f"tf2_msgs is not installed ({exc}): no /tf or /tf_static; install ROS 2's "
                      "tf2_msgs (every ROS install has it) for TF")


class DescriptionPublisher:
    """Publishes the descriptions once (latched) and the sim's transforms; ``publish(tick)`` is
    cheap enough for the pump thread to call every tick."""

    def __init__(self, node, model_path: str, object_names: Sequence[str],
                 cameras: Sequence[str] | None = None):
        """``cameras``: those whose optical frames to publish (None: every fixed camera)."""
        model = mujoco.MjModel.from_xml_path(model_path)
        self.robot_description = robot_urdf(model)
        self.objects_description = objects_urdf(model)
        self.frames = SceneFrames(model, object_names, cameras)
        qos = profile(DESCRIPTION_QOS)
        self._descriptions = {ROBOT_DESCRIPTION: self.robot_description,
                              OBJECTS_DESCRIPTION: self.objects_description}
        self._pubs = {}
        for topic, text in self._descriptions.items():
            if text is not None:
                self._pubs[topic] = node.create_publisher(String, topic, qos)
                self._pubs[topic].publish(String(data=text))
        self.tf_status = "published" if not TF_UNAVAILABLE else f"unavailable: {TF_UNAVAILABLE}"
        self.published = 0
        self.pub_tf = self.pub_tf_static = None
        if TF_UNAVAILABLE:
            node.get_logger().warning(TF_UNAVAILABLE)
            return
        self.pub_tf = node.create_publisher(TFMessage, TF, profile(TF_QOS))
        self.pub_tf_static = node.create_publisher(TFMessage, TF_STATIC, profile(TF_STATIC_QOS))
        # One message with every fixed transform: a late subscriber gets the latest only.
        self.pub_tf_static.publish(tf_message(self.frames.static, 0))

    @property
    def tf_available(self) -> bool:
        return not TF_UNAVAILABLE

    def publish(self, tick: Tick) -> None:
        """``world`` -> each free body at this tick, on /tf (nothing without tf2_msgs)."""
        if self.pub_tf is None or not self.frames.object_names:
            return
        self.pub_tf.publish(tf_message(self.frames.at(tick.object_poses), tick.stamp_ns))
        self.published += 1

    def spec_topics(self, node) -> dict[str, TopicSpec]:
        """The spec's entries for what this publishes (resolved names; none for /tf without tf2_msgs)."""
        topics = {key: TopicSpec(node.resolve_topic_name(key), STRING_TYPE, None, DESCRIPTION_QOS)
                  for key in self._pubs}
        if self.pub_tf is not None:
            topics["tf"] = TopicSpec(TF, TF_TYPE, None, TF_QOS)  # every tick; world -> free bodies
            topics["tf_static"] = TopicSpec(TF_STATIC, TF_TYPE, None, TF_STATIC_QOS)
        return topics


def tf_message(transforms: Sequence[Transform], stamp_ns: int):
    """A tf2_msgs/TFMessage of these transforms, all stamped ``stamp_ns``; new every call."""
    stamp = stamp_msg(stamp_ns)
    msg = TFMessage()
    for t in transforms:
        ts = TransformStamped()
        ts.header.stamp = stamp
        ts.header.frame_id = t.parent
        ts.child_frame_id = t.child
        tr, rot = ts.transform.translation, ts.transform.rotation
        tr.x, tr.y, tr.z = t.translation
        rot.x, rot.y, rot.z, rot.w = t.rotation_xyzw
        msg.transforms.append(ts)
    return msg
