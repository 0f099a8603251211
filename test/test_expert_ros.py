"""The expert over ROS: robogym_expert drives a real sim process through its topics, on sim time.

Real processes over real DDS: the sim node (seed 1) and the expert node; the episode's result is
the node's own judgement, written to ``results_json``, and the block's final pose is checked
against the goal from the observer's ground truth, independently of the node.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

from simharness import wait_for

from robogym_ros.expert.policy import goal_of_tray


def test_expert_node_completes_a_handover_in_real_time(make_sim, tmp_path):
    sim, obs = make_sim(seed=1)
    results = tmp_path / "expert.json"
    log = open(tmp_path / "expert.log", "w+")
    node = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.expert_node", "--ros-args",
                             "-r", f"__ns:=/{sim.namespace}", "-p", f"results_json:={results}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(results.exists, 60, "the expert's episode result")
        episode = json.loads(results.read_text())[0]
    finally:
        node.terminate()
        node.wait(15)
        log.close()
    out = (tmp_path / "expert.log").read_text()
    assert episode["success"], (episode, out)
    assert episode["sim_time_s"] < 25.0  # the node's episode limit
    block, tray = obs.snapshot(obs.objects)[-1].poses[:2]
    tray_pose = [tray.position.x, tray.position.y, tray.position.z]
    block_xyz = [block.position.x, block.position.y, block.position.z]
    assert math.dist(block_xyz, goal_of_tray(tray_pose)) <= 0.03
