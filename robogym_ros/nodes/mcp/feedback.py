"""Task feedback for robogym_mcp's ``observe`` and ``status``: the grippers' poses by forward
kinematics of the measured joints, and, where the server has ground truth (``--ground-truth``),
the env's own ``success`` and ``stage``.

Success and stage are the Gymnasium env's code path, not a copy: the placement judged by
robogym_ros.task.placement.PlacementJudge on the observed joints and the sim's ground-truth
object poses of the same tick, turned into the env's info (task.goals.placement_info) and
judged by task.goals.success_and_stage. The goal is the env's: where a lying block rests at the
tray's centre as the tray stood at the episode's first tick judged after the last reset. The
block's speed (part of "at rest") is over the span since the previous observation judged: the
env's, over one step. Without ground truth there is no success here: the agent must judge the
scene from the images.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from robogym_ros.expert.kinematics import ARM_JOINTS, ArmKinematics
from robogym_ros.task import goals, placement, scene


class TaskFeedback:
    """One server's judge; thread-safe (calls may overlap)."""

    def __init__(self, model_path: str | None = None):
        path = model_path or scene.default_model_path()
        self.judge = placement.PlacementJudge(path, scene.JOINT_NAMES, scene.OBJECT_BODIES)
        self.arms = {side: ArmKinematics(self.judge.model, side) for side in scene.SIDES}
        self._lock = threading.Lock()
        self._episode = None  # the reset stamp the goal belongs to
        self._goal = None
        self._before = None  # (stamp_ns, block pose) of the previous tick judged
        self.last: dict | None = None  # the newest task feedback, for status

    def grippers(self, joints: dict) -> dict:
        """Each grasp site's world position (m), its closing axis' yaw (rad) and the jaw (rad)."""
        out = {}
        with self._lock:
            for side, kin in self.arms.items():
                pos, rot = kin.fk([joints[f"{side}_{j}"] for j in ARM_JOINTS])
                out[side] = {"position_m": pos.tolist(), "yaw_rad": float(math.atan2(rot[1, 1], rot[0, 1])),
                             "jaws_down": bool(rot[2, 0] < -0.95), "gripper_rad": joints[f"{side}_gripper"]}
        return out

    def task(self, stamp_ns: int, joints: dict, object_poses: dict, reset_stamp_ns: int | None) -> dict:
        """The env's success and stage at this tick (joints and poses of that one tick)."""
        position = [joints[n] for n in scene.JOINT_NAMES]
        poses = np.array([object_poses[o] for o in scene.OBJECT_BODIES], dtype=np.float64)
        block, tray = poses[scene.OBJECT_BODIES.index("block")], poses[scene.OBJECT_BODIES.index("tray")]
        with self._lock:
            if self._goal is None or reset_stamp_ns != self._episode:
                self._episode, self._goal, self._before = reset_stamp_ns, goals.goal_from_tray_pose(tray), None
            before, elapsed_s = None, 0.0
            if self._before is not None and self._before[0] < stamp_ns:
                before, elapsed_s = self._before[1], (stamp_ns - self._before[0]) * 1e-9
            judged = self.judge.judge(position, poses, before, elapsed_s)
            if self._before is None or self._before[0] < stamp_ns:
                self._before = (stamp_ns, block.copy())
            info = goals.placement_info(judged, tray, self._goal)
            achieved, goal = block[:3].tolist(), self._goal.tolist()
            placed, stage = goals.success_and_stage(achieved, goal, info)
            self.last = {
                "success": bool(placed), "stage": goals.STAGES[stage], "stage_index": stage,
                "stages": list(goals.STAGES), "goal_m": goal,
                "distance_m": goals.scalar_distance(achieved, goal), "block": judged.describe(),
                "tick_stamp_ns": stamp_ns,
                "speed_over_s": elapsed_s if before is not None else None,
            }
            return dict(self.last)
