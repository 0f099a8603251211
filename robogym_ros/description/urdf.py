"""A URDF of a loaded MJCF model: what robot_state_publisher and RViz need, from MuJoCo itself.

Every MuJoCo body becomes a link of the same name whose frame *is* the body frame, so a
link's pose from the URDF's forward kinematics equals MuJoCo's ``xpos``/``xquat`` (the
tests check 100 random configurations with Pinocchio's URDF parser). Hinge joints become
``revolute`` (``continuous`` when unlimited), slide joints ``prismatic``, bodies without a
joint ``fixed`` joints named ``<parent>_to_<child>``.

MuJoCo rotates a body about an axis through the joint's anchor (``jnt_pos``) and measures
the angle from ``qpos0`` (the joint's ``ref``); a URDF joint rotates its child about the
child's origin from zero. Both differences go into the joint's origin: the origin is moved
to the anchor and turned back by ``ref``, and where the anchor is off the body origin the
joint drives an auxiliary link ``<body>__<joint>`` that carries the body back by
``-jnt_pos`` on a fixed joint. A body with several joints chains them the same way, in
MuJoCo's order.

Bodies moved by a free joint (the block, the tray) are not part of the robot: their pose
is known only to the sim, which publishes it on /tf. :func:`objects_urdf` describes them
for RViz alone, each on a ``floating`` joint from ``world``; robot_state_publisher must not
be given it (older versions turn a floating joint into a fixed one and would publish it).

Visuals are the primitive geoms MuJoCo renders by default (groups 0-2): box, sphere,
cylinder, capsule (a cylinder and two spheres: URDF has no capsule), plane (a thin box),
with their colours; meshes, height fields and ellipsoids are left out (a comment says so).
MJCF has no joint velocity limit, so ``velocity`` in ``<limit>`` is the placeholder
``velocity_limit``; robot_state_publisher and RViz do not read limits.

mujoco, numpy and the standard library only: the physics tier imports this.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any, Mapping

import mujoco
import numpy as np

from robogym_ros.contract import WORLD_FRAME
from robogym_ros.params import SIM
from robogym_ros.task.scene import default_model_path

DEFAULT_VELOCITY_LIMIT = 10.0  # rad/s or m/s; a placeholder, see the module docstring
_UNLIMITED_SLIDE_M = 1e3  # URDF prismatic joints need limits; MJCF may have none
_DEFAULT_GEOM_RGBA = (0.5, 0.5, 0.5, 1.0)  # MuJoCo's: a material's colour shows through it
_VISIBLE_GROUPS = range(3)  # what mjv_defaultOption renders
_PLANE_THICKNESS_M = 0.001
_J = mujoco.mjtJoint
_G = mujoco.mjtGeom


# --- small pure helpers ----------------------------------------------------------------------
def _num(x: float) -> str:
    # repr round-trips a float exactly: the URDF carries MuJoCo's numbers, not rounded ones.
    x = float(x)
    return "0" if x == 0.0 else repr(x)


def _vec(values) -> str:
    return " ".join(_num(v) for v in values)


def quat_to_matrix(quat_wxyz) -> np.ndarray:
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat_wxyz, dtype=np.float64))
    return mat.reshape(3, 3)


def matrix_to_rpy(R: np.ndarray) -> tuple[float, float, float]:
    """URDF's fixed-axis roll, pitch, yaw (R = Rz(yaw) Ry(pitch) Rx(roll)).

    Pitch from atan2 rather than asin: asin loses half the digits near +-90 degrees.
    """
    cos_pitch = math.hypot(R[0, 0], R[1, 0])
    pitch = math.atan2(-R[2, 0], cos_pitch)
    # At gimbal lock only roll - yaw is defined: put it all in roll. The threshold balances the
    # two formulas' errors (eps / cos_pitch against cos_pitch): at most ~1e-8 rad either way.
    if cos_pitch < 1e-8:
        return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0
    return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])


def _transform(pos, quat_wxyz) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(quat_wxyz)
    T[:3, 3] = pos
    return T


def _translation(xyz) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = xyz
    return T


def _axis_angle(axis, angle: float) -> np.ndarray:
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, dtype=np.float64), float(angle))
    return _transform(np.zeros(3), quat)


def _origin(parent: ET.Element, T: np.ndarray) -> None:
    if np.allclose(T, np.eye(4), rtol=0.0, atol=0.0):
        return
    ET.SubElement(parent, "origin", xyz=_vec(T[:3, 3]), rpy=_vec(matrix_to_rpy(T[:3, :3])))


# --- the model, read once ----------------------------------------------------------------------
def body_name(model: mujoco.MjModel, body: int) -> str:
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or f"body{body}"


def _joint_name(model: mujoco.MjModel, j: int) -> str:
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"


def _model_name(model: mujoco.MjModel) -> str:
    raw = bytes(model.names)
    return raw[:raw.index(b"\0")].decode() or "mujoco_model"


def _joints_of(model: mujoco.MjModel, body: int) -> list[int]:
    start, n = int(model.body_jntadr[body]), int(model.body_jntnum[body])
    return list(range(start, start + n)) if start >= 0 else []


def free_bodies(model: mujoco.MjModel) -> list[int]:
    """Bodies moved by a free joint: their pose is the sim's to publish (world -> body)."""
    return [b for b in range(1, model.nbody)
            if any(int(model.jnt_type[j]) == int(_J.mjJNT_FREE) for j in _joints_of(model, b))]


