"""The transforms the sim publishes (robogym_ros.description.tf_frames), checked without tf2_msgs: they
compose with the URDF's links into MuJoCo's own camera and object poses, follow REP 103, and
projecting the block through a camera's transform and its CameraInfo lands on the block's blob
in that camera's rendered image."""
from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first mujoco import

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from robogym_ros.contract import POSE_LAYOUT, WORLD_FRAME, optical_frame  # noqa: E402
from robogym_ros.description.tf_frames import (  # noqa: E402
    MJ_CAMERA_FROM_OPTICAL,
    SceneFrames,
    Transform,
    camera_optical_frames,
    camera_pose_optical,
    object_transforms,
)
from robogym_ros.sim.physics import Physics  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402

CAMERAS = ("left_wrist", "right_wrist", "overhead")


@pytest.fixture
def physics():
    return Physics(default_model_path(), 0.002, 5, seed=3)


def world_pose(model, data, link: str) -> np.ndarray:
    T = np.eye(4)
    if link != WORLD_FRAME:
        b = model.body(link).id
        T[:3, :3] = data.xmat[b].reshape(3, 3)
        T[:3, 3] = data.xpos[b]
    return T


def test_optical_frames_hang_off_the_camera_links_and_follow_rep_103(physics):
    model, data = physics.model, physics.data
    frames = {t.child: t for t in camera_optical_frames(model)}
    assert set(frames) == {optical_frame(c) for c in CAMERAS}
    assert frames["left_wrist_optical_frame"].parent == "left_gripper"
    assert frames["overhead_optical_frame"].parent == WORLD_FRAME
    rng = np.random.default_rng(0)
    for _ in range(20):  # any arm pose: the transform is fixed on its link
        data.qpos[physics._qpos_adr] = [rng.uniform(j.lower, j.upper) for j in physics.joints]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)
        for cam in CAMERAS:
            t = frames[optical_frame(cam)]
            T = world_pose(model, data, t.parent) @ t.matrix()
            cam_id = model.camera(cam).id
            mj = data.cam_xmat[cam_id].reshape(3, 3)  # MuJoCo camera: x right, y up, looks along -z
            np.testing.assert_allclose(T[:3, 3], data.cam_xpos[cam_id], atol=1e-12)
            np.testing.assert_allclose(T[:3, 0], mj[:, 0], atol=1e-12)  # x right
            np.testing.assert_allclose(T[:3, 1], -mj[:, 1], atol=1e-12)  # y down
            np.testing.assert_allclose(T[:3, 2], -mj[:, 2], atol=1e-12)  # z forward
            R, p = camera_pose_optical(model, data, cam_id)
            np.testing.assert_allclose(T[:3, :3], R, atol=1e-12)
            np.testing.assert_allclose(T[:3, 3], p, atol=1e-12)


def test_overhead_camera_looks_down_with_the_left_arm_on_the_image_left(physics):
    t = next(f for f in camera_optical_frames(physics.model) if f.child == "overhead_optical_frame")
    R = t.matrix()[:3, :3]
    np.testing.assert_allclose(R[:, 2], [0, 0, -1], atol=1e-12)  # z forward = down
    np.testing.assert_allclose(R[:, 0], [0, -1, 0], atol=1e-12)  # x right = -y: the left arm (+y) is left
    np.testing.assert_allclose(R[:, 1], [-1, 0, 0], atol=1e-12)  # y down = -x: away from the arms is up


def test_object_transforms_are_the_ticks_poses(physics):
    tick = physics.snapshot()
    transforms = SceneFrames(physics.model, physics.object_names).at(tick.object_poses)
    assert [(t.parent, t.child) for t in transforms] == [(WORLD_FRAME, "block"), (WORLD_FRAME, "tray")]
    for t, body in zip(transforms, ("block", "tray")):
        b = physics.model.body(body).id
        np.testing.assert_array_equal(t.translation, physics.data.xpos[b])
        np.testing.assert_allclose(t.matrix()[:3, :3], physics.data.xmat[b].reshape(3, 3), atol=1e-12)
    row = dict(zip(POSE_LAYOUT, tick.object_poses[0]))
    assert transforms[0].rotation_xyzw == (row["qx"], row["qy"], row["qz"], row["qw"])
    with pytest.raises(ValueError, match="2 object poses for 1 names"):
        object_transforms(tick.object_poses, ["block"])


def test_unknown_camera_is_named(physics):
    with pytest.raises(ValueError, match=r"'nope'.*\['overhead', 'left_wrist', 'right_wrist'\]"):
        camera_optical_frames(physics.model, ["nope"])


def test_a_tracking_camera_has_no_fixed_transform():
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='b'><freejoint/><geom size='.1'/></body>"
        "<camera name='fixed' pos='0 0 1'/><camera name='follow' mode='trackcom' pos='0 0 1'/>"
        "</worldbody></mujoco>")
    assert [t.child for t in camera_optical_frames(model)] == ["fixed_optical_frame"]


# --- the block, projected through TF and CameraInfo, on its blob in the rendered image ---------
def tf_world_from(frame: str, chain: dict[str, Transform]) -> np.ndarray:
    """Compose parent <- child transforms from ``frame`` up to ``world``, as tf2 would."""
    T = np.eye(4)
    while frame != WORLD_FRAME:
        t = chain[frame]
        T = t.matrix() @ T
        frame = t.parent
    return T


