"""The standard entity services (simulation_interfaces) of the sim node: GetEntities,
GetEntityInfo, GetEntityState, GetEntitiesStates and SetEntityState.

The entities are robogym_ros.sim.entities': the arms (named by their root link), the free
bodies (block, tray) and the cameras. States come from the physics process at the moment
of the call, stamped with its sim time, in ``world``; the free bodies' poses are the numbers
ground truth publishes. SetEntityState moves a free body at once: the next tick's ground truth
and joint_states show it; while paused, that is the tick the next step makes.
"""
from __future__ import annotations

import re

import mujoco
import numpy as np
from simulation_interfaces.msg import Bounds, EntityCategory, EntityState, Result, TagsFilter
from simulation_interfaces.srv import GetEntities, GetEntitiesStates, GetEntityInfo, GetEntityState, SetEntityState

from robogym_ros.contract import WORLD_FRAME, optical_frame
from robogym_ros.nodes.sim_node.simulation_interfaces.common import Refused, serve
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.sim import entities as ent
from robogym_ros.sim.process import SimProcess

CATEGORIES = {ent.ROBOT: EntityCategory.CATEGORY_ROBOT, ent.OBJECT: EntityCategory.CATEGORY_OBJECT,
              ent.STATIC_OBJECT: EntityCategory.CATEGORY_STATIC_OBJECT}


BOUNDS_TYPES = {Bounds.TYPE_EMPTY: "TYPE_EMPTY", Bounds.TYPE_BOX: "TYPE_BOX",
                Bounds.TYPE_CONVEX_HULL: "TYPE_CONVEX_HULL", Bounds.TYPE_SPHERE: "TYPE_SPHERE"}


def scene_frames(model: mujoco.MjModel) -> frozenset[str]:
    """Every frame name of the scene: its links (MuJoCo bodies, as the URDF and TF name them),
    entities and camera optical frames."""
    bodies = (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(model.nbody))
    cameras = (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam))
    names = {b for b in bodies if b} | set(ent.SceneEntities(model).names)
    return frozenset(names | {optical_frame(c) for c in cameras if c})


class EntityServices:
    """The entity services; every answer carries a standard Result and changes nothing if refused."""

    def __init__(self, node, sim: SimProcess, model_path: str):
        self._sim = sim
        model = mujoco.MjModel.from_xml_path(model_path)
        self.scene = ent.SceneEntities(model)  # the names, kinds, tags
        self.frames = scene_frames(model)
        for srv, name, callback in (
                (GetEntities, "get_entities", self._get_entities),
                (GetEntityInfo, "get_entity_info", self._get_info),
                (GetEntityState, "get_entity_state", self._get_state),
                (GetEntitiesStates, "get_entities_states", self._get_states),
                (SetEntityState, "set_entity_state", self._set_state)):
            node.create_service(srv, f"~/{name}", callback)

    # --- lookup and filters -------------------------------------------------------------------
    def _index(self, name: str) -> int:
        try:
            self.scene.get(name)
        except ent.UnknownEntity as exc:
            raise Refused(Result.RESULT_NOT_FOUND, str(exc)) from None
        return self.scene.names.index(name)

    def _matching(self, filters) -> list[int]:
        """Indices of the entities that pass every filter given (name, categories, tags, bounds)."""
        overlaps = overlap_test(filters.bounds)
        try:
            pattern = re.compile(filters.filter)
        except re.error as exc:
            raise Refused(Result.RESULT_OPERATION_FAILED,
                          f"filters.filter {filters.filter!r} is not a regular expression: {exc}") from None
        categories = {c.category for c in filters.categories}
        known = set(CATEGORIES.values()) | {EntityCategory.CATEGORY_HUMAN, EntityCategory.CATEGORY_DYNAMIC_OBJECT}
        if categories - known:
            raise Refused(Result.RESULT_OPERATION_FAILED, f"unknown categories {sorted(categories - known)}")
        tags, mode = set(filters.tags.tags), filters.tags.filter_mode
        if mode not in (TagsFilter.FILTER_MODE_ANY, TagsFilter.FILTER_MODE_ALL):
            raise Refused(Result.RESULT_OPERATION_FAILED, f"filters.tags.filter_mode {mode} is neither "
                          "FILTER_MODE_ANY (0) nor FILTER_MODE_ALL (1)")
        boxes = self._sim.entity_bounds() if overlaps is not None else None
        out = []
        for i, e in enumerate(self.scene.entities):
            if boxes is not None and not overlaps(boxes[i, :3], boxes[i, 3:]):
                continue
            if not pattern.search(e.name):
                continue
            if categories and CATEGORIES[e.kind] not in categories:
                continue
            if tags and not (tags <= set(e.tags) if mode == TagsFilter.FILTER_MODE_ALL else tags & set(e.tags)):
                continue
            out.append(i)
        return out

    def _states(self) -> tuple[int, np.ndarray]:
        return self._sim.entity_states()

    # --- services -------------------------------------------------------------------------------
    def _get_entities(self, request, response):
        def get():
            response.entities = [self.scene.names[i] for i in self._matching(request.filters)]
        return serve(response, get)

    def _get_info(self, request, response):
        def get():
            e = self.scene.entities[self._index(request.entity)]
            response.info.category.category = CATEGORIES[e.kind]
            response.info.description = e.description
            response.info.tags = list(e.tags)
        return serve(response, get)

    def _get_state(self, request, response):
        def get():
            i = self._index(request.entity)
            time_ns, rows = self._states()
            response.state = entity_state(rows[i], time_ns)
        return serve(response, get)

    def _get_states(self, request, response):
        def get():
            chosen = self._matching(request.filters)
            time_ns, rows = self._states()
            response.entities = [self.scene.names[i] for i in chosen]
            response.states = [entity_state(rows[i], time_ns) for i in chosen]
        return serve(response, get)

    def _set_state(self, request, response):
        def set_state():
            name, state = request.entity, request.state
            self._index(name)
            frame = state.header.frame_id
            if frame not in ("", WORLD_FRAME):
                if frame in self.frames:  # a frame there is, that this sim does not set states in
                    raise Refused(Result.RESULT_FEATURE_UNSUPPORTED, f"state.header.frame_id {frame!r}: "
                                  f"states are set in {WORLD_FRAME!r} (or '') only, not relative to a link")
                raise Refused(Result.RESULT_NOT_FOUND, f"state.header.frame_id {frame!r} is no frame of this "
                              f"sim (its links, entities and camera optical frames); states are set in "
                              f"{WORLD_FRAME!r} (or '')")
            try:  # the acceleration is ignored, as the standard allows
                self._sim.set_entity_state(name, state_row(state))
            except ent.EntityNotMovable as exc:
                raise Refused(Result.RESULT_OPERATION_FAILED, str(exc)) from None
            except ent.InvalidEntityState as exc:
                raise Refused(SetEntityState.Response.INVALID_POSE, str(exc)) from None
        return serve(response, set_state)


