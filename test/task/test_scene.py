"""Tests of the two-arm scene: the model, reset, stability, cameras, and the forced handover.

The handover tests search an arm's joint space with forward kinematics and collision detection only
(no dynamics). Definitions used there:

* graspable region: the block's box (25 x 25 x 50 mm). An arm can grasp the block when its grasp
  site (the point between the jaws where a held block's centre sits) is inside that box; the miss
  distance is the distance from the site to the box (0 inside).
* admissible configuration: joints within their ranges, and no contact deeper than 1 mm between a
  moving link of the searched arm and the table, either arm's base (the rig) or its own links.
  Contacts with the block, the tray and the other arm's moving links are ignored: those could move
  out of the way, so ignoring them favours the far arm, which is the side the claim must survive.
"""
from __future__ import annotations

import os
import time

import mujoco
import numpy as np
import pytest

from robogym_ros.task import scene

MODEL_PATH = os.path.join(
    os.path.dirname(__file__), "..", "..", "robogym_ros", "task", "models", "so101_dual.xml")
PENETRATION_LIMIT_M = 0.001
FAR_MISS_MIN_M = 0.010  # robogym's far arm missed by 19 mm; keep at least 10 mm
NEAR_REACH_TOL_M = 0.002

# The published SO-101 servo ranges (the public arm model), independent of the MJCF.
CTRLRANGE_RAD = {
    "shoulder_pan": (-1.91986, 1.91986),
    "shoulder_lift": (-1.74533, 1.74533),
    "elbow_flex": (-1.69, 1.69),
    "wrist_flex": (-1.658063, 1.658063),
    "wrist_roll": (-2.74385, 2.84121),
    "gripper": (-0.174533, 1.745329),
}

# reset_scene draws for these seeds (checked in test_reach_seeds_cover_every_case).
SEED_CASES = {0: ("right", True), 1: ("left", True), 2: ("right", False), 11: ("left", False)}


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_path(MODEL_PATH)


def _other(side: str) -> str:
    return "right" if side == "left" else "left"


# ---------------------------------------------------------------------------------------------
# model

def test_model_has_servos_joints_and_cameras(model):
    assert scene.is_dual_arm_scene(model)
    assert model.nu == 12
    assert tuple(model.actuator(i).name for i in range(12)) == scene.JOINT_NAMES
    hinge_names = [model.joint(j).name for j in range(model.njnt)
                   if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    assert tuple(hinge_names) == scene.JOINT_NAMES
    for i, name in enumerate(scene.JOINT_NAMES):
        joint = name.split("_", 1)[1]
        np.testing.assert_allclose(model.actuator_ctrlrange[i], CTRLRANGE_RAD[joint], atol=1e-9)
        assert model.actuator_trnid[i, 0] == model.joint(name).id
        assert model.actuator_gainprm[i, 0] == pytest.approx(998.22)
        np.testing.assert_allclose(model.actuator_biasprm[i, :3], [0, -998.22, -2.731])
        np.testing.assert_allclose(model.actuator_forcerange[i], [-2.94, 2.94])
        assert model.actuator_forcelimited[i]
        assert model.dof_damping[model.joint(name).dofadr[0]] == pytest.approx(0.60)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    for side, sign in (("left", 1), ("right", -1)):
        assert data.body(f"{side}_shoulder").xpos[:2] == pytest.approx([0.0, sign * scene.ARM_Y_M])
    for cam in ("left_wrist", "right_wrist", "overhead"):
        assert model.cam(cam).fovy[0] == pytest.approx(60.0)
    for name in ("block_free", "tray_free"):
        assert model.joint(name).type[0] == mujoco.mjtJoint.mjJNT_FREE
    assert model.geom("block").size * 2 == pytest.approx([0.025, 0.025, 0.05])
    assert model.body("block").mass[0] == pytest.approx(0.030)
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC


def test_is_dual_arm_scene_rejects_other_models():
    other = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='block'><freejoint/><geom size='.01'/></body>"
        "</worldbody></mujoco>")
    assert not scene.is_dual_arm_scene(other)


# ---------------------------------------------------------------------------------------------
# reset

def test_reset_is_reproducible_and_varies(model):
    d1, d2 = mujoco.MjData(model), mujoco.MjData(model)
    draws = []
    for seed in range(20):
        info1 = scene.reset_scene(model, d1, np.random.default_rng(seed))
        info2 = scene.reset_scene(model, d2, np.random.default_rng(seed))
        assert info1 == info2
        np.testing.assert_array_equal(d1.qpos, d2.qpos)
        draws.append(info1)
    assert {d["block_side"] for d in draws} == {"left", "right"}
    assert {d["block_upright"] for d in draws} == {True, False}
    assert len({round(d["block_yaw"], 6) for d in draws}) == 20


