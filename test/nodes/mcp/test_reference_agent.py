"""examples/mcp_agent.py, the reference agent, finishes the handover against a real sim in
lockstep: run as a user runs it (its own robogym_mcp over stdio, nothing of this package
imported), judged here by the physics: this test's own observer's joint_states and ground-truth
object poses, through the env's placement judge, at the tick the agent ended on, with the goal
from the tray at the reset. The same judge says "not placed" at the reset tick (its control)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mcp", reason="mcp is not installed (pip install -e '.[agents]')")

from mcpharness import REPO, SimWatcher, server_env  # noqa: E402

from robogym_ros.contract import header_stamp_ns  # noqa: E402
from robogym_ros.task import goals, placement, scene  # noqa: E402

AGENT = REPO / "examples" / "mcp_agent.py"
SEED = 848650413  # drawn at random, not tuned to
REST_SPAN_TICKS = 10  # the block's speed over the last 0.1 s of sim time


def physics_says(watcher: SimWatcher, tick: int, reset_tick: int, dt_ns: int) -> tuple[bool, str]:
    """The env's success and stage at ``tick``, from what this test's observer received."""
    def at(store, k):
        watcher.wait_for(lambda: any(header_stamp_ns(m) == k * dt_ns for m in watcher.snapshot(store)), 10,
                         f"tick {k} at the observer")
        return next(m for m in watcher.snapshot(store) if header_stamp_ns(m) == k * dt_ns)

    def poses(k):
        return np.array([[p.position.x, p.position.y, p.position.z, p.orientation.w, p.orientation.x,
                          p.orientation.y, p.orientation.z] for p in at(watcher.objects, k).poses])
    joints = at(watcher.joint_states, tick)
    position = [dict(zip(joints.name, joints.position))[n] for n in scene.JOINT_NAMES]
    now, before = poses(tick), poses(tick - REST_SPAN_TICKS)
    goal = goals.goal_from_tray_pose(poses(reset_tick)[scene.OBJECT_BODIES.index("tray")])
    judge = placement.PlacementJudge(scene.default_model_path(), scene.JOINT_NAMES, scene.OBJECT_BODIES)
    block_i, tray_i = scene.OBJECT_BODIES.index("block"), scene.OBJECT_BODIES.index("tray")
    judged = judge.judge(position, now, before[block_i], REST_SPAN_TICKS * dt_ns * 1e-9)
    placed, stage = goals.success_and_stage(now[block_i][:3].tolist(), goal.tolist(),
                                            goals.placement_info(judged, now[tray_i], goal))
    return bool(placed), goals.STAGES[stage]


@pytest.mark.long
def test_the_reference_agent_places_the_block_in_lockstep_as_the_physics_judges(make_sim):
    _sim, watcher = make_sim(SimWatcher, start_paused=True, camera_period_s=0.0)
    dt_ns = round(watcher.spec["control_dt_s"] * 1e9)
    run = subprocess.run([sys.executable, str(AGENT), "--lockstep", "--seed", str(SEED), "--quiet",
                          "--namespace", watcher.namespace], env=server_env(), capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, (run.stdout, run.stderr[-3000:])
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["success"] is True and outcome["mode"] == "lockstep", outcome
    assert physics_says(watcher, outcome["tick"], outcome["reset_tick"], dt_ns) == (True, "place")
    placed, stage = physics_says(watcher, outcome["reset_tick"] + REST_SPAN_TICKS, outcome["reset_tick"], dt_ns)
    assert not placed and stage == "none", stage  # the control: the same judge, the block where it started