def overlap_test(bounds):
    """None for empty bounds, else a test (lower, upper) -> bool of whether an entity's world
    axis-aligned box overlaps them; Refused for bounds that are not a sphere or a box."""
    points = np.array([[p.x, p.y, p.z] for p in bounds.points], dtype=np.float64).reshape(-1, 3)
    if bounds.type == Bounds.TYPE_EMPTY:
        if len(points):
            raise Refused(Result.RESULT_OPERATION_FAILED, f"filters.bounds is TYPE_EMPTY but has {len(points)} points")
        return None
    if bounds.type not in BOUNDS_TYPES:  # not a type of the standard: a bad request, not a missing feature
        raise Refused(Result.RESULT_OPERATION_FAILED, f"filters.bounds type {bounds.type} is no Bounds type "
                      f"({', '.join(f'{n} ({t})' for t, n in BOUNDS_TYPES.items())})")
    if bounds.type not in (Bounds.TYPE_SPHERE, Bounds.TYPE_BOX):
        raise Refused(Result.RESULT_FEATURE_UNSUPPORTED, f"filters.bounds type {bounds.type}: only TYPE_SPHERE (3) "
                      "and TYPE_BOX (1) are supported here")
    if len(points) != 2 or not np.isfinite(points).all():
        raise Refused(Result.RESULT_OPERATION_FAILED, "filters.bounds needs 2 finite points (a sphere: centre, "
                      f"then radius in x; a box: two opposite corners), got {points.tolist()}")
    if bounds.type == Bounds.TYPE_SPHERE:
        centre, radius = points[0], points[1, 0]
        if radius < 0:
            raise Refused(Result.RESULT_OPERATION_FAILED, f"filters.bounds sphere radius {radius:g} < 0")
        # The box's nearest point to the centre is within the radius.
        return lambda lower, upper: float(np.sum((np.clip(centre, lower, upper) - centre) ** 2)) <= radius ** 2
    low, high = points.min(axis=0), points.max(axis=0)
    return lambda lower, upper: bool(np.all(lower <= high) and np.all(low <= upper))


def state_row(state) -> list[float]:
    """An EntityState as a row of robogym_ros.sim.entities (pose in POSE_LAYOUT, then twist)."""
    p, o, lin, ang = state.pose.position, state.pose.orientation, state.twist.linear, state.twist.angular
    return [p.x, p.y, p.z, o.w, o.x, o.y, o.z, lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]


def entity_state(row, time_ns: int) -> EntityState:
    """A row of robogym_ros.sim.entities (pose, twist, acceleration) as an EntityState in ``world``."""
    msg = EntityState()
    msg.header.stamp = stamp_msg(time_ns)
    msg.header.frame_id = WORLD_FRAME
    x, y, z, qw, qx, qy, qz, vx, vy, vz, wx, wy, wz, ax, ay, az, bx, by, bz = (float(v) for v in row)
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z, o.w, o.x, o.y, o.z = x, y, z, qw, qx, qy, qz
    lin, ang = msg.twist.linear, msg.twist.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = vx, vy, vz, wx, wy, wz
    lin, ang = msg.acceleration.linear, msg.acceleration.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = ax, ay, az, bx, by, bz
    return msg