def _carried_by_free_joint(model: mujoco.MjModel, body: int, free: set[int]) -> bool:
    while body > 0:
        if body in free:
            return True
        body = int(model.body_parentid[body])
    return False


class _Builder:
    """One URDF document over a set of bodies, link and joint names kept unique."""

    def __init__(self, model: mujoco.MjModel, name: str, velocity_limit: float):
        self.model = model
        self.velocity_limit = float(velocity_limit)
        self.robot = ET.Element("robot", name=name)
        self.names: set[str] = set()
        self.joint_names = {_joint_name(model, j) for j in range(model.njnt)}

    def unique(self, name: str) -> str:
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def link(self, body: int, name: str | None = None) -> str:
        name = name or body_name(self.model, body)
        link = ET.SubElement(self.robot, "link", name=name)
        self.names.add(name)
        if body >= 0:
            self._inertial(link, body)
            self._visuals(link, body)
        return name

    def joint(self, name: str, kind: str, parent: str, child: str, T: np.ndarray) -> ET.Element:
        joint = ET.SubElement(self.robot, "joint", name=name, type=kind)
        _origin(joint, T)
        ET.SubElement(joint, "parent", link=parent)
        ET.SubElement(joint, "child", link=child)
        return joint

    def fixed_name(self, parent: str, child: str) -> str:
        name = f"{parent}_to_{child}"
        while name in self.joint_names or name in self.names:
            name += "_"
        self.names.add(name)
        return name

    # --- a body and the joints that carry it ---------------------------------------------------
    def attach(self, body: int, parent: str) -> None:
        """The body's link, joined to ``parent`` by its MuJoCo joints (fixed if it has none)."""
        m = self.model
        name = body_name(m, body)
        T = _transform(m.body_pos[body], m.body_quat[body])  # parent link -> body, joints at zero
        movable = [j for j in _joints_of(m, body)
                   if int(m.jnt_type[j]) in (int(_J.mjJNT_HINGE), int(_J.mjJNT_SLIDE))]
        others = [j for j in _joints_of(m, body) if j not in movable]
        if not movable:
            self.link(body)
            joint = self.joint(self.fixed_name(parent, name), "fixed", parent, name, T)
            for j in others:  # a ball joint: URDF has none; the link stays at its model pose
                joint.append(ET.Comment(f" MuJoCo joint {_joint_name(m, j)!r} (ball) held fixed "))
            return
        anchor_back = np.eye(4)
        for k, j in enumerate(movable):
            last = k == len(movable) - 1
            # A slide moves the whole body alike wherever its anchor is: only a hinge needs one.
            anchor = m.jnt_pos[j] if int(m.jnt_type[j]) == int(_J.mjJNT_HINGE) else np.zeros(3)
            # The angle is measured from qpos0 (the joint's ref): turn the origin back by it.
            ref = float(m.qpos0[m.jnt_qposadr[j]])
            origin = anchor_back @ T @ _translation(anchor) @ self._motion(j, -ref)
            needs_aux = not last or np.any(anchor != 0.0)
            child = self.unique(f"{name}__{_joint_name(m, j)}") if needs_aux else name
            if needs_aux:
                self.link(-1, child)
            self._movable_joint(j, parent, child, origin)
            parent, T, anchor_back = child, np.eye(4), _translation(-anchor)
        if np.any(anchor_back[:3, 3] != 0.0):
            self.link(body)
            self.joint(self.fixed_name(parent, name), "fixed", parent, name, anchor_back)
        elif name not in self.names:
            self.link(body)

    def _motion(self, j: int, value: float) -> np.ndarray:
        m = self.model
        if int(m.jnt_type[j]) == int(_J.mjJNT_HINGE):
            return _axis_angle(m.jnt_axis[j], value)
        return _translation(np.asarray(m.jnt_axis[j]) * value)

    def _movable_joint(self, j: int, parent: str, child: str, origin: np.ndarray) -> None:
        m = self.model
        hinge = int(m.jnt_type[j]) == int(_J.mjJNT_HINGE)
        limited = bool(m.jnt_limited[j])
        kind = ("revolute" if limited else "continuous") if hinge else "prismatic"
        joint = self.joint(_joint_name(m, j), kind, parent, child, origin)
        axis = np.asarray(m.jnt_axis[j], dtype=np.float64)
        ET.SubElement(joint, "axis", xyz=_vec(axis / np.linalg.norm(axis)))
        if kind != "continuous":
            lower, upper = (m.jnt_range[j] if limited else (-_UNLIMITED_SLIDE_M, _UNLIMITED_SLIDE_M))
            ET.SubElement(joint, "limit", lower=_num(lower), upper=_num(upper),
                          effort=_num(self._effort_limit(j)), velocity=_num(self.velocity_limit))
        dof = int(m.jnt_dofadr[j])
        ET.SubElement(joint, "dynamics", damping=_num(m.dof_damping[dof]),
                      friction=_num(m.dof_frictionloss[dof]))

    def _effort_limit(self, j: int) -> float:
        """The servo's force limit where the model has one, else 0 (unknown)."""
        m = self.model
        for a in range(m.nu):
            if (int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)
                    and int(m.actuator_trnid[a, 0]) == j and m.actuator_forcelimited[a]):
                return float(np.max(np.abs(m.actuator_forcerange[a])))
        if m.jnt_actfrclimited[j]:
            return float(np.max(np.abs(m.jnt_actfrcrange[j])))
        return 0.0

    # --- what a link carries ------------------------------------------------------------------
    def _inertial(self, link: ET.Element, body: int) -> None:
        m = self.model
        if body == 0 or m.body_mass[body] <= 0.0:
            return  # KDL rejects inertia on the root; a massless body has none to give
        inertial = ET.SubElement(link, "inertial")
        _origin(inertial, _transform(m.body_ipos[body], m.body_iquat[body]))
        ET.SubElement(inertial, "mass", value=_num(m.body_mass[body]))
        ixx, iyy, izz = m.body_inertia[body]
        ET.SubElement(inertial, "inertia", ixx=_num(ixx), ixy="0", ixz="0", iyy=_num(iyy), iyz="0",
                      izz=_num(izz))

    def _visuals(self, link: ET.Element, body: int) -> None:
        m = self.model
        for g in range(m.ngeom):
            if int(m.geom_bodyid[g]) != body or int(m.geom_group[g]) not in _VISIBLE_GROUPS:
                continue
            rgba = _geom_rgba(m, g)
            if rgba[3] <= 0.0:
                continue
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
            T = _transform(m.geom_pos[g], m.geom_quat[g])
            shapes = _shapes(int(m.geom_type[g]), m.geom_size[g])
            if not shapes:
                link.append(ET.Comment(f" geom {name!r}: {_G(int(m.geom_type[g])).name} has no URDF "
                                       "primitive; not drawn "))
            for k, (offset, tag, attrs) in enumerate(shapes):
                visual = ET.SubElement(link, "visual", name=name if k == 0 else f"{name}_{k}")
                _origin(visual, T @ offset)
                ET.SubElement(ET.SubElement(visual, "geometry"), tag, **attrs)
                material = ET.SubElement(visual, "material", name=f"{name}_rgba")
                # float32 in MuJoCo: six digits say all there is to say about a colour
                ET.SubElement(material, "color", rgba=" ".join(f"{v:.6g}" for v in rgba))

    def document(self) -> str:
        ET.indent(self.robot)
        return ET.tostring(self.robot, encoding="unicode", xml_declaration=True) + "\n"