def urdf_link_transforms(physics, positions) -> dict[str, Transform]:
    """What robot_state_publisher would publish for these joint_states: FK of the URDF, by
    Pinocchio (urdfdom), as world -> link transforms."""
    pin = pytest.importorskip("pinocchio", reason="pin (Pinocchio) is a test-only dependency")
    from robogym_ros.description.urdf import robot_urdf
    pmodel = pin.buildModelFromXML(robot_urdf(physics.model))
    pdata = pmodel.createData()
    q = pin.neutral(pmodel)
    by_name = dict(zip(physics.joint_names, positions))
    for jid in range(1, pmodel.njoints):
        q[pmodel.joints[jid].idx_q] = by_name[pmodel.names[jid]]
    pin.framesForwardKinematics(pmodel, pdata, q)
    out = {}
    for f in pmodel.frames:
        if f.type == pin.FrameType.BODY and f.name != WORLD_FRAME:
            M = pdata.oMf[pmodel.getFrameId(f.name, pin.FrameType.BODY)]
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, M.rotation.ravel())
            out[f.name] = Transform(WORLD_FRAME, f.name, tuple(M.translation), (*quat[1:], quat[0]))
    return out


def red_blob(image: np.ndarray) -> np.ndarray:
    """Mask of the largest red region (the block: the tray is moved out of view)."""
    r, g, b = (image[..., k].astype(int) for k in range(3))
    mask = ((r > 25) & (r > 2 * g) & (r > 2 * b)).astype(np.uint8)  # shaded faces included
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
    assert n > 1, "no red blob in the image"
    return labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))


def projected_silhouette(lens, corners_optical: np.ndarray, shape) -> np.ndarray:
    """The convex hull of the projected corners, as a mask: K and D as CameraInfo carries them."""
    zero = np.zeros(3)
    obj = corners_optical.reshape(-1, 1, 3)
    if lens.distortion_model == "equidistant":
        px, _ = cv2.fisheye.projectPoints(obj, zero, zero, lens.K, lens.D)
    else:
        px, _ = cv2.projectPoints(obj, zero, zero, lens.K, lens.D)
    hull = cv2.convexHull(np.round(px.reshape(-1, 2)).astype(np.int32))
    mask = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(mask, hull, 1)
    return mask.astype(bool)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


def stage_block_in_view(physics, camera: str) -> None:
    """Arm raised and rolled, block ~13 cm in front of ``camera``, the tray out of every view."""
    model, data = physics.model, physics.data
    pose = {"left_shoulder_lift": 0.25, "left_elbow_flex": -0.35, "left_wrist_flex": 0.3,
            "left_wrist_roll": 0.6, "left_shoulder_pan": -0.3, "left_gripper": 1.2}
    for name, q in pose.items():
        data.joint(name).qpos = q
    mujoco.mj_forward(model, data)
    cam = model.camera(camera).id
    mj = data.cam_xmat[cam].reshape(3, 3)
    # Off the axis (right and up), so a wrong optical convention cannot land on it by symmetry.
    if camera == "overhead":
        block_at = data.xpos[model.body("block").id]  # where the reset put it: in view
    else:
        block_at = data.cam_xpos[cam] + mj @ [0.02, 0.012, -0.13]
    data.joint("block_free").qpos[:3] = block_at
    data.joint("tray_free").qpos[:3] = [3.0, 3.0, -0.5]
    mujoco.mj_forward(model, data)


BROKEN = {
    "correct": np.eye(4),
    # the MuJoCo camera frame published as if it were the optical frame (no half turn)
    "mujoco_axes": np.block([[MJ_CAMERA_FROM_OPTICAL, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]]),
    # x and y swapped (a transposed image convention)
    "xy_swapped": np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, -1, 0], [0, 0, 0, 1.0]]),
}


@pytest.mark.parametrize("camera", ["overhead", "left_wrist"])
def test_projected_block_lands_on_its_blob(physics, camera):
    from robogym_ros.camera.lens import Lens
    from robogym_ros.camera.renderer import CameraRenderer
    stage_block_in_view(physics, camera)
    tick = physics.snapshot()
    lens = Lens(320, 240)
    with CameraRenderer(physics.model, [camera], lens) as renderer:
        image = renderer.render(tick.state)[camera]
    blob = red_blob(image)

    # The TF tree a ROS user has: robot_state_publisher's links + the sim's static and per-tick frames.
    chain = urdf_link_transforms(physics, tick.position)
    frames = SceneFrames(physics.model, physics.object_names)
    chain |= {t.child: t for t in frames.static + frames.at(tick.object_poses)}
    T_world_block = tf_world_from("block", chain)
    half = physics.model.geom("block").size
    corners = np.array([[sx * half[0], sy * half[1], sz * half[2], 1.0]
                        for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    results = {}
    for name, error in BROKEN.items():
        T_opt_world = np.linalg.inv(tf_world_from(optical_frame(camera), chain) @ error)
        corners_opt = (T_opt_world @ T_world_block @ corners.T).T[:, :3]
        if np.any(corners_opt[:, 2] <= 0):
            results[name] = (0.0, False)  # behind the camera: nowhere in the image
            continue
        silhouette = projected_silhouette(lens, corners_opt, blob.shape)
        centre_opt = (T_opt_world @ T_world_block @ [0, 0, 0, 1.0])[:3]
        u, v = np.round(lens.project(centre_opt[None])[0]).astype(int)
        on_blob = 0 <= v < blob.shape[0] and 0 <= u < blob.shape[1] and bool(blob[v, u])
        results[name] = (iou(silhouette, blob), on_blob)
    print(camera, {k: (round(a, 3), b) for k, (a, b) in results.items()}, "blob px", int(blob.sum()))
    overlap, on_blob = results["correct"]
    assert on_blob and overlap > 0.8, results
    for name in BROKEN.keys() - {"correct"}:  # positive controls: a wrong convention misses
        assert results[name][0] < 0.2 and not results[name][1], (name, results[name])
