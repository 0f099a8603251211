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
            held = watcher.snapshot(watcher.targets)[-1].position.tolist()
            is_error, text, _, _ = await agent.call("move_gripper", arm="left", position_m=UNREACHABLE_M,
                                                    yaw_rad=0.0, duration_s=1.0)
            assert is_error and "refused, nothing sent: unreachable" in text and "mm off" in text, text
            await agent.ok("step", ticks=5)
            assert watcher.snapshot(watcher.targets)[-1].position.tolist() == held

            # blocked: the jaws driven down into the table stop on it, and the move says stalled
            down = {"left_shoulder_lift": done["sent"]["left_shoulder_lift"] + 0.5}
            blocked, _ = await agent.ok("move", targets=down, duration_s=1.0, wait=True)
            assert blocked["outcome"] == "stalled", blocked
            assert "left_shoulder_lift" in blocked["stalled"], blocked
            low = site_position(newest_joints(watcher, blocked["tick"], dt_ns), "left")
            assert low[2] < REACHABLE_M[2] - 0.02, low  # it did go down, onto the table

            # bad input: refused naming the argument
            is_error, text, _, _ = await agent.call("move_gripper", arm="middle", position_m=REACHABLE_M)
            assert is_error and "arm must be one of ['left', 'right']" in text, text
            is_error, text, _, _ = await agent.call("grip", arm="left", opening="half")
            assert is_error and "opening must be" in text, text
    run_async(scenario)