def _geom_rgba(model: mujoco.MjModel, g: int) -> tuple[float, ...]:
    rgba = tuple(float(v) for v in model.geom_rgba[g])
    mat = int(model.geom_matid[g])
    if mat >= 0 and np.allclose(rgba, _DEFAULT_GEOM_RGBA):
        return tuple(float(v) for v in model.mat_rgba[mat])
    return rgba


def _shapes(kind: int, size) -> list[tuple[np.ndarray, str, dict]]:
    """(offset in the geom frame, URDF geometry tag, its attributes) for one MuJoCo geom."""
    eye = np.eye(4)
    if kind == int(_G.mjGEOM_BOX):
        return [(eye, "box", {"size": _vec(2.0 * np.asarray(size))})]
    if kind == int(_G.mjGEOM_SPHERE):
        return [(eye, "sphere", {"radius": _num(size[0])})]
    if kind == int(_G.mjGEOM_CYLINDER):
        return [(eye, "cylinder", {"radius": _num(size[0]), "length": _num(2.0 * size[1])})]
    if kind == int(_G.mjGEOM_CAPSULE):
        r, half = size[0], size[1]
        return [(eye, "cylinder", {"radius": _num(r), "length": _num(2.0 * half)}),
                (_translation((0, 0, half)), "sphere", {"radius": _num(r)}),
                (_translation((0, 0, -half)), "sphere", {"radius": _num(r)})]
    if kind == int(_G.mjGEOM_PLANE) and size[0] > 0 and size[1] > 0:
        return [(_translation((0, 0, -_PLANE_THICKNESS_M / 2)), "box",
                 {"size": _vec((2.0 * size[0], 2.0 * size[1], _PLANE_THICKNESS_M))})]
    return []


