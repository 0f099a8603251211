"""The handover task's goal functions: goal, success, reward and stages (numpy only, pure functions).

The goal is where a lying block's centre rests at the centre of the tray as the reset placed it
(robogym_ros.task.placement.goal_of_tray), fixed for the episode. Success is the block placed:
inside the tray, resting, touching no arm, at rest, judged from the physics
(robogym_ros.task.placement). What a goal alone cannot tell (contacts, speed, where the tray has
gone since) comes from the step's ``info``, which the env fills from the physics of that step;
the goal decides only where the tray-shaped box is. So ``compute_reward(achieved, goal, info)``
for a relabelled goal (HER) asks: "had the tray stood at that goal, would the block lie in it,
released and at rest?" (the box moves with the tray: a goal is a place attached to the tray).

Every function here takes batches: ``achieved_goal`` and ``desired_goal`` of shape (..., 3),
``info`` one dict (its values broadcast), a dict of arrays (a vector env's), or an array of
dicts of the leading shape (a relabeller's), and returns an array of the leading shape (a 0-d
array for one goal), as ``gymnasium_robotics.core.GoalEnv`` asks.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from robogym_ros.task import placement

REWARD_TYPES = ("sparse", "dense", "staged")
GOAL_SIZE = 3  # x, y, z of the block's centre, world frame, m
# The staged reward's stages, as gym-aloha stages its transfer task: the highest that holds now.
# The placing arm is the one on the goal's side (y > 0: left), the other one picks.
STAGES = ("none", "reach", "grasp", "lift", "handover", "release", "place")
TOP_STAGE = len(STAGES) - 1
REACH, GRASP, LIFT, HANDOVER, RELEASE, PLACE = range(1, len(STAGES))

# The info keys the goal functions read: what the physics said about the block at that step.
FLAG_KEYS = ("left_touches_block", "right_touches_block", "left_grasps_block", "right_grasps_block",
             "block_on_tray", "block_on_table", "block_at_rest")
TRAY_QUAT_KEY = "tray_quat"
TRAY_SHIFT_KEY = "tray_shift_m"
# batch_facts: up to this many scenes, one by one beats numpy (measured: ~6.5 us a scene; numpy 73 us at 8, 80 at 16)
SCALAR_BATCH_MAX = 10
BATCH_TYPES = {"stage": np.int64, "is_success": np.float64, "distance_m": np.float64}


def goal_from_tray_pose(tray_pose: np.ndarray) -> np.ndarray:
    """Where a lying block's centre rests at the tray's centre: a new (3,) array."""
    return placement.goal_of_tray(tray_pose)


def placement_info(p: placement.Placement, tray_pose, goal) -> dict:
    """The info entries of one step's placement (Python scalars; the tray's quaternion and its
    goal's shift since the reset tuples)."""
    c = p.contacts
    return {
        "left_touches_block": c.arm[0], "right_touches_block": c.arm[1],
        "left_grasps_block": c.grasp[0], "right_grasps_block": c.grasp[1],
        "block_on_tray": c.tray, "block_on_table": c.table,
        "block_speed_m_s": p.speed_m_s, "block_turn_rad_s": p.turn_rad_s, "block_at_rest": p.at_rest,
        TRAY_QUAT_KEY: tuple(float(v) for v in tray_pose[3:7]),
        TRAY_SHIFT_KEY: tuple(placement.tray_shift(tray_pose, goal).tolist()),
    }


def step_facts(p: placement.Placement, tray_pose, goal, achieved) -> tuple[dict, bool, int]:
    """One step's :func:`placement_info`, :func:`success` and :func:`stage` from the same facts,
    each computed once (the tray's goal, the box test), in Python scalars: what a single env's
    step returns, the same numbers as the batched functions give for it."""
    c = p.contacts
    g = goal[:3] if type(goal) is list else [float(v) for v in goal[:3]]
    tray = placement.floats7(tray_pose)
    moved = placement.goal_of_tray_one(tray)
    shift = (moved[0] - g[0], moved[1] - g[1], moved[2] - g[2])
    quat = tuple(tray[3:7])
    at_rest = p.at_rest
    (touch_left, touch_right), (grasp_left, grasp_right) = c.arm, c.grasp
    info = {
        "left_touches_block": touch_left, "right_touches_block": touch_right,
        "left_grasps_block": grasp_left, "right_grasps_block": grasp_right,
        "block_on_tray": c.tray, "block_on_table": c.table,
        "block_speed_m_s": p.speed_m_s, "block_turn_rad_s": p.turn_rad_s, "block_at_rest": at_rest,
        TRAY_QUAT_KEY: quat, TRAY_SHIFT_KEY: shift,
    }
    inside = placement.inside_tray_at_one(achieved, g, shift, quat)
    placed = inside and not (touch_left or touch_right) and at_rest and (c.tray or c.table)
    return info, placed, _stage_rule(g[1] > 0, touch_left, touch_right, grasp_left, grasp_right, c.tray, c.table,
                                     inside, placed)


