"""rosbag2 round trips (mcap and sqlite3), an independent mcap cross-check, and clear errors."""
import dataclasses
import json

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from sim_bags import DECIMATION, DT_NS, NAMES, SPEC, H, W, trajectory, write_sim_bag

from robogym_ros.checks import audit_stream, check_images, digest
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.reader import read_bag
from robogym_ros.recorder.bag.writer import BagWriter
from robogym_ros.recorder.verdict import EXIT_FAIL, EXIT_PASS, Verdict


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip(tmp_path, storage):
    stamps, q, v, e = write_sim_bag(tmp_path / "bag", storage)
    data = read_bag(tmp_path / "bag")
    assert data.storage == storage
    js = data.joint_states
    assert js.topic == "/joint_states" and js.names == tuple(NAMES)
    assert np.array_equal(js.stamp_ns, stamps) and np.array_equal(js.log_time_ns, stamps)
    assert np.array_equal(js.position, q) and np.array_equal(js.velocity, v) and np.array_equal(js.effort, e)
    assert np.array_equal(data.ground_truth.position, q)
    assert data.object_poses.poses.shape == (120, 2, 7)
    assert data.object_poses.poses[5, 1].tolist() == [0.3, -0.2, 0.01, 0.7071, 0, 0, 0.7071]
    assert data.spec == SPEC
    assert len(data.images) == 40 and data.images[0].camera == "overhead" and data.images[0].digest is None
    assert (data.images[0].width, data.images[0].height, data.images[0].step, data.images[0].data_len) == \
        (W, H, W * 3, W * H * 3)
    info = data.camera_info["overhead"]
    assert (info.width, info.height, info.k[0], len(info.stamp_ns)) == (W, H, 20.0, 40)
    assert data.message_counts["/joint_states"] == 120 and data.message_counts["/robogym_sim/spec"] == 1

    results = audit_stream(js.stamp_ns, js.position, data.ground_truth.stamp_ns, data.ground_truth.position, DT_NS,
                           velocities=js.velocity, true_velocities=data.ground_truth.velocity,
                           decimation=DECIMATION, joint_names=js.names)
    results.append(check_images(data.images, DT_NS, joint_stamps_ns=js.stamp_ns,
                                expected_sizes={"overhead": (W, H)}, periods_ns={"overhead": 3 * DT_NS}))
    assert Verdict(results).exit_code == EXIT_PASS, Verdict(results).table()


