"""A bag as the sim and the recorder would write it, without either: twelve joints on a smooth
trajectory, ground truth, object poses and an overhead camera on its clock (rosbag2, mcap or sqlite3)."""
import numpy as np

from robogym_ros import contract
from robogym_ros.contract import CameraSpec, JointSpec, Spec, TopicSpec
from robogym_ros.recorder.bag.writer import BagWriter

DT_NS = 10_000_000
DECIMATION = 5
NAMES = [f"{side}_{j}" for side in ("left", "right")
         for j in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]
SPEC = Spec(control_dt_ns=DT_NS, physics_dt_ns=2_000_000, decimation=DECIMATION,
            joints=tuple(JointSpec(n, lower=-1.0, upper=1.0) for n in NAMES),
            topics={"joint_states": TopicSpec("joint_states", "sensor_msgs/msg/JointState", 0.01,
                                              contract.STREAM_QOS)},
            cameras=(CameraSpec("overhead", "cameras/overhead/image_raw", "cameras/overhead/camera_info",
                                width=32, height=24, period_s=0.03),))
W, H = 32, 24


def trajectory(n_ticks=120):
    stamps = np.arange(1, n_ticks + 1) * DT_NS
    t = stamps[:, None] * 1e-9
    w = 2 * np.pi * np.linspace(0.2, 1.5, len(NAMES))
    return stamps, 0.5 * np.sin(w * t), 0.5 * w * np.cos(w * t), 0.1 * np.cos(w * t)


def write_sim_bag(path, storage="mcap", ns="", n_ticks=120, velocity_scale=1.0):
    stamps, q, v, e = trajectory(n_ticks)
    with BagWriter(path, storage=storage) as bag:
        bag.write_spec(f"{ns}/robogym_sim/spec", SPEC)
        for k, s in enumerate(stamps):
            bag.write_joint_state(f"{ns}/joint_states", s, NAMES, q[k], v[k] * velocity_scale, e[k])
            bag.write_joint_state(f"{ns}/ground_truth/joint_states", s, NAMES, q[k], v[k], e[k])
            bag.write_pose_array(f"{ns}/ground_truth/object_poses", s,
                                 [[0.1, 0.2, 0.03 + k * 1e-4, 1, 0, 0, 0], [0.3, -0.2, 0.01, 0.7071, 0, 0, 0.7071]])
            if s % (3 * DT_NS) == 0:  # where the sim's camera clock (period 30 ms) makes a frame due
                img = np.full(W * H * 3, k % 256, np.uint8)
                bag.write_image(f"{ns}/cameras/overhead/image_raw", s, W, H, img, frame_id="overhead")
                bag.write_camera_info(f"{ns}/cameras/overhead/camera_info", s, W, H,
                                      [20.0, 0, 16, 0, 20.0, 12, 0, 0, 1], d=[0, 0, 0, 0])
    return stamps, q, v, e