def test_reset_folds_arms_and_places_objects_on_opposite_sides(model):
    data = mujoco.MjData(model)
    folded = scene.folded_pose()
    assert set(folded) == set(scene.JOINT_NAMES)
    for seed in range(40):
        data.time = 12.3
        info = scene.reset_scene(model, data, np.random.default_rng(seed))
        assert data.time == 0.0
        for name, q in folded.items():
            assert data.joint(name).qpos[0] == q
            assert data.actuator(name).ctrl[0] == q
        block_y, tray_y = data.body("block").xpos[1], data.body("tray").xpos[1]
        assert np.sign(block_y) == (1 if info["block_side"] == "left" else -1)
        assert np.sign(tray_y) == -np.sign(block_y)
        # Upright: the block's long (z) axis is vertical; lying: horizontal.
        long_axis_z = abs(data.body("block").xmat.reshape(3, 3)[2, 2])
        assert long_axis_z == pytest.approx(1.0 if info["block_upright"] else 0.0, abs=1e-9)
        # Resting: only object-table contacts, touching but not sinking in.
        table = model.geom("table").id
        objects = {model.body(b).id for b in scene.OBJECT_BODIES}
        for c in data.contact[:data.ncon]:
            g1, g2 = c.geom
            assert table in (g1, g2), (model.geom(g1).name, model.geom(g2).name)
            assert model.geom_bodyid[g1 if g2 == table else g2] in objects
            assert abs(c.dist) < 1e-6
        lowest_m = [_box_corners(model, data, g)[:, 2].min() for g in ("block", "tray_base")]
        np.testing.assert_allclose(lowest_m, 0.0, atol=1e-9)


@pytest.mark.parametrize("seed", [1, 11])  # one upright, one lying
def test_folded_hold_is_stable_for_5s(model, seed):
    data = mujoco.MjData(model)
    info = scene.reset_scene(model, data, np.random.default_rng(seed))
    arm_adr = np.array([model.joint(n).qposadr[0] for n in scene.JOINT_NAMES])
    q0 = data.qpos.copy()
    start = {b: data.body(b).xpos.copy() for b in scene.OBJECT_BODIES}
    worst_arm_rad = 0.0
    while data.time < 5.0:
        mujoco.mj_step(model, data)
        worst_arm_rad = max(worst_arm_rad, np.abs(data.qpos[arm_adr] - q0[arm_adr]).max())
    warnings = {mujoco.mjtWarning(i).name: data.warning[i].number
                for i in range(len(data.warning)) if data.warning[i].number}
    assert not warnings, warnings
    assert worst_arm_rad < 0.02
    for body, pos in start.items():
        drift_m = np.linalg.norm(data.body(body).xpos - pos)
        assert drift_m < 0.001, (info, body, drift_m)


# ---------------------------------------------------------------------------------------------
# cameras

def _project(model, data, cam: str, point, width=640, height=480):
    """Pixel (u, v) and depth of a world point in a pinhole camera with the model's fovy."""
    c = data.cam(cam)
    local = c.xmat.reshape(3, 3).T @ (np.asarray(point) - c.xpos)
    depth = -local[2]  # MuJoCo cameras look along their local -z
    f_px = 0.5 * height / np.tan(np.deg2rad(model.cam(cam).fovy[0]) / 2)
    return width / 2 + f_px * local[0] / depth, height / 2 - f_px * local[1] / depth, depth


def _in_view(model, data, cam, point):
    u, v, depth = _project(model, data, cam, point)
    return depth > model.vis.map.znear * model.stat.extent and 0 <= u <= 640 and 0 <= v <= 480


def _box_corners(model, data, geom: str):
    g = model.geom(geom)
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    return data.geom(geom).xpos + (signs * g.size) @ data.geom(geom).xmat.reshape(3, 3).T


def test_overhead_camera_sees_arms_and_objects(model):
    data = mujoco.MjData(model)
    for seed in SEED_CASES:
        scene.reset_scene(model, data, np.random.default_rng(seed))
        points = [*_box_corners(model, data, "block")]
        for wall in ("tray_wall_px", "tray_wall_nx", "tray_wall_py", "tray_wall_ny"):
            points += [*_box_corners(model, data, wall)]
        for side in scene.SIDES:
            points += [data.site(f"{side}_grasp").xpos, data.body(f"{side}_base").xpos,
                       data.body(f"{side}_lower_arm").xpos, data.body(f"{side}_wrist").xpos]
        assert all(_in_view(model, data, "overhead", p) for p in points)


