"""The CDR decoder on real messages: a real sim node, real DDS, raw and typed subscriptions to
the same topics side by side. Every decoded field equals what rclpy delivered with that stamp."""
from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import PoseArray
from sensor_msgs.msg import Image, JointState
from simharness import Observer

from robogym_ros import contract
from robogym_ros.ros import qos, stamps
from robogym_ros.wire import decode

stamp_ns = stamps.stamp_ns


class RawObserver(Observer):
    """The harness's typed observer plus raw (serialized) subscriptions to the same topics."""

    def __init__(self, namespace: str):
        super().__init__(namespace)
        self.raw = {t: [] for t in (contract.JOINT_STATES, contract.TRUTH_JOINTS, contract.TRUTH_OBJECTS,
                                    contract.image_topic("overhead"))}
        self.images: list[Image] = []
        types = {contract.TRUTH_OBJECTS: PoseArray, contract.image_topic("overhead"): Image}
        for topic, store in self.raw.items():
            self.node.create_subscription(types.get(topic, JointState), topic, self._keep(store),
                                          qos.IMAGE_QOS if topic in types and types[topic] is Image
                                          else qos.STREAM_QOS, raw=True)
        self.node.create_subscription(Image, contract.image_topic("overhead"), self._keep(self.images),
                                      qos.IMAGE_QOS)


def test_decoded_real_messages_equal_rclpys_field_for_field(make_sim):
    _, obs = make_sim(RawObserver, start_paused=True, cameras=["overhead"], camera_width_px=64,
                      camera_height_px=48)
    obs.wait_for(lambda: all(obs.node.count_publishers(f"/{obs.namespace}/{t}") >= 1 for t in obs.raw),
                 10, "publishers")
    time.sleep(0.5)  # discovered is not yet matched
    obs.send(["left_shoulder_pan"], [0.5])  # motion, so the numbers differ tick to tick
    obs.call("resume")
    obs.wait_for(lambda: len(obs.snapshot(obs.raw[contract.JOINT_STATES])) >= 60, 20, "60 raw joint_states")
    obs.call("pause")
    time.sleep(0.5)
    names = obs.spec["joints"]
    decoder = decode.JointStateDecoder([j["name"] for j in names])
    for topic, typed in ((contract.JOINT_STATES, obs.joint_states), (contract.TRUTH_JOINTS, obs.truth)):
        by_stamp = {stamp_ns(m.header.stamp): m for m in obs.snapshot(typed)}
        raw = obs.snapshot(obs.raw[topic])
        matched = 0
        for data in raw:
            got = decode.decode_joint_state(data)
            ref = by_stamp.get(got.stamp_ns)
            if ref is None:  # the typed subscription missed it (matched later)
                continue
            matched += 1
            assert got.frame_id == ref.header.frame_id
            assert list(got.name) == list(ref.name)
            out = np.empty((3, len(names)))
            assert decoder.decode_into(data, out) == got.stamp_ns
            for row, field in zip(out, ("position", "velocity", "effort")):
                assert getattr(got, field).tobytes() == np.asarray(getattr(ref, field)).tobytes()
                assert row.tobytes() == np.asarray(getattr(ref, field)).tobytes()
        assert matched >= 50, f"{topic}: only {matched} of {len(raw)} raw messages matched a typed one"
        moving = [decode.decode_joint_state(d).position[0] for d in raw]
        assert np.ptp(moving) > 0.01, "nothing moved: equal numbers would prove little"

    poses = {stamp_ns(m.header.stamp): m for m in obs.snapshot(obs.objects)}
    raw_poses = obs.snapshot(obs.raw[contract.TRUTH_OBJECTS])
    assert len(raw_poses) >= 50
    for data in raw_poses:
        stamp, frame_id, rows = decode.decode_pose_array(data)
        ref = poses.get(stamp)
        if ref is None:
            continue
        assert frame_id == ref.header.frame_id == contract.WORLD_FRAME
        expected = [[p.position.x, p.position.y, p.position.z, p.orientation.w, p.orientation.x,
                     p.orientation.y, p.orientation.z] for p in ref.poses]
        assert rows.tolist() == expected

    images = {stamp_ns(m.header.stamp): m for m in obs.snapshot(obs.images)}
    raw_images = obs.snapshot(obs.raw[contract.image_topic("overhead")])
    compared = 0
    for data in raw_images:
        got = decode.decode_image(data)
        ref = images.get(got.stamp_ns)
        if ref is None:
            continue
        compared += 1
        assert (got.frame_id, got.height, got.width, got.encoding, got.is_bigendian, got.step) == (
            ref.header.frame_id, ref.height, ref.width, ref.encoding, ref.is_bigendian, ref.step)
        assert bytes(got.pixels(data)) == bytes(ref.data)
    assert compared >= 3, f"only {compared} of {len(raw_images)} images compared"
