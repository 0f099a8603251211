"""The skill tools of robogym_mcp: ``move_gripper`` (a gripper pose in the world, by inverse
kinematics on the sim's own model), ``grip`` and a ``move`` that can wait and say how it ended.

IK is the expert's damped least squares on MuJoCo's Jacobians (robogym_ros.expert.kinematics)
on the scene's MJCF, started from the measured joints, so the answer is the solution nearest
the arm as it stands. The pose asked for is the grasp site's position with the jaws pointing
straight down and the closing direction (gripper y) at ``yaw_rad`` in the table's plane: the
one grasp a 5-DoF arm can take at any block yaw. A pose IK cannot meet within the tolerance is
refused with how far off the best solution stays, and nothing is sent.

Waiting: running, the call waits in wall time until the move's sim time has passed (plus a
settle); paused, it steps the sim through that many ticks itself (lockstep). Then it reads the
measured joints: reached, or not reached with each joint's error and which joints are stalled
(held off their target while standing still, e.g. by contact).
"""
from __future__ import annotations

import math
import time

import mujoco
import numpy as np

from robogym_ros.expert.kinematics import ARM_JOINTS, ArmKinematics
from robogym_ros.nodes.mcp.feedback import TaskFeedback
from robogym_ros.nodes.mcp.tools import MAX_STEP_TICKS, Answer, SimTools
from robogym_ros.task import scene

DOWN = np.array([0.0, 0.0, -1.0])
IK_POSITION_TOL_M = 0.002
IK_AXIS_TOL_RAD = 0.03
REACHED_POSITION_TOL_M = 0.005  # a wait reports reached when the measured gripper is this close
REACHED_JOINT_TOL_RAD = 0.03
STALLED_SPEED_RAD_S = 0.02  # a joint off its target and slower than this is held there
SETTLE_S = 0.3  # after the move's end: the servos' lag
GRIPPER_OPEN_RAD = 0.9  # ~50 mm between the tips (the expert's)
GRIPPER_CLOSED_RAD = -0.17  # past shut: the servo squeezes at its force limit (the expert's)