def test_wrist_cameras_see_jaw_tips_and_grasp_point(model):
    data = mujoco.MjData(model)
    scene.reset_scene(model, data, np.random.default_rng(0))
    for side in scene.SIDES:
        # Arm raised, gripper open 0.5 rad (a 46 mm gap at the tips, room for the block).
        for joint, q in zip(scene.ARM_JOINTS, (0.0, 0.2, 0.3, 0.5, 0.4, 0.5)):
            data.joint(f"{side}_{joint}").qpos = q
        mujoco.mj_forward(model, data)
        cam = f"{side}_wrist"
        along_jaws = data.body(f"{side}_gripper").xmat.reshape(3, 3)[:, 0]
        tips = []
        for jaw in ("fixed_jaw", "moving_jaw_finger"):
            corners = _box_corners(model, data, f"{side}_{jaw}")
            tips += [*corners[np.argsort(corners @ along_jaws)[-4:]]]  # the fingertip face
        site = data.site(f"{side}_grasp").xpos
        assert all(_in_view(model, data, cam, p) for p in [*tips, site])
        # Clear line of sight from the lens to the grasp point (the lens is not inside its mount).
        ray = site - data.cam(cam).xpos
        hit_geom = np.array([-1], dtype=np.int32)
        hit_m = mujoco.mj_ray(model, data, data.cam(cam).xpos, ray / np.linalg.norm(ray),
                              None, 1, -1, hit_geom)
        assert hit_m < 0 or hit_m > np.linalg.norm(ray), model.geom(hit_geom[0]).name


# ---------------------------------------------------------------------------------------------
# forced handover: which arm can reach the block

class ReachSearch:
    """Closest approach of one arm's grasp site to the block, over admissible configurations."""

    def __init__(self, model, data, side: str):
        self.model, self.data = model, mujoco.MjData(model)
        self.data.qpos[:] = data.qpos  # block placed, other arm folded
        mujoco.mj_kinematics(model, self.data)
        jids = [model.joint(f"{side}_{j}").id for j in scene.ARM_JOINTS]
        self.qadr = model.jnt_qposadr[jids]
        self.lo_rad, self.hi_rad = model.jnt_range[jids].T
        moving = {side: [], _other(side): []}
        for b in range(model.nbody):
            name = model.body(b).name
            for s in moving:
                if name.startswith(s + "_") and not name.endswith("_base"):
                    moving[s].append(b)
        self.is_arm = np.zeros(model.nbody, bool)
        self.is_arm[moving[side]] = True
        self.is_ignored = np.zeros(model.nbody, bool)
        objects = [model.body(b).id for b in scene.OBJECT_BODIES]
        self.is_ignored[moving[_other(side)] + objects] = True
        self.site = model.site(f"{side}_grasp").id
        block = model.body("block").id
        self.block_pos_m = self.data.xpos[block].copy()
        self.block_rot = self.data.xmat[block].reshape(3, 3).copy()
        self.block_half_m = model.geom("block").size.copy()

    def miss_m(self, q) -> float:
        self.data.qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        local = self.block_rot.T @ (self.data.site_xpos[self.site] - self.block_pos_m)
        return float(np.linalg.norm(local - np.clip(local, -self.block_half_m, self.block_half_m)))

    def admissible(self) -> bool:
        """For the configuration of the last miss_m call."""
        mujoco.mj_collision(self.model, self.data)
        n = self.data.ncon
        bodies = self.model.geom_bodyid[self.data.contact.geom[:n]]
        arm, ignored = self.is_arm[bodies], self.is_ignored[bodies]
        counted = (arm[:, 0] & ~ignored[:, 1]) | (arm[:, 1] & ~ignored[:, 0])
        return not np.any(counted & (self.data.contact.dist[:n] < -PENETRATION_LIMIT_M))

    def search(self, rng, n_samples=3000, n_starts=6, n_random_dirs=6):
        """Uniform samples, then pattern search (axes + random directions) from the best few."""
        samples = rng.uniform(self.lo_rad, self.hi_rad, size=(n_samples, len(self.qadr)))
        misses = np.array([self.miss_m(q) for q in samples])
        starts = []
        for i in np.argsort(misses):
            self.miss_m(samples[i])
            if self.admissible():
                starts.append(samples[i])
                if len(starts) == n_starts:
                    break
        best_m, best_q = np.inf, None
        axes = [s * e for e in np.eye(len(self.qadr)) for s in (1.0, -1.0)]
        for q in starts:
            miss, step_rad = self.miss_m(q), 0.2
            # Random directions let the search slide along a contact or joint limit, where a
            # single-joint move would be rejected.
            while step_rad > 2e-4 and miss > 0.0:
                improved = False
                dirs = axes + list(rng.normal(size=(n_random_dirs, len(self.qadr))))
                for v in dirs:
                    q_try = np.clip(q + step_rad * v / np.linalg.norm(v), self.lo_rad, self.hi_rad)
                    miss_try = self.miss_m(q_try)
                    if miss_try < miss - 1e-7 and self.admissible():
                        q, miss, improved = q_try, miss_try, True
                if not improved:
                    step_rad /= 2
            if miss < best_m:
                best_m, best_q = miss, q
        return best_m, best_q

    def kinematic_bound_m(self) -> float:
        """Lower bound on the miss from link lengths alone (no collisions, no joint limits)."""
        m, d = self.model, self.data
        side = m.site(self.site).name.split("_")[0]
        shoulder = m.body(f"{side}_shoulder")
        # The lift axis point circles the pan axis; past it, the chain is at most this long.
        lift_offset = m.body(f"{side}_upper_arm").pos
        chain_m = np.linalg.norm(m.site(self.site).pos) + sum(
            np.linalg.norm(m.body(f"{side}_{b}").pos) for b in ("lower_arm", "wrist", "gripper"))
        pan_xyz = d.xpos[shoulder.id]
        radius_m, height_m = np.linalg.norm(lift_offset[:2]), pan_xyz[2] + lift_offset[2]
        # The block on a 1 mm grid (the bound is then good to ~1 mm). Pan axis is vertical.
        axes = [np.linspace(-h, h, int(round(2 * h / 0.001)) + 1) for h in self.block_half_m]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
        points = self.block_pos_m + grid @ self.block_rot.T
        rho = np.linalg.norm(points[:, :2] - pan_xyz[:2], axis=1)
        to_circle_m = np.hypot(rho - radius_m, points[:, 2] - height_m)
        return float(to_circle_m.min() - chain_m)