# --- the two documents -------------------------------------------------------------------------
def _children(model: mujoco.MjModel) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {b: [] for b in range(model.nbody)}
    for b in range(1, model.nbody):
        kids[int(model.body_parentid[b])].append(b)
    return kids


def robot_urdf(model: mujoco.MjModel, *, name: str | None = None,
               velocity_limit: float = DEFAULT_VELOCITY_LIMIT) -> str:
    """URDF of every body not carried by a free joint, rooted at the link ``world``.

    The joint names are MuJoCo's, so the sim's joint_states drive it in robot_state_publisher.
    """
    if body_name(model, 0) != WORLD_FRAME:
        raise ValueError(f"MuJoCo's body 0 is {body_name(model, 0)!r}, expected {WORLD_FRAME!r}")
    free = set(free_bodies(model))
    builder = _Builder(model, name or _model_name(model), velocity_limit)
    builder.robot.append(ET.Comment(
        " generated by robogym_ros.description.urdf from the MJCF the sim loaded; link frames are MuJoCo's "
        "body frames; <limit velocity> is a placeholder (MJCF has none) "))
    builder.link(0)
    kids = _children(model)
    stack = [(b, WORLD_FRAME) for b in reversed(kids[0])]
    while stack:
        body, parent = stack.pop()
        if _carried_by_free_joint(model, body, free):
            continue
        builder.attach(body, parent)
        stack.extend((c, body_name(model, body)) for c in reversed(kids[body]))
    return builder.document()


def objects_urdf(model: mujoco.MjModel, *, name: str | None = None,
                 velocity_limit: float = DEFAULT_VELOCITY_LIMIT) -> str | None:
    """URDF of the free bodies (and what they carry) for RViz's RobotModel, or None if none.

    Each free body hangs from ``world`` on a ``floating`` joint: RViz draws each link where
    TF puts it, and the sim publishes world -> body on /tf. Not for robot_state_publisher.
    """
    free = free_bodies(model)
    if not free:
        return None
    builder = _Builder(model, name or f"{_model_name(model)}_objects", velocity_limit)
    builder.robot.append(ET.Comment(
        " the bodies on free joints, for RViz: their poses come from the sim's /tf (world -> body) "))
    builder.link(-1, WORLD_FRAME)
    kids = _children(model)
    for body in free:
        link = builder.link(body)
        free_joint = next(j for j in _joints_of(model, body) if int(model.jnt_type[j]) == int(_J.mjJNT_FREE))
        builder.joint(_joint_name(model, free_joint), "floating", WORLD_FRAME, link, np.eye(4))
        stack = [(c, link) for c in reversed(kids[body])]
        while stack:
            child, parent = stack.pop()
            builder.attach(child, parent)
            stack.extend((c, body_name(model, child)) for c in reversed(kids[child]))
    return builder.document()


def robot_urdf_of_file(model_path: str) -> str:
    """:func:`robot_urdf` of an MJCF file ("" = the built-in scene)."""
    return robot_urdf(mujoco.MjModel.from_xml_path(model_path or default_model_path()))


def robot_urdf_of_parameters(parameters: Mapping[str, Any]) -> str:
    """The URDF of the model the sim loads with these parameters (robogym_ros.params names):
    what the launch files give robot_state_publisher, identical to what the sim publishes."""
    return robot_urdf_of_file(str(parameters.get(SIM["model"].name) or ""))
