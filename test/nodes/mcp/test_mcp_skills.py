"""The skill tools (move_gripper, grip, move with wait) driven by the mcp SDK's client over
stdio against a real sim. Where the gripper ended is judged by this test's own forward
kinematics (a fresh MuJoCo model of the scene) of the joint_states the sim published, as our
own observer received them: not by what the server reports."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

pytest.importorskip("mcp", reason="mcp is not installed (pip install -e '.[agents]')")

from mcpharness import SimWatcher, run_async, stdio_agent  # noqa: E402

from robogym_ros.contract import header_stamp_ns  # noqa: E402
from robogym_ros.task import scene  # noqa: E402

TIMEOUT = ("--timeout-s", "15")
REACHABLE_M = [0.18, 0.25, 0.06]  # over the table, in front of the left arm
UNREACHABLE_M = [0.18, 0.95, 0.06]  # 0.75 m from the left arm's pan axis: past its reach
REACHED_MM = 5.0


def site_position(joint_state, arm: str) -> np.ndarray:
    """The grasp site's world position at the published joints (this test's own FK)."""
    model = mujoco.MjModel.from_xml_path(scene.default_model_path())
    data = mujoco.MjData(model)
    for name, q in zip(joint_state.name, joint_state.position):
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = q
    mujoco.mj_kinematics(model, data)
    return data.site_xpos[model.site(f"{arm}_grasp").id].copy()


def newest_joints(watcher: SimWatcher, tick: int, dt_ns: int):
    watcher.wait_for(lambda: watcher.joints_at(tick * dt_ns) is not None, 10, f"tick {tick} at the observer")
    return next(m for m in reversed(watcher.snapshot(watcher.joint_states)) if header_stamp_ns(m) == tick * dt_ns)


@pytest.mark.long
def test_move_gripper_reaches_a_pose_refuses_an_unreachable_one_and_a_blocked_move_reports_stalled(make_sim):
    _sim, watcher = make_sim(SimWatcher)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT) as agent:
            spec, _ = await agent.ok("spec")
            dt_ns = round(spec["control_dt_s"] * 1e9)
            await agent.ok("reset", seed=0)  # paused: the waits step the sim (lockstep)
            await agent.ok("step", ticks=1)

            # reachable: the sim's own joints put the gripper within a few mm of it
            done, _ = await agent.ok("move_gripper", arm="left", position_m=REACHABLE_M, yaw_rad=math.pi / 2,
                                     opening="open", duration_s=1.5, wait=True)
            assert done["outcome"] == "reached", done
            at = site_position(newest_joints(watcher, done["tick"], dt_ns), "left")
            error_mm = float(np.linalg.norm(at - REACHABLE_M) * 1000)
            assert error_mm <= REACHED_MM, (error_mm, at)
            assert abs(done["gripper_position_error_mm"] - error_mm) < 0.5, (done, error_mm)

            # unreachable: refused naming why, nothing sent (the held targets stay)
            def targets_until(tick):
                return header_stamp_ns(watcher.snapshot(watcher.targets)[-1]) >= tick * dt_ns
            watcher.wait_for(lambda: targets_until(done["tick"]), 10, "the targets of the move's last tick")
            held = watcher.snapshot(watcher.targets)[-1].position.tolist()
            is_error, text, _, _ = await agent.call("move_gripper", arm="left", position_m=UNREACHABLE_M,
                                                    yaw_rad=0.0, duration_s=1.0)
            assert is_error and "refused, nothing sent: unreachable" in text and "mm off" in text, text
            await agent.ok("step", ticks=5)
            watcher.wait_for(lambda: targets_until(done["tick"] + 5), 10, "the targets of the 5 ticks stepped")
            assert watcher.snapshot(watcher.targets)[-1].position.tolist() == held

            # blocked: the jaws driven down into the table stop on it, and the move says stalled
            down = {"left_shoulder_lift": done["sent"]["left_shoulder_lift"] + 0.5}
            blocked, _ = await agent.ok("move", targets=down, duration_s=1.0, wait=True)
            assert blocked["outcome"] == "stalled", blocked
            assert "left_shoulder_lift" in blocked["stalled"], blocked
            # the servo's load, as the sim published it at that tick, pushing toward the target
            published = newest_joints(watcher, blocked["tick"], dt_ns)
            lift = blocked["stalled"]["left_shoulder_lift"]
            assert lift["effort_nm"] == published.effort[list(published.name).index("left_shoulder_lift")], blocked
            assert lift["effort_nm"] * lift["error_rad"] < 0, lift
            # observe says the same of its own tick: the targets held, the tracking error, the loads
            seen, _ = await agent.ok("observe", images=False)
            published = newest_joints(watcher, seen["tick"], dt_ns)
            watcher.wait_for(lambda: targets_until(seen["tick"]), 10, "the targets of the observed tick")
            held = next(m for m in watcher.snapshot(watcher.targets) if header_stamp_ns(m) == seen["tick"] * dt_ns)
            for k, name in enumerate(published.name):
                assert seen["efforts_nm"][name] == published.effort[k], (name, seen)
                assert seen["targets"][name] == held.position[list(held.name).index(name)], (name, seen)
                assert seen["tracking_errors_rad"][name] == seen["joints"][name] - seen["targets"][name], name
            assert seen["tracking_errors_rad"]["left_shoulder_lift"] < -0.03, seen  # held up by the table
            low = site_position(newest_joints(watcher, blocked["tick"], dt_ns), "left")
            assert low[2] < REACHABLE_M[2] - 0.02, low  # it did go down, onto the table

            # bad input: refused naming the argument
            is_error, text, _, _ = await agent.call("move_gripper", arm="middle", position_m=REACHABLE_M)
            assert is_error and "arm must be one of ['left', 'right']" in text, text
            is_error, text, _, _ = await agent.call("grip", arm="left", opening="half")
            assert is_error and "opening must be" in text, text
    run_async(scenario)


def block_grasp(pose) -> tuple[list[float], float]:
    """A top-down grasp site over a block resting on the table (the expert's table grasp, the
    closing direction across the block's horizontal short axis) and its yaw."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(pose[3:7], np.float64))
    rot = rot.reshape(3, 3)
    upright = abs(rot[2, 2]) > 0.7
    across = rot[:, 0] if upright else rot[:, int(np.argmin(np.abs(rot[2, :2])))]
    yaw = math.atan2(across[1], across[0])
    z = pose[2] + 0.015 if upright else max(pose[2] - 0.0125 + 0.018 + 0.004, pose[2])
    return [pose[0], pose[1], z], yaw


@pytest.mark.long
def test_observe_gives_the_grippers_by_fk_and_the_envs_stage_as_the_block_is_grasped(make_sim):
    _sim, watcher = make_sim(SimWatcher)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT, "--ground-truth") as agent:
            spec, _ = await agent.ok("spec")
            dt_ns = round(spec["control_dt_s"] * 1e9)
            await agent.ok("reset", seed=1)
            await agent.ok("step", ticks=2)
            obs, _ = await agent.ok("observe", images=False, object_poses=True)
            assert obs["task"]["stage"] == "none" and obs["task"]["success"] is False, obs["task"]
            block = obs["object_poses"]["block"]
            arm = "left" if block[1] > 0 else "right"
            site, yaw = block_grasp(block)
            above = [site[0], site[1], site[2] + 0.06]
            for target, opening in ((above, "open"), (site, "open")):
                moved, _ = await agent.ok("move_gripper", arm=arm, position_m=target, yaw_rad=yaw, opening=opening,
                                          duration_s=1.5, wait=True)
                assert moved["gripper_position_error_mm"] < 8, moved
            await agent.ok("grip", arm=arm, opening="close", duration_s=0.5, wait=True)
            held, _ = await agent.ok("observe", images=False)
            assert "object_poses" not in held  # the agent did not ask for them
            for side in ("left", "right"):  # FK of the published joints (one arm moved), by this test's own model
                at = site_position(newest_joints(watcher, held["tick"], dt_ns), side)
                assert np.allclose(held["grippers"][side]["position_m"], at, atol=1e-6), side
            assert held["task"]["stage"] in ("grasp", "lift"), held["task"]
            status, _ = await agent.ok("status")
            assert status["task"]["stage"] == held["task"]["stage"]

            # running: every observation asked with object poses has the poses of its own tick
            await agent.ok("resume")
            for k in range(50):
                obs, _ = await agent.ok("observe", images=k % 5 == 0, object_poses=True)
                assert "object_poses" in obs and not any("poses" in n for n in obs.get("notes", ())), (k, obs)
            def seen():
                return any(header_stamp_ns(m) == obs["stamp_ns"] for m in watcher.snapshot(watcher.objects))
            watcher.wait_for(seen, 10, "the observed tick's object poses at the observer")
            truth = next(m for m in watcher.snapshot(watcher.objects) if header_stamp_ns(m) == obs["stamp_ns"])
            p = truth.poses[0]
            assert obs["object_poses"]["block"][:3] == [p.position.x, p.position.y, p.position.z]
    run_async(scenario)
