"""The scene's entities, as the ROS simulation API (simulation_interfaces) names them: what
each is, where it is and how fast it moves, in ``world``; and moving a free body.

- robots: each body hanging from the world with joints below it and no free joint (the
  two arms, named by their root link: ``left_base``, ``right_base``); pose = that link;
- objects: each body with a free joint (``block``, ``tray``), the only ones whose state may
  be set; pose = the free joint's position and quaternion, the numbers ground truth publishes;
- cameras: every camera of the model, pose = its ``<camera>_optical_frame`` (REP 103).

A state is one row of 13 numbers: the pose (contract.POSE_LAYOUT: x y z qw qx qy qz, m) and
the twist (vx vy vz wx wy wz: m/s and rad/s, both in world axes, of the entity's frame origin);
read back, 6 more: the acceleration (m/s^2, rad/s^2, world axes) of forward dynamics at that state.
Everything but the free bodies' pose and twist is computed on a scratch MjData given the live
one's whole integration state: the live one is only read, so the next physics step is the same
as without the query (lockstep stays bit-identical).

mujoco + numpy only: the physics process imports this.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE, optical_frame
from robogym_ros.description.tf_frames import MJ_CAMERA_FROM_OPTICAL, camera_names

ROBOT, OBJECT, STATIC_OBJECT = "robot", "object", "static_object"  # what each entity is
TWIST_LAYOUT = ("vx", "vy", "vz", "wx", "wy", "wz")
STATE_SIZE = POSE_SIZE + len(TWIST_LAYOUT)
ACCELERATION_SIZE = 6  # linear xyz, angular xyz, world axes: the columns after a state's
# (an implicit integrator's step differs from it by the damping it treats implicitly: O(dt))
# The fields a state is read from, named as in simulation_interfaces/msg/EntityState, in the
# order of a state row: a refusal names the field that was wrong.
STATE_FIELDS = tuple(
    f"pose.position.{c}" if c in "xyz" else f"pose.orientation.{c[1]}" for c in POSE_LAYOUT
) + tuple(f"twist.{'linear' if c[0] == 'v' else 'angular'}.{c[1]}" for c in TWIST_LAYOUT)
WORLD_HALF_EXTENT_M = 10.0  # a table-top scene: a position further out than this is a mistake
# A block thrown faster than this leaves the table in one tick (10 ms at 10 m/s: 0.1 m) and a finite
# twist of 1e12 blows the scene up: such a twist is a mistake, refused like a position off the world.
MAX_LINEAR_SPEED_M_S = 10.0
MAX_ANGULAR_SPEED_RAD_S = 50.0
QUAT_NORM_TOLERANCE = 0.01  # a hand-typed unit quaternion (w: 0.707, z: 0.707) is accepted


class UnknownEntity(LookupError):
    """No entity by that name; the message lists the names there are."""


class EntityNotMovable(ValueError):
    """The entity exists, but its state cannot be set (a robot, a camera); the message says why."""


class InvalidEntityState(ValueError):
    """A state that is not a pose/twist at all (not finite, not a unit quaternion, too far)."""


@dataclass(frozen=True)
class Entity:
    """One entity: its name, what it is, its tags and a sentence saying what its pose is."""
    name: str
    kind: str  # ROBOT | OBJECT | STATIC_OBJECT
    tags: tuple[str, ...]
    description: str

    @property
    def movable(self) -> bool:
        """Its state may be set (a free body)."""
        return "movable" in self.tags


def _name(model, objtype, i: int, fallback: str) -> str:
    return mujoco.mj_id2name(model, objtype, i) or f"{fallback}{i}"


class SceneEntities:
    """The entities of one model, in a fixed order: robots, objects, cameras."""

    def __init__(self, model: mujoco.MjModel):
        self.model = model
        body = mujoco.mjtObj.mjOBJ_BODY
        free = int(mujoco.mjtJoint.mjJNT_FREE)
        self._free_adr: dict[str, tuple[int, int]] = {}  # object -> (qpos adr, dof adr)
        free_bodies = set()
        roots: dict[str, int] = {}  # robot or free body -> its root body: its geoms are those below
        for j in range(model.njnt):
            if int(model.jnt_type[j]) == free:
                b = int(model.jnt_bodyid[j])
                free_bodies.add(b)
                roots[_name(model, body, b, "body")] = b
                self._free_adr[_name(model, body, b, "body")] = (int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]))
        robots, objects, cameras = [], [], []
        self._sources: dict[str, tuple[int, int]] = {}  # name -> (mjtObj, id) for kinematics
        for b in range(1, model.nbody):
            if int(model.body_parentid[b]) != 0 or b in free_bodies:
                continue
            joints = [_name(model, mujoco.mjtObj.mjOBJ_JOINT, j, "joint") for j in range(model.njnt)
                      if int(model.body_rootid[model.jnt_bodyid[j]]) == b]
            if not joints:
                continue  # a fixed decoration (a table), not an entity anyone drives
            name = _name(model, body, b, "body")
            robots.append(Entity(name, ROBOT, ("robot", "articulated", "fixed_base"), (
                f"robot rooted at link {name}, fixed to the world; {len(joints)} joints ({', '.join(joints)}): "
                "move them with joint_commands or joint_trajectory. Pose: the link's frame in world")))
            self._sources[name] = (int(body), b)
            roots[name] = b
        for name in self._free_adr:
            objects.append(Entity(name, OBJECT, ("object", "free_body", "movable"), (
                f"free body {name}: pose and twist of its body frame in world, the numbers ground truth "
                "publishes; SetEntityState moves it")))
        for c, name in enumerate(camera_names(model)):
            parent = int(model.cam_bodyid[c])
            on = "world" if parent == 0 else _name(model, body, parent, "body")
            fixed = parent == 0 and int(model.cam_mode[c]) == int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED)
            cameras.append(Entity(name, STATIC_OBJECT if fixed else OBJECT, ("camera", "sensor"), (
                f"camera {name} on {on}; pose: its {optical_frame(name)} (REP 103: z forward, x right, "
                f"y down) in world; images, when the sim renders it, on cameras/{name}/image_raw")))
            self._sources[name] = (int(mujoco.mjtObj.mjOBJ_CAMERA), c)
        self.entities: tuple[Entity, ...] = tuple(robots + objects + cameras)
        self.names = tuple(e.name for e in self.entities)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"entity names repeat in the model: {self.names}")
        self._index = {e.name: i for i, e in enumerate(self.entities)}
        self._scratch: mujoco.MjData | None = None
        geom_root = model.body_rootid[model.geom_bodyid]
        self._geoms = {name: np.flatnonzero(geom_root == b) for name, b in roots.items()}  # cameras: none

    def get(self, name: str) -> Entity:
        try:
            return self.entities[self._index[name]]
        except KeyError:
            raise UnknownEntity(f"no entity named {name!r}; entities: {', '.join(self.names)}") from None

    def _kinematics(self, data: mujoco.MjData, *, dynamics: bool = False) -> mujoco.MjData:
        """A scratch MjData at ``data``'s state: frames and velocities done, and with ``dynamics``
        the accelerations (the same inputs as the next step: warm start, controls, applied forces)."""
        m = self.model
        if self._scratch is None:
            self._scratch = mujoco.MjData(m)
            self._state = np.empty(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION))
        s = self._scratch
        mujoco.mj_getState(m, data, self._state, mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_setState(m, s, self._state, mujoco.mjtState.mjSTATE_INTEGRATION)
        if dynamics:
            mujoco.mj_forward(m, s)
            mujoco.mj_rnePostConstraint(m, s)  # body accelerations (cacc) for mj_objectAcceleration
        else:
            for step in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_camlight, mujoco.mj_comVel):
                step(m, s)
        return s

    def bounds(self, data: mujoco.MjData) -> np.ndarray:
        """Each entity's axis-aligned box in world, (n, 6): min xyz, max xyz. It holds every geom
        of the entity (each geom's own bounding box, turned into world axes); a camera is a point."""
        s = self._kinematics(data)
        out = np.empty((len(self.entities), 6))
        for i, e in enumerate(self.entities):
            g = self._geoms.get(e.name, ())
            if len(g) == 0:
                objtype, k = self._sources[e.name]
                point = s.cam_xpos[k] if objtype == int(mujoco.mjtObj.mjOBJ_CAMERA) else s.xpos[k]
                out[i] = np.concatenate([point, point])
                continue
            rot = s.geom_xmat[g].reshape(-1, 3, 3)
            aabb = self.model.geom_aabb[g]  # centre and half sizes, in each geom's frame
            centre = s.geom_xpos[g] + np.einsum("nij,nj->ni", rot, aabb[:, :3])
            half = np.einsum("nij,nj->ni", np.abs(rot), aabb[:, 3:])
            out[i] = np.concatenate([(centre - half).min(axis=0), (centre + half).max(axis=0)])
        return out

    def states(self, data: mujoco.MjData) -> np.ndarray:
        """One row per entity (in ``entities`` order): pose, twist, then acceleration, world frame.
        Reads ``data``."""
        m = self.model
        s = self._kinematics(data, dynamics=True)
        out = np.empty((len(self.entities), STATE_SIZE + ACCELERATION_SIZE))
        velocity = np.empty(6)
        for i, e in enumerate(self.entities):
            if e.name in self._free_adr:  # straight from qpos/qvel: the same numbers as ground truth
                q, v = self._free_adr[e.name]
                pose = data.qpos[q:q + POSE_SIZE]
                rot = np.empty(9)
                mujoco.mju_quat2Mat(rot, pose[3:] / np.linalg.norm(pose[3:]))
                rot = rot.reshape(3, 3)
                # MuJoCo's free joint: linear velocity in world axes, angular in the body's axes;
                # the same for qacc (d/dt of R w is R dw/dt: w x w = 0).
                out[i] = np.concatenate([pose, data.qvel[v:v + 3], rot @ data.qvel[v + 3:v + 6],
                                         s.qacc[v:v + 3], rot @ s.qacc[v + 3:v + 6]])
                continue
            objtype, k = self._sources[e.name]
            quat = np.empty(4)
            if objtype == int(mujoco.mjtObj.mjOBJ_CAMERA):
                pos = s.cam_xpos[k]
                rot = s.cam_xmat[k].reshape(3, 3) @ MJ_CAMERA_FROM_OPTICAL
                mujoco.mju_mat2Quat(quat, rot.ravel())
            else:
                pos, quat[:] = s.xpos[k], s.xquat[k]
            out[i, :3], out[i, 3:POSE_SIZE] = pos, quat
            for column, of in ((POSE_SIZE, mujoco.mj_objectVelocity), (STATE_SIZE, mujoco.mj_objectAcceleration)):
                of(m, s, objtype, k, velocity, 0)  # [angular, linear], world axes
                out[i, column:column + 3], out[i, column + 3:column + 6] = velocity[3:], velocity[:3]
            out[i, STATE_SIZE:STATE_SIZE + 3] += m.opt.gravity  # MuJoCo's body accelerations carry -gravity
        return out

    def check_settable(self, name: str) -> Entity:
        """The entity, if its state may be set; UnknownEntity or EntityNotMovable (with why) if not."""
        entity = self.get(name)
        if not entity.movable:
            why = ("a robot fixed to the world: its base cannot move; move its joints with joint_commands "
                   "or joint_trajectory" if entity.kind == ROBOT else
                   "a camera: its pose comes from the model (and, on an arm, from the joints)")
            raise EntityNotMovable(f"{name} is {why}. Settable: {', '.join(self.settable)}")
        return entity

    @property
    def settable(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entities if e.movable)

    def set_state(self, data: mujoco.MjData, name: str, state) -> None:
        """Put a free body at ``state`` (13 numbers, world frame) at once. Checks everything
        first: a refused state changes nothing."""
        self.check_settable(name)
        state = validate_state(state)
        q, v = self._free_adr[name]
        rot = np.empty(9)
        mujoco.mju_quat2Mat(rot, state[3:POSE_SIZE])
        data.qpos[q:q + POSE_SIZE] = state[:POSE_SIZE]
        data.qvel[v:v + 3] = state[POSE_SIZE:POSE_SIZE + 3]
        data.qvel[v + 3:v + 6] = rot.reshape(3, 3).T @ state[POSE_SIZE + 3:]  # world -> body axes


def validate_state(state) -> np.ndarray:
    """A new state row with its quaternion normalised, or InvalidEntityState naming the field."""
    row = np.array(state, dtype=np.float64).ravel()
    if row.shape != (STATE_SIZE,):
        raise InvalidEntityState(f"a state is {STATE_SIZE} numbers (pose {POSE_LAYOUT}, twist "
                                 f"{TWIST_LAYOUT}), got {row.size}")
    for value, field in zip(row, STATE_FIELDS):
        if not np.isfinite(value):
            raise InvalidEntityState(f"{field} is {value}: every number of the state must be finite")
    far = np.flatnonzero(np.abs(row[:3]) > WORLD_HALF_EXTENT_M)
    if far.size:
        raise InvalidEntityState(f"{STATE_FIELDS[far[0]]} = {row[far[0]]:g} m is outside the world "
                                 f"(|x|, |y|, |z| <= {WORLD_HALF_EXTENT_M:g} m)")
    for part, bound, unit in ((slice(POSE_SIZE, POSE_SIZE + 3), MAX_LINEAR_SPEED_M_S, "m/s"),
                              (slice(POSE_SIZE + 3, STATE_SIZE), MAX_ANGULAR_SPEED_RAD_S, "rad/s")):
        speed = float(np.linalg.norm(row[part]))
        if speed > bound:
            field = STATE_FIELDS[part.start].rsplit(".", 1)[0]
            raise InvalidEntityState(f"|{field}| = {speed:g} {unit} is beyond the bound "
                                     f"(|twist.linear| <= {MAX_LINEAR_SPEED_M_S:g} m/s, "
                                     f"|twist.angular| <= {MAX_ANGULAR_SPEED_RAD_S:g} rad/s)")
    norm = float(np.linalg.norm(row[3:POSE_SIZE]))
    if abs(norm - 1.0) > QUAT_NORM_TOLERANCE:
        raise InvalidEntityState(f"pose.orientation is not a unit quaternion (norm {norm:.6g}; "
                                 f"accepted: 1 +- {QUAT_NORM_TOLERANCE:g}, then normalised)")
    row[3:POSE_SIZE] /= norm
    return row
