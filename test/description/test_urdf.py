"""The URDF the sim publishes is the model: forward kinematics by an independent library
(Pinocchio, parsing the URDF with urdfdom as robot_state_publisher does) matches MuJoCo's body
poses to 1e-6 m / 1e-6 rad in 100 random configurations, for our scene and for a model with
every joint layout the translation handles."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest

from robogym_ros.description.urdf import body_name, free_bodies, matrix_to_rpy, objects_urdf, robot_urdf
from robogym_ros.task.scene import default_model_path

pin = pytest.importorskip("pinocchio", reason="pin (Pinocchio) is a test-only dependency: pip install pin")

MODELS = Path(__file__).parents[1] / "harness" / "models"
SCENES = {"so101_dual": default_model_path(), "urdf_zoo": str(MODELS / "urdf_zoo.xml"),
          "two_link": str(MODELS / "two_link.xml")}
TOL_M = 1e-6
TOL_RAD = 1e-6
N_CONFIGS = 100


def random_qpos(model: mujoco.MjModel, rng: np.random.Generator) -> np.ndarray:
    """qpos0 with every hinge/slide joint drawn within its range (+-pi if unlimited)."""
    qpos = model.qpos0.copy()
    for j in range(model.njnt):
        if int(model.jnt_type[j]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            continue
        lo, hi = model.jnt_range[j] if model.jnt_limited[j] else (-np.pi, np.pi)
        qpos[model.jnt_qposadr[j]] = rng.uniform(lo, hi)
    return qpos


def pin_configuration(pmodel, model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """Pinocchio's q for MuJoCo's qpos, matched by joint name (a continuous joint is cos, sin)."""
    q = pin.neutral(pmodel)
    for jid in range(1, pmodel.njoints):
        name = pmodel.names[jid]
        value = qpos[model.jnt_qposadr[model.joint(name).id]]
        i, nq = pmodel.joints[jid].idx_q, pmodel.joints[jid].nq
        q[i:i + nq] = [np.cos(value), np.sin(value)] if nq == 2 else [value]
    return q


def pose_errors(model, data, pmodel, pdata, bodies) -> tuple[float, float]:
    worst_m = worst_rad = 0.0
    for b in bodies:
        oMf = pdata.oMf[pmodel.getFrameId(body_name(model, b), pin.FrameType.BODY)]
        worst_m = max(worst_m, float(np.linalg.norm(oMf.translation - data.xpos[b])))
        R_err = data.xmat[b].reshape(3, 3).T @ oMf.rotation
        worst_rad = max(worst_rad, float(np.linalg.norm(pin.log3(R_err))))
    return worst_m, worst_rad


def robot_bodies(model) -> list[int]:
    free = set(free_bodies(model))
    return [b for b in range(1, model.nbody) if b not in free]


@pytest.mark.parametrize("scene", list(SCENES))
def test_fk_from_the_urdf_matches_mujoco(scene):
    model = mujoco.MjModel.from_xml_path(SCENES[scene])
    data = mujoco.MjData(model)
    pmodel = pin.buildModelFromXML(robot_urdf(model))
    pdata = pmodel.createData()
    bodies = robot_bodies(model)
    rng = np.random.default_rng(7)
    worst = np.zeros(2)
    for _ in range(N_CONFIGS):
        data.qpos[:] = random_qpos(model, rng)
        mujoco.mj_kinematics(model, data)
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, model, data.qpos))
        worst = np.maximum(worst, pose_errors(model, data, pmodel, pdata, bodies))
    print(f"{scene}: {len(bodies)} bodies x {N_CONFIGS} configurations, worst {worst[0]:.2e} m, "
          f"{worst[1]:.2e} rad")
    assert worst[0] < TOL_M and worst[1] < TOL_RAD, worst


def test_the_comparison_sees_a_wrong_urdf():
    """Positive control: the zoo's URDF with one anchor dropped (the mistake a naive converter
    makes: rotating about the body origin) fails the same comparison."""
    model = mujoco.MjModel.from_xml_path(SCENES["urdf_zoo"])
    data = mujoco.MjData(model)
    broken = model.__copy__()
    broken.jnt_pos[model.joint("offset_hinge").id] = 0.0
    pmodel = pin.buildModelFromXML(robot_urdf(broken))
    pdata = pmodel.createData()
    data.qpos[:] = random_qpos(model, np.random.default_rng(1))
    mujoco.mj_kinematics(model, data)
    pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, model, data.qpos))
    assert pose_errors(model, data, pmodel, pdata, robot_bodies(model))[0] > 1e-3


def test_joint_names_types_axes_and_limits_are_the_models():
    model = mujoco.MjModel.from_xml_path(SCENES["urdf_zoo"])
    joints = {j.get("name"): j for j in ET.fromstring(robot_urdf(model)).iter("joint")}
    assert joints["offset_hinge"].get("type") == "revolute"
    assert joints["twist"].get("type") == "continuous"  # unlimited hinge
    assert joints["extend"].get("type") == "prismatic"
    assert joints["world_to_base"].get("type") == "fixed"
    limit = joints["offset_hinge"].find("limit")
    assert (float(limit.get("lower")), float(limit.get("upper")), float(limit.get("effort"))) == (-2.0, 2.0, 3.0)
    axis = np.array(joints["offset_hinge"].find("axis").get("xyz").split(), float)
    np.testing.assert_allclose(axis, np.array([0.3, 1, 0.2]) / np.linalg.norm([0.3, 1, 0.2]), atol=1e-15)
    # the free body is not part of the robot, and the robot's joints are the sim's joint names
    assert "puck_free" not in joints and "puck" not in {ln.get("name") for ln in
                                                         ET.fromstring(robot_urdf(model)).iter("link")}


def test_so101_visuals_carry_the_geoms_and_their_colours():
    model = mujoco.MjModel.from_xml_path(SCENES["so101_dual"])
    root = ET.fromstring(robot_urdf(model))
    links = {ln.get("name"): ln for ln in root.iter("link")}
    assert set(links) == {body_name(model, b) for b in range(model.nbody)} - {"block", "tray"}
    visual = next(v for v in links["left_shoulder"].iter("visual") if v.get("name") == "left_shoulder_motor")
    assert visual.find("geometry/box").get("size") == "0.056 0.052 0.052"
    assert visual.find("material/color").get("rgba") == "0.12 0.12 0.13 1"
    # a capsule is a cylinder and two spheres
    upper = [v.find("geometry")[0].tag for v in links["left_upper_arm"].iter("visual")]
    assert upper == ["cylinder", "sphere", "sphere"]
    # the names robot_state_publisher is fed from joint_states
    names = {j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"}
    assert names == {model.joint(j).name for j in range(model.njnt)} - {"block_free", "tray_free"}


def test_objects_urdf_hangs_each_free_body_from_world():
    model = mujoco.MjModel.from_xml_path(SCENES["so101_dual"])
    root = ET.fromstring(objects_urdf(model))
    joints = {j.get("name"): (j.get("type"), j.find("parent").get("link"), j.find("child").get("link"))
              for j in root.iter("joint")}
    assert joints == {"block_free": ("floating", "world", "block"), "tray_free": ("floating", "world", "tray")}
    block = next(ln for ln in root.iter("link") if ln.get("name") == "block")
    assert block.find("visual/geometry/box").get("size") == "0.025 0.025 0.05"
    pin.buildModelFromXML(objects_urdf(model))  # urdfdom parses it
    assert objects_urdf(mujoco.MjModel.from_xml_path(SCENES["two_link"])) is not None
    no_free = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><joint/><geom size='1'/>"
                                            "</body></worldbody></mujoco>")
    assert objects_urdf(no_free) is None


@pytest.mark.parametrize("rpy", [(0.3, -0.2, 0.7), (0.1, np.pi / 2, -0.4), (2.0, -np.pi / 2, 1.0),
                                 (0.0, np.pi / 2 - 1e-9, 0.3), (0.0, np.pi / 2 - 1e-7, 0.3)])
def test_rpy_round_trips_through_urdf_convention(rpy):
    r, p, y = rpy
    R = pin.rpy.rpyToMatrix(r, p, y)  # URDF's convention, from the independent library
    back = pin.rpy.rpyToMatrix(*matrix_to_rpy(R))
    np.testing.assert_allclose(back, R, atol=1e-7)  # ~1e-8 next to gimbal lock, 1e-16 elsewhere
