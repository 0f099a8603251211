"""The expert over ROS: robogym_expert drives a real sim process through its topics, on sim time.

Real processes over real DDS: the sim node (seed 1) and the expert node. The episode's result is
the node's own judgement, written to ``results_json``; the node exits on its own once its episodes
are done, 0 when they succeeded and 1 when not. The block's final pose is checked independently,
from the observer's ground truth: inside the tray's walls, resting on its floor.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from robogym_ros.task.placement import TRAY_INNER_HALF_M, quat_rotate_inverse


def run_expert(sim, tmp_path, *params: str, timeout_s: float = 90.0):
    results = tmp_path / "expert.json"
    log = open(tmp_path / "expert.log", "w+")
    args = [sys.executable, "-m", "robogym_ros.nodes.expert", "--ros-args", "-r", f"__ns:=/{sim.namespace}",
            "-p", f"results_json:={results}"]
    for p in params:
        args += ["-p", p]
    node = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        code = node.wait(timeout_s)  # it ends by itself after its episode
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
        log.close()
    out = (tmp_path / "expert.log").read_text()
    return code, (json.loads(results.read_text()) if results.exists() else []), out


@pytest.mark.long
def test_expert_node_completes_a_handover_in_real_time_and_exits_0(make_sim, tmp_path):
    sim, obs = make_sim(seed=1)
    code, episodes, out = run_expert(sim, tmp_path)
    assert code == 0, out
    assert len(episodes) == 1 and episodes[0]["success"], (episodes, out)
    assert episodes[0]["sim_time_s"] < 40.0  # the node's episode limit
    assert "done: 1 of 1 episodes succeeded" in out, out
    block, tray = obs.snapshot(obs.objects)[-1].poses[:2]
    rel = quat_rotate_inverse([tray.orientation.w, tray.orientation.x, tray.orientation.y, tray.orientation.z],
                              np.array([block.position.x - tray.position.x, block.position.y - tray.position.y,
                                        block.position.z - tray.position.z]))
    assert (np.abs(rel[:2]) < TRAY_INNER_HALF_M).all() and rel[2] < 0.03, rel  # inside the walls, below their top


def test_expert_node_that_runs_out_of_time_reports_the_failure_and_exits_1(make_sim, tmp_path):
    sim, _ = make_sim(seed=1)
    code, episodes, out = run_expert(sim, tmp_path, "episode_timeout_s:=1.0")
    assert code == 1, out
    assert len(episodes) == 1 and not episodes[0]["success"] and episodes[0]["sim_time_s"] < 1.5, episodes
    assert "done: 0 of 1 episodes succeeded" in out and "FAIL in" in out, out