def goal_distance(achieved_goal, desired_goal) -> np.ndarray:
    """Euclidean distance (m) over the last axis; the arithmetic of ``np.linalg.norm(axis=-1)``."""
    a = np.asarray(achieved_goal, dtype=np.float64)
    d = np.asarray(desired_goal, dtype=np.float64)
    if a.shape[-1:] != (GOAL_SIZE,) or d.shape[-1:] != (GOAL_SIZE,):
        raise ValueError(f"goals must have {GOAL_SIZE} numbers in their last axis, "
                         f"got achieved {a.shape} and desired {d.shape}")
    diff = a - d
    return np.sqrt(np.add.reduce(diff * diff, axis=-1))


def scalar_distance(achieved_goal, desired_goal) -> float:
    """:func:`goal_distance` of one pair, in Python floats: the same value, bit for bit (the
    same products, summed in the same order, and a correctly rounded square root), ~5x faster."""
    x, y, z = achieved_goal[0] - desired_goal[0], achieved_goal[1] - desired_goal[1], achieved_goal[2] - desired_goal[2]
    return math.sqrt(float(x) * float(x) + float(y) * float(y) + float(z) * float(z))


def _info_values(info, key: str, shape: tuple[int, ...], tail: tuple[int, ...] = ()) -> np.ndarray:
    """``info[key]`` as an array of ``shape + tail``: one dict, a dict of arrays, or dicts per goal."""
    if isinstance(info, Mapping):
        if key not in info:
            raise ValueError(f"info lacks {key!r}: success needs the step's contacts and speed, which the goals "
                             f"do not hold (pass the info the env returned with that step)")
        return np.broadcast_to(np.asarray(info[key]), shape + tail)
    infos = np.asarray(info, dtype=object)
    if infos.shape != shape or not all(isinstance(i, Mapping) for i in infos.ravel()):
        raise ValueError(f"info must be the step's info dict, a dict of arrays or one dict per goal "
                         f"(goals of shape {shape}), got {type(info).__name__} of shape {infos.shape}")
    try:
        values = [i[key] for i in infos.ravel()]
    except KeyError:
        raise ValueError(f"an info lacks {key!r}: success needs the step's contacts and speed, which the goals "
                         f"do not hold") from None
    return np.array(values).reshape(shape + tail)


def _goal_shape(achieved_goal, desired_goal) -> tuple[int, ...]:
    return goal_distance(achieved_goal, desired_goal).shape  # checks the goals' last axis too


def _flags(info, shape) -> dict[str, np.ndarray]:
    return {k: _info_values(info, k, shape).astype(bool) for k in FLAG_KEYS}


def _tray(info, shape) -> tuple[np.ndarray, np.ndarray]:
    return (_info_values(info, TRAY_SHIFT_KEY, shape, (3,)).astype(np.float64),
            _info_values(info, TRAY_QUAT_KEY, shape, (4,)).astype(np.float64))


def _one(achieved_goal, desired_goal, info) -> bool:
    """One goal and its one info dict of Python scalars (a step's): the fast scalar path."""
    return isinstance(info, Mapping) and np.ndim(achieved_goal) == 1 and np.ndim(desired_goal) == 1 \
        and not isinstance(info.get(FLAG_KEYS[0]), np.ndarray)


def _get(info: Mapping, key: str):
    if key not in info:
        raise ValueError(f"info lacks {key!r}: success needs the step's contacts and speed, which the goals "
                         f"do not hold (pass the info the env returned with that step)")
    return info[key]


def _success_one(achieved_goal, desired_goal, info: Mapping) -> bool:
    """:func:`success` of one goal in Python scalars: the same answer as the batch (the box test
    is the same arithmetic, robogym_ros.task.placement.inside_tray_at_one)."""
    flags = {k: bool(_get(info, k)) for k in FLAG_KEYS}
    _goal_shape(achieved_goal, desired_goal)
    inside = placement.inside_tray_at_one(achieved_goal, desired_goal, _get(info, TRAY_SHIFT_KEY),
                                          _get(info, TRAY_QUAT_KEY))
    released = not (flags["left_touches_block"] or flags["right_touches_block"])
    return inside and released and flags["block_at_rest"] and (flags["block_on_tray"] or flags["block_on_table"])