def test_mcap_cross_check_with_independent_reader(tmp_path):
    stamps, q, v, e = write_sim_bag(tmp_path / "bag")
    seen = {}
    with open(tmp_path / "bag" / "bag.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, message, msg in reader.iter_decoded_messages():
            seen.setdefault(channel.topic, []).append((schema.name, message.log_time, msg))
    js = seen["/joint_states"]
    assert {name for name, _, _ in js} == {"sensor_msgs/msg/JointState"}
    assert [m.header.stamp.sec * 10 ** 9 + m.header.stamp.nanosec for _, _, m in js] == stamps.tolist()
    assert [t for _, t, _ in js] == stamps.tolist()
    assert np.array_equal(np.array([m.position for _, _, m in js]), q)
    assert np.array_equal(np.array([m.velocity for _, _, m in js]), v)
    assert list(js[0][2].name) == NAMES
    ours = read_bag(tmp_path / "bag", image_digests=True)
    assert ours.images[1].digest == digest(np.full(W * H * 3, 5, np.uint8))  # tick 6: k = 5
    img = seen["/cameras/overhead/image_raw"][1][2]
    assert (img.width, img.height, img.step, img.encoding, len(img.data)) == \
        (ours.images[1].width, ours.images[1].height, ours.images[1].step, ours.images[1].encoding,
         ours.images[1].data_len)
    assert json.loads(seen["/robogym_sim/spec"][0][2].data) == SPEC.to_dict()
    pose = seen["/ground_truth/object_poses"][5][2].poses[1]
    assert [pose.position.x, pose.orientation.w, pose.orientation.z] == [0.3, 0.7071, 0.7071]


def test_spec_topic_is_latched(tmp_path):
    write_sim_bag(tmp_path / "bag", n_ticks=3)
    meta = (tmp_path / "bag" / "metadata.yaml").read_text()
    assert "transient_local" in meta and "RIHS01_" in meta


def test_velocity_5x_in_a_bag_is_named(tmp_path):
    write_sim_bag(tmp_path / "bag", velocity_scale=DECIMATION)
    d = read_bag(tmp_path / "bag")
    v = Verdict(audit_stream(d.joint_states.stamp_ns, d.joint_states.position, d.ground_truth.stamp_ns,
                             d.ground_truth.position, DT_NS, velocities=d.joint_states.velocity,
                             true_velocities=d.ground_truth.velocity, decimation=DECIMATION))
    assert v.exit_code == EXIT_FAIL
    assert [f.code for _, f in v.findings] == ["velocity_factor_decimation"]
    assert "5.00x = decimation" in v.findings[0][1].message


def test_namespaced_topics_and_namespace_choice(tmp_path):
    write_sim_bag(tmp_path / "ns", ns="/robot1", n_ticks=5)
    d = read_bag(tmp_path / "ns")
    assert d.joint_states.topic == "/robot1/joint_states"
    assert d.ground_truth.topic == "/robot1/ground_truth/joint_states" and d.spec == SPEC

    with BagWriter(tmp_path / "two") as bag:
        for ns in ("/a", "/b"):
            bag.write_joint_state(f"{ns}/joint_states", DT_NS, NAMES[:2], [0.0, 1.0])
    with pytest.raises(BagError, match="2 topics end in 'joint_states'.*namespace="):
        read_bag(tmp_path / "two")
    assert read_bag(tmp_path / "two", namespace="b").joint_states.topic == "/b/joint_states"


def test_joint_order_differing_per_message_is_realigned(tmp_path):
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_joint_state("/joint_states", DT_NS, ["a", "b"], [1.0, 2.0])
        bag.write_joint_state("/joint_states", 2 * DT_NS, ["b", "a"], [4.0, 3.0])
        bag.write_joint_state("/ground_truth/joint_states", DT_NS, ["b", "a"], [2.0, 1.0])
    d = read_bag(tmp_path / "bag")
    assert d.joint_states.position.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert np.isnan(d.joint_states.velocity).all()
    assert d.ground_truth.names == ("a", "b") and d.ground_truth.position.tolist() == [[1.0, 2.0]]


def test_bare_storage_file_and_directory_without_metadata(tmp_path):
    write_sim_bag(tmp_path / "bag", n_ticks=4)
    assert len(read_bag(tmp_path / "bag" / "bag.mcap").joint_states) == 4
    (tmp_path / "bag" / "metadata.yaml").unlink()  # a recording killed before it finalised
    assert len(read_bag(tmp_path / "bag").joint_states) == 4
    write_sim_bag(tmp_path / "db", storage="sqlite3", n_ticks=4)
    assert len(read_bag(tmp_path / "db" / "db.db3").joint_states) == 4


# ----------------------------------------------------------------------------- bad input

def test_missing_path(tmp_path):
    with pytest.raises(BagError, match="bag not found: .*nowhere"):
        read_bag(tmp_path / "nowhere")


@pytest.mark.parametrize("storage, suffix", [("mcap", ".mcap"), ("sqlite3", ".db3")])
@pytest.mark.parametrize("keep", [0.5, 0.9, 0.99])  # the last 0.5 % of this db3 are pages sqlite never reads
def test_truncated_file(tmp_path, storage, suffix, keep):
    write_sim_bag(tmp_path / "bag", storage=storage)
    file = tmp_path / "bag" / f"bag{suffix}"
    data = file.read_bytes()
    file.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(BagError, match="truncated or corrupt") as err:
        read_bag(tmp_path / "bag")
    assert str(tmp_path / "bag") in str(err.value)
    assert err.value.__cause__ is None and err.value.cause is not None  # one clear line, cause kept


def test_empty_storage_file(tmp_path):
    write_sim_bag(tmp_path / "bag", n_ticks=2)
    (tmp_path / "bag" / "bag.mcap").write_bytes(b"")
    with pytest.raises(BagError, match="truncated or corrupt"):
        read_bag(tmp_path / "bag")
    with pytest.raises(BagError, match="file is empty"):
        read_bag(tmp_path / "bag" / "bag.mcap")


@pytest.mark.parametrize("storage, suffix", [("mcap", ".mcap"), ("sqlite3", ".db3")])
def test_corrupt_header(tmp_path, storage, suffix):
    # rosbags writes mcap chunks without CRC, so flipped payload bytes cannot be seen;
    # a damaged structure can, and must give the clear error.
    write_sim_bag(tmp_path / "bag", storage=storage)
    file = tmp_path / "bag" / f"bag{suffix}"
    data = bytearray(file.read_bytes())
    data[:16] = b"\xff" * 16
    file.write_bytes(bytes(data))
    with pytest.raises(BagError, match="truncated or corrupt"):
        read_bag(tmp_path / "bag")


def test_wrong_topics_lists_what_the_bag_has(tmp_path):
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_string("/chatter", "hello", log_time_ns=1)
        bag.write_pose_array("/ground_truth/object_poses", DT_NS, [[0, 0, 0, 1, 0, 0, 0]])
    with pytest.raises(BagError) as err:
        read_bag(tmp_path / "bag")
    msg = str(err.value)
    assert "no joint_states topic of type sensor_msgs/msg/JointState" in msg
    assert "/chatter [std_msgs/msg/String]" in msg and "/ground_truth/object_poses [geometry_msgs/msg/PoseArray]" in msg


def test_joint_states_of_the_wrong_type(tmp_path):
    with BagWriter(tmp_path / "bag", storage="sqlite3") as bag:
        bag.write_string("/joint_states", "not joints", log_time_ns=1)
    with pytest.raises(BagError, match="/joint_states is std_msgs/msg/String"):
        read_bag(tmp_path / "bag")


def test_not_a_bag(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(BagError, match="not a rosbag2 bag"):
        read_bag(tmp_path / "dir")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(BagError, match="unrecognised file type '.txt'"):
        read_bag(tmp_path / "notes.txt")


def test_bad_spec_json(tmp_path):
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_string("/robogym_sim/spec", "{not json", latched=True)
        bag.write_joint_state("/joint_states", DT_NS, ["a"], [0.0])
    with pytest.raises(BagError, match="spec on /robogym_sim/spec is not JSON"):
        read_bag(tmp_path / "bag")


# ----------------------------------------------------------------------------- writer

def test_writer_close_twice_existing_path_and_closed_writes(tmp_path):
    bag = BagWriter(tmp_path / "bag", storage="sqlite3")
    bag.write_joint_state("/joint_states", DT_NS, ["a"], [0.5])
    bag.close()
    bag.close()
    assert bag.closed
    with pytest.raises(BagError, match="is closed"):
        bag.write_joint_state("/joint_states", 2 * DT_NS, ["a"], [0.5])
    with pytest.raises(BagError, match="exists already"):
        BagWriter(tmp_path / "bag")
    with pytest.raises(BagError, match="unknown storage 'rosbag1'"):
        BagWriter(tmp_path / "other", storage="rosbag1")
    assert read_bag(tmp_path / "bag").joint_states.position.tolist() == [[0.5]]


def test_writer_refuses_a_second_type_on_a_topic(tmp_path):
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_joint_state("/joint_states", DT_NS, ["a"], [0.5])
        with pytest.raises(BagError, match="carries sensor_msgs/msg/JointState"):
            bag.write_string("/joint_states", "x")


def test_writer_finalises_on_error(tmp_path):
    with pytest.raises(RuntimeError):
        with BagWriter(tmp_path / "bag") as bag:
            bag.write_joint_state("/joint_states", DT_NS, ["a"], [0.5])
            raise RuntimeError("recorder crashed")
    assert read_bag(tmp_path / "bag").joint_states.position.tolist() == [[0.5]]


# --- messages that do not deserialize: judged as lost data, never a refused bag -----------------

TRUNCATED_JOINT_STATE = b"\x00\x01\x00\x00" + b"\x05\x00\x00\x00\x00\x00"  # a stamp cut short


def write_still_bag(path, storage, malformed_after=None):
    """A still arm, no cameras; a truncated joint_states message after tick ``malformed_after``."""
    stamps, *_ = trajectory()
    with BagWriter(path, storage=storage) as bag:
        bag.write_spec("/robogym_sim/spec", dataclasses.replace(SPEC, cameras=()))
        q, v, e = (np.zeros(len(NAMES)),) * 3
        for k, s in enumerate(stamps):
            bag.write_joint_state("/joint_states", s, NAMES, q, v, e)
            bag.write_joint_state("/ground_truth/joint_states", s, NAMES, q, v, e)
            if k == malformed_after:
                bag.write_raw("/joint_states", "sensor_msgs/msg/JointState", TRUNCATED_JOINT_STATE, int(s) + 1)
    return stamps


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_malformed_message_in_a_bag_is_a_decoding_finding_and_the_rest_is_checked(tmp_path, storage):
    from robogym_ros.recorder.offline import check_bag
    write_still_bag(tmp_path / "clean", storage)
    clean = check_bag(str(tmp_path / "clean"))  # positive control: the same bag without the fault
    assert clean.exit_code == EXIT_PASS and "every message decoded" in clean.to_dict()["checks"][-1]["summary"]
    stamps = write_still_bag(tmp_path / "faulty", storage, malformed_after=60)
    data = read_bag(tmp_path / "faulty")
    assert len(data.joint_states) == len(stamps) and data.malformed["/joint_states"].n == 1
    verdict = check_bag(str(tmp_path / "faulty"))
    assert verdict.exit_code == EXIT_FAIL
    assert [(check, f.code) for check, f in verdict.findings] == [("decoding", "malformed_messages")]
    assert "1 malformed message, lost" in verdict.findings[0][1].message


def test_a_bag_whose_joint_states_all_fail_to_decode_fails_it_is_no_usage_error(tmp_path):
    from robogym_ros.recorder.offline import check_bag
    with BagWriter(tmp_path / "bag") as bag:
        bag.write_spec("/robogym_sim/spec", SPEC)
        for s in trajectory(10)[0]:
            bag.write_raw("/joint_states", "sensor_msgs/msg/JointState", TRUNCATED_JOINT_STATE, int(s))
    verdict = check_bag(str(tmp_path / "bag"))
    assert verdict.exit_code == EXIT_FAIL
    assert [f.code for _, f in verdict.findings] == ["malformed_messages"]
    assert "10 malformed messages" in verdict.findings[0][1].message