def _finite(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


class SkillTools:
    """Skills on top of one server's :class:`SimTools` (their refusals and their link)."""

    def __init__(self, tools: SimTools, model_path: str | None = None):
        self.tools = tools
        self.model = mujoco.MjModel.from_xml_path(model_path or scene.default_model_path())
        self.arms = {side: ArmKinematics(self.model, side) for side in scene.SIDES}
        self.feedback = TaskFeedback(model_path)

    # --- observe and status with task feedback ------------------------------------------------
    def observe(self, images: bool = True, object_poses: bool = False, **picture) -> Answer:
        """``SimTools.observe`` plus the grippers' poses (FK of the measured joints) and, with ground
        truth, the env's success and stage of that tick (object poses only where asked for).
        ``picture``: SimTools.observe's cameras, image_format, image_width_px and latest."""
        gt = self.tools.ground_truth
        answer = self.tools.observe(images=images, object_poses=object_poses or gt, **picture)
        data = answer.data
        data["grippers"] = self.feedback.grippers(data["joints"])
        if gt:
            poses = data.get("object_poses") if object_poses else data.pop("object_poses", None)
            if poses is None:
                data["task"] = None
                data.setdefault("notes", []).append("no task feedback: no ground-truth object poses of this tick")
            else:
                reset = self.tools.link.last_reset
                data["task"] = self.feedback.task(data["stamp_ns"], data["joints"], poses,
                                                  None if reset is None else reset.stamp_ns)
        return answer

    def step_observe(self, ticks: int = 1, targets: dict | None = None, images: bool = True,
                     object_poses: bool = False) -> Answer:
        """Optional targets, then ``ticks`` ticks, then the observation of the last one: one step
        request to the sim whatever ``ticks`` (lockstep; the sim must be paused)."""
        stepped = self.tools.step_request(ticks, targets)
        answer = self.observe(images=images, object_poses=object_poses)
        notes = stepped.data.pop("notes", []) + answer.data.pop("notes", [])
        answer.data.update(stepped.data)
        if notes:
            answer.data["notes"] = notes
        return answer

    def status(self) -> Answer:
        answer = self.tools.status()
        answer.data["task"] = self.feedback.last if self.tools.ground_truth else None
        if not self.tools.ground_truth:
            answer.data["task_note"] = "no ground truth (--ground-truth): success is judged from the images"
        return answer

    # --- helpers ------------------------------------------------------------------------------
    def _refuse(self, reason: str):
        return self.tools._refuse(f"refused, nothing sent: {reason}")

    def _arm(self, arm) -> ArmKinematics:
        if arm not in self.arms:
            raise self._refuse(f"arm must be one of {list(scene.SIDES)}, got {arm!r}")
        return self.arms[arm]

    def _duration(self, duration_s) -> float:
        return self.tools.check_duration(duration_s, self.tools._spec())

    def _measured(self) -> dict:
        return self.tools.observe(images=False).data

    def _opening(self, opening) -> float:
        if opening == "open":
            return GRIPPER_OPEN_RAD
        if opening == "close":
            return GRIPPER_CLOSED_RAD
        try:
            return _finite(opening, "opening")
        except ValueError:
            raise self._refuse(f"opening must be \"open\", \"close\" or the gripper joint's target in rad, "
                               f"got {opening!r}") from None

    def gripper_pose(self, arm: str, joints: dict) -> tuple[np.ndarray, float]:
        """The grasp site's world position (m) and yaw of its closing axis, by FK of ``joints``."""
        kin = self.arms[arm]
        pos, rot = kin.fk([joints[f"{arm}_{j}"] for j in ARM_JOINTS])
        return pos, float(math.atan2(rot[1, 1], rot[0, 1]))

    # --- the tools ----------------------------------------------------------------------------
    def move_gripper(self, arm: str, position_m, yaw_rad: float, opening=None, duration_s: float = 2.0,
                     wait: bool = True) -> Answer:
        kin = self._arm(arm)
        if not isinstance(position_m, (list, tuple)) or len(position_m) != 3:
            raise self._refuse(f"position_m must be [x, y, z] in metres (world frame), got {position_m!r}")
        try:
            target = np.array([_finite(v, f"position_m[{i}]") for i, v in enumerate(position_m)])
            yaw = _finite(yaw_rad, "yaw_rad")
        except ValueError as exc:
            raise self._refuse(str(exc)) from None
        duration = self._duration(duration_s)
        jaw = None if opening is None else self._opening(opening)
        joints = self._measured()["joints"]
        q_now = np.array([joints[f"{arm}_{j}"] for j in ARM_JOINTS])
        across = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        seeds = [q_now, np.r_[kin.pan_towards(target), q_now[1:]], np.r_[kin.pan_towards(target), 0, 0, 0, 0]]
        result = kin.solve_best(target, [((0, DOWN), (1, across))], seeds)
        if not result.ok(IK_POSITION_TOL_M, IK_AXIS_TOL_RAD):
            reach = np.linalg.norm(target[:2] - kin.pan_xy)
            raise self._refuse(
                f"unreachable: the {arm} gripper cannot be at {target.round(4).tolist()} m with its jaws down and "
                f"yaw {yaw:.3f} rad; the best inverse-kinematics solution stays "
                f"{result.position_error_m * 1000:.1f} mm off that position and {result.axis_error_rad:.3f} rad off "
                f"that orientation (tolerance {IK_POSITION_TOL_M * 1000:g} mm, {IK_AXIS_TOL_RAD:g} rad); the target "
                f"is {reach:.3f} m from the arm's pan axis")
        targets = {f"{arm}_{j}": float(v) for j, v in zip(ARM_JOINTS, result.q)}
        if jaw is not None:
            targets[f"{arm}_gripper"] = jaw
        sent = self.tools.move(targets, duration).data
        data = {"sent": sent["sent"], "duration_s": duration, "ik_position_error_mm": result.position_error_m * 1000}
        if wait:
            data.update(self._wait(targets, duration))
            pos, _ = self.gripper_pose(arm, data.pop("_joints"))
            error_mm = float(np.linalg.norm(pos - target) * 1000)
            data["gripper_position_m"] = pos.tolist()
            data["gripper_position_error_mm"] = error_mm
            if data["outcome"] == "reached" and error_mm > REACHED_POSITION_TOL_M * 1000:
                data["outcome"] = "not reached"
        return Answer(data)

    def grip(self, arm: str, opening="close", duration_s: float = 0.5, wait: bool = True) -> Answer:
        self._arm(arm)
        jaw = self._opening(opening)
        duration = self._duration(duration_s)
        targets = {f"{arm}_gripper": jaw}
        sent = self.tools.move(targets, duration).data
        data = {"sent": sent["sent"], "duration_s": duration}
        if wait:
            data.update(self._wait(targets, duration))
            data.pop("_joints")
            if opening == "close" and data["outcome"] == "stalled":
                data["note"] = "the jaws stopped before shut: they hold something (or are blocked)"
        return Answer(data)

    def move(self, targets: dict, duration_s: float, wait: bool = False) -> Answer:
        sent = self.tools.move(targets, duration_s)
        if not wait:
            return sent
        data = dict(sent.data)
        data.update(self._wait({k: float(v) for k, v in targets.items()}, float(duration_s)))
        data.pop("_joints")
        return Answer(data)

    # --- waiting ------------------------------------------------------------------------------
    def _wait(self, targets: dict, duration_s: float) -> dict:
        """Until the move's sim time (and a settle) has passed; then how it ended, per joint."""
        spec = self.tools._spec()
        ticks = math.ceil((duration_s + SETTLE_S) / spec.control_dt_s)
        state = self.tools.link.run_state
        if state is not None and state.paused:
            while ticks > 0:  # lockstep: this call steps the sim
                n = min(ticks, MAX_STEP_TICKS)
                self.tools.step(n)
                ticks -= n
            obs = self._measured()
        else:
            start = self._measured()
            end_tick = start["tick"] + ticks
            deadline = time.monotonic() + (duration_s + SETTLE_S) * 3 + self.tools.timeout_s
            obs = start
            while obs["tick"] < end_tick and time.monotonic() < deadline:
                time.sleep(min(0.05, duration_s))
                obs = self._measured()
                if obs.get("paused"):
                    break
        errors = {k: obs["joints"][k] - v for k, v in targets.items()}
        off = {k: e for k, e in errors.items() if abs(e) > REACHED_JOINT_TOL_RAD}
        stalled = {k: {"error_rad": e, "velocity_rad_s": obs["velocities"][k], "effort_nm": obs["efforts_nm"][k]}
                   for k, e in off.items() if abs(obs["velocities"][k]) < STALLED_SPEED_RAD_S}
        if not off:
            outcome = "reached"
        elif stalled:
            outcome = "stalled"
        else:
            outcome = "not reached"
        report = {"outcome": outcome, "tick": obs["tick"], "joint_errors_rad": errors, "_joints": obs["joints"]}
        if stalled:
            report["stalled"] = stalled
            report["why"] = ("held off the target while standing still: by contact, or the servo's force limit "
                             "(effort_nm: the load the servo reports; it pushes toward the target, against error_rad)")
        elif off:
            report["why"] = "still moving toward the target when the wait ended"
        return report