def success(achieved_goal, desired_goal, info) -> np.ndarray:
    """The block placed at the goal: inside the tray's box there, touching no arm, resting on the
    tray or the table, at rest (robogym_ros.task.placement.placed_at). Batched; bool."""
    if _one(achieved_goal, desired_goal, info):
        return np.asarray(_success_one(achieved_goal, desired_goal, info))
    shape = _goal_shape(achieved_goal, desired_goal)
    f = _flags(info, shape)
    shift, quat = _tray(info, shape)
    released = ~(f["left_touches_block"] | f["right_touches_block"])
    return np.asarray(placement.placed_at(achieved_goal, desired_goal, shift, quat, released, f["block_at_rest"],
                                          f["block_on_tray"] | f["block_on_table"]))


def _stage_one(achieved_goal, desired_goal, info: Mapping, placed: bool | None = None,
               inside: bool | None = None) -> int:
    """:func:`stage` of one goal in Python scalars (the same rules, the same box test); ``placed``
    and ``inside``: :func:`success` and the box test of the same, if known."""
    f = {k: bool(_get(info, k)) for k in FLAG_KEYS}
    if inside is None:
        inside = placement.inside_tray_at_one(achieved_goal, desired_goal, _get(info, TRAY_SHIFT_KEY),
                                              _get(info, TRAY_QUAT_KEY))
    if placed is None:
        placed = _success_one(achieved_goal, desired_goal, info)
    return _stage_rule(float(desired_goal[1]) > 0, f["left_touches_block"], f["right_touches_block"],
                       f["left_grasps_block"], f["right_grasps_block"], f["block_on_tray"], f["block_on_table"],
                       inside, placed)


def _stage_rule(placing_left: bool, touch_left: bool, touch_right: bool, grasp_left: bool, grasp_right: bool,
                on_tray: bool, on_table: bool, inside: bool, placed: bool) -> int:
    """The stage of one step from its facts, the highest that holds (the rules :func:`stage`
    states; :func:`_stage_of` is the same for arrays). The placing arm is on the goal's side."""
    if placing_left:
        pick_touch, pick_grasp, place_touch, place_grasp = touch_right, grasp_right, touch_left, grasp_left
    else:
        pick_touch, pick_grasp, place_touch, place_grasp = touch_left, grasp_left, touch_right, grasp_right
    off_table = not on_table
    if placed:
        return PLACE
    if (place_grasp and not pick_touch and off_table) or (inside and not pick_touch and not place_touch):
        return RELEASE
    if place_grasp and off_table:
        return HANDOVER
    if pick_grasp and off_table and not on_tray:
        return LIFT
    if pick_grasp:
        return GRASP
    return REACH if pick_touch else 0


def success_and_stage(achieved_goal, desired_goal, info: Mapping) -> tuple[bool, int]:
    """:func:`success` and :func:`stage` of one goal and its step's info, in Python scalars (what
    a step returns; the same as the batched functions give for it)."""
    placed = _success_one(achieved_goal, desired_goal, info)
    return placed, _stage_one(achieved_goal, desired_goal, info, placed)


def stage(achieved_goal, desired_goal, info) -> np.ndarray:
    """The staged reward's stage (int64, 0 .. TOP_STAGE), the highest that holds at this step:
    reach (the picking arm touches the block), grasp (both its jaws do), lift (grasped, off the
    table and tray), handover (the placing arm grasps it, off the table), release (the placing
    arm holds it alone, off the table; or it lies in the goal's box touching no arm, not yet
    at rest), place (success). The placing arm is the one on the goal's side."""
    if _one(achieved_goal, desired_goal, info):
        return np.asarray(_stage_one(achieved_goal, desired_goal, info), dtype=np.int64)
    shape = _goal_shape(achieved_goal, desired_goal)
    f = _flags(info, shape)
    shift, quat = _tray(info, shape)
    inside = placement.inside_tray_at(achieved_goal, desired_goal, shift, quat)
    return _stage_of(f, desired_goal, inside, success(achieved_goal, desired_goal, info), shape)


def _stage_of(f: Mapping, desired_goal, inside, placed, shape) -> np.ndarray:
    """:func:`stage` from the flags, the box test and the success of each goal (bool arrays)."""
    placing_left = np.asarray(desired_goal, np.float64)[..., 1] > 0
    touch = {True: f["left_touches_block"], False: f["right_touches_block"]}
    grasp = {True: f["left_grasps_block"], False: f["right_grasps_block"]}
    pick_touch = np.where(placing_left, touch[False], touch[True])
    pick_grasp = np.where(placing_left, grasp[False], grasp[True])
    place_touch = np.where(placing_left, touch[True], touch[False])
    place_grasp = np.where(placing_left, grasp[True], grasp[False])
    off_table = ~f["block_on_table"]
    in_box_free = inside & ~pick_touch & ~place_touch
    out = np.zeros(shape, dtype=np.int64)
    for k, holds in enumerate((pick_touch, pick_grasp, pick_grasp & off_table & ~f["block_on_tray"],
                               place_grasp & off_table, (place_grasp & ~pick_touch & off_table) | in_box_free,
                               placed), start=1):
        out = np.where(holds, k, out)
    return out