def _scene_for_case(model, case):
    data = mujoco.MjData(model)
    kind, value = case
    if kind == "seed":
        info = scene.reset_scene(model, data, np.random.default_rng(value))
        return data, info["block_side"], info
    # Worst yaw: the block yawed so that it comes closest to the far arm (smallest bound).
    side, upright = value
    scene.reset_scene(model, data, np.random.default_rng(0))
    best = None
    for yaw in np.linspace(-np.pi, np.pi, 48, endpoint=False):
        scene.place_objects(model, data, side, upright, float(yaw), 0.0)
        mujoco.mj_kinematics(model, data)
        bound = ReachSearch(model, data, _other(side)).kinematic_bound_m()
        if best is None or bound < best[0]:
            best = (bound, float(yaw))
    scene.place_objects(model, data, side, upright, best[1], 0.0)
    mujoco.mj_forward(model, data)
    return data, side, {"block_side": side, "block_upright": upright, "block_yaw": best[1]}


REACH_CASES = [("seed", s) for s in SEED_CASES] + [
    ("worst_yaw", (side, upright)) for side in scene.SIDES for upright in (True, False)]


def test_reach_seeds_cover_every_case(model):
    data = mujoco.MjData(model)
    for seed, (side, upright) in SEED_CASES.items():
        info = scene.reset_scene(model, data, np.random.default_rng(seed))
        assert (info["block_side"], info["block_upright"]) == (side, upright)


def far_arm_miss_m(model, data, block_side: str) -> tuple[float, float]:
    """(searched miss, kinematic lower bound) of the arm on the other side."""
    search = ReachSearch(model, data, _other(block_side))
    miss_m, _ = search.search(np.random.default_rng(0))
    return miss_m, search.kinematic_bound_m()


@pytest.mark.parametrize("case", REACH_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_far_arm_cannot_reach_block(model, case):
    data, block_side, info = _scene_for_case(model, case)
    t0 = time.perf_counter()
    miss_m, bound_m = far_arm_miss_m(model, data, block_side)
    print(f"\n{case}: block {info['block_side']} upright={info['block_upright']} "
          f"yaw={info['block_yaw']:+.2f}: far arm misses by {miss_m * 1e3:.1f} mm "
          f"(link-length bound {bound_m * 1e3:.1f} mm, {time.perf_counter() - t0:.2f} s)")
    assert miss_m > FAR_MISS_MIN_M
    # The search cannot beat geometry: a smaller miss than the bound means broken kinematics.
    assert miss_m >= bound_m - 0.001


@pytest.mark.parametrize("case", REACH_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_near_arm_reaches_block(model, case):
    data, block_side, _ = _scene_for_case(model, case)
    search = ReachSearch(model, data, block_side)
    miss_m, q = search.search(np.random.default_rng(0))
    assert miss_m <= NEAR_REACH_TOL_M
    # The configuration found really is admissible.
    search.miss_m(q)
    assert search.admissible()
