"""Cartesian paths through IK waypoints: the carry to the handover and the turn over the tray.

One joint-space move between a hand pointing down and one held level can dip the block to the
table and scrape it out of the jaws, and one that swings and turns at once over the tray can
fling it out; these paths go through IK waypoints whose jaw axis turns a little at a time while
the hand moves on a line with a small bump up. Where no smooth way is found, they go straight.
"""
from __future__ import annotations

import numpy as np

from robogym_ros.expert import grasps
from robogym_ros.expert.kinematics import ArmKinematics

CARRY_WAYPOINTS = 5
TURN_WAYPOINTS = 5
CARRY_BUMP_M = 0.03


def carry_path(kin: ArmKinematics, q, plan) -> list:
    """From the near arm's joints ``q`` to the plan's carry pose, the jaws' y axis turning from
    the grasp's to the handover's."""
    if plan.case == "across":
        return [plan.near_carry_q]  # pointing down at both ends: one joint-space move keeps it so
    start, rot = kin.fk(q)
    end = kin.fk(plan.near_carry_q)[0]
    y0, y1 = rot[:, 1], plan.near_axes[0][1]
    path = []
    for t in np.linspace(0.2, 1.0, CARRY_WAYPOINTS):
        y = (1 - t) * y0 + t * y1
        if np.linalg.norm(y) < 1e-6:
            y = y1
        pos = start + t * (end - start) + grasps.UP * CARRY_BUMP_M * np.sin(np.pi * t)
        r = kin.solve(pos, [(1, y)], q0=q)
        if not r.ok(0.01, 0.1):
            return [plan.near_carry_q]  # no smooth way found: go straight
        q = r.q
        path.append(q)
    path[-1] = plan.near_carry_q
    return path


def turn_path(kin: ArmKinematics, q, goal_q) -> list:
    """From joints ``q`` to ``goal_q``, the jaws' x axis turning a little at a time."""
    start, rot = kin.fk(q)
    end, end_rot = kin.fk(goal_q)
    path = []
    for t in np.linspace(0.2, 0.8, TURN_WAYPOINTS - 1):
        x = (1 - t) * rot[:, 0] + t * end_rot[:, 0]
        pos = start + t * (end - start) + grasps.UP * CARRY_BUMP_M * np.sin(np.pi * t)
        r = kin.solve(pos, [(0, x / np.linalg.norm(x))], q0=q)
        if not r.ok(0.01, 0.1):
            return [goal_q]  # no smooth way found: go straight
        q = r.q
        path.append(q)
    return path + [goal_q]