def batch_facts(contacts, speeds_m_s, turns_rad_s, tray_poses, goal, achieved) -> dict[str, np.ndarray]:
    """A batch's :func:`placement_info` entries (arrays over the batch), ``is_success``, ``stage``
    and ``distance_m``, each computed once for the whole batch: the numbers the single env's step
    gives for each scene. ``contacts``: one placement.BlockContacts per scene; ``tray_poses``
    (K, 7), ``goal`` and ``achieved`` (K, 3). A small batch goes scene by scene (the single env's
    :func:`step_facts`, faster than numpy's per-call cost below SCALAR_BATCH_MAX scenes)."""
    if len(contacts) <= SCALAR_BATCH_MAX:
        rows = []
        for c, v, w, tray, g, a in zip(contacts, speeds_m_s, turns_rad_s, tray_poses, np.asarray(goal).tolist(),
                                       np.asarray(achieved).tolist()):
            info, placed, stage_now = step_facts(placement.Placement(c, float(v), float(w), (), ()), tray, g, a)
            rows.append({**info, "is_success": float(placed), "stage": stage_now, "distance_m": scalar_distance(a, g)})
        return {k: np.array([r[k] for r in rows], dtype=BATCH_TYPES.get(k)) for k in rows[0]}
    arm = np.array([c.arm for c in contacts], dtype=bool).reshape(-1, 2)
    grasp = np.array([c.grasp for c in contacts], dtype=bool).reshape(-1, 2)
    on_tray = np.array([c.tray for c in contacts], dtype=bool)
    on_table = np.array([c.table for c in contacts], dtype=bool)
    speed, turn = np.asarray(speeds_m_s, np.float64), np.asarray(turns_rad_s, np.float64)
    at_rest = (speed < placement.REST_SPEED_M_S) & (turn < placement.REST_TURN_RAD_S)
    tray_poses = np.asarray(tray_poses, np.float64)
    quat = tray_poses[:, 3:7].copy()
    shift = placement.tray_shift(tray_poses, goal)
    values = {
        "left_touches_block": arm[:, 0].copy(), "right_touches_block": arm[:, 1].copy(),  # no shared base
        "left_grasps_block": grasp[:, 0].copy(), "right_grasps_block": grasp[:, 1].copy(),
        "block_on_tray": on_tray, "block_on_table": on_table,
        "block_speed_m_s": speed, "block_turn_rad_s": turn, "block_at_rest": at_rest,
        TRAY_QUAT_KEY: quat, TRAY_SHIFT_KEY: shift,
    }
    inside = placement.inside_tray_at(achieved, goal, shift, quat)
    placed = inside & ~(arm[:, 0] | arm[:, 1]) & at_rest & (on_tray | on_table)
    values["is_success"] = placed.astype(np.float64)
    values["stage"] = _stage_of(values, goal, inside, placed, placed.shape)
    values["distance_m"] = goal_distance(achieved, goal)
    return values


def reward(achieved_goal, desired_goal, info, reward_type: str) -> np.ndarray:
    """sparse: 0 on success, -1 otherwise; dense: minus the distance in m; staged: (stage - 6) / 6,
    -1 .. 0, 0 on success. float64."""
    if reward_type == "sparse":
        return np.where(success(achieved_goal, desired_goal, info), 0.0, -1.0)
    if reward_type == "dense":
        return np.negative(goal_distance(achieved_goal, desired_goal))
    if reward_type == "staged":
        return (stage(achieved_goal, desired_goal, info) - TOP_STAGE) / TOP_STAGE
    raise ValueError(f"reward_type must be one of {REWARD_TYPES}, got {reward_type!r}")


def stage_of_staged_reward(staged_reward: float) -> int:
    """The stage a staged reward stands for (:func:`reward`'s staged case undone): an episode's
    highest staged reward is the furthest stage it reached. ValueError for a value no stage gives."""
    stage_now = round(float(staged_reward) * TOP_STAGE + TOP_STAGE)
    if not 0 <= stage_now <= TOP_STAGE or abs((stage_now - TOP_STAGE) / TOP_STAGE - staged_reward) > 1e-6:
        raise ValueError(f"{staged_reward!r} is no staged reward: those are (stage - {TOP_STAGE}) / {TOP_STAGE}, "
                         f"stage 0 .. {TOP_STAGE}")
    return stage_now
