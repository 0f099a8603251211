"""The grasp frames a state policy may see beside the objects' poses (robogym_ros.envs.grasp_frames):
each arm's grasp site from the joint positions alone, the same numbers the expert's own kinematics
(one arm at a time, its own MjData) gives for those joints, in the order the names say."""
from __future__ import annotations

import numpy as np
import pytest

from robogym_ros.envs.grasp_frames import GRASP_FRAME_SIZE, GraspFrames, grasp_frame_names
from robogym_ros.envs.handover import HandoverEnv
from robogym_ros.expert.kinematics import ArmKinematics


def test_each_frame_is_its_arms_forward_kinematics_in_the_named_order():
    env = HandoverEnv(normalize_actions=False)
    try:
        frames = GraspFrames(env.joint_names)
        model = env.unwrapped._backend._physics.model
        arms = {side: ArmKinematics(model, side) for side in ("left", "right")}
        rng = np.random.default_rng(5)
        low, high = env.action_space.low, env.action_space.high
        names = grasp_frame_names()
        assert len(names) == GRASP_FRAME_SIZE == 18 and names[0] == "left_grasp.x" and names[-1] == "right_grasp.yz"
        for _ in range(20):
            q = rng.uniform(low, high)
            got = dict(zip(names, frames(q), strict=True))
            for side, kin in arms.items():
                cols = [env.joint_names.index(f"{side}_{j}") for j in
                        ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")]
                pos, rot = kin.fk(q[cols])
                want = {"x": pos[0], "y": pos[1], "z": pos[2], "xx": rot[0, 0], "xy": rot[1, 0], "xz": rot[2, 0],
                        "yx": rot[0, 1], "yy": rot[1, 1], "yz": rot[2, 1]}
                for c, v in want.items():
                    assert got[f"{side}_grasp.{c}"] == pytest.approx(v, abs=1e-12), (side, c)
    finally:
        env.close()


def test_a_wrong_count_of_joints_or_an_unknown_joint_is_refused():
    env = HandoverEnv(normalize_actions=False)
    try:
        frames = GraspFrames(env.joint_names)
        with pytest.raises(ValueError, match="12 joint positions"):
            frames(np.zeros(11))
        with pytest.raises(ValueError, match="no_such_joint"):
            GraspFrames([*env.joint_names[:-1], "no_such_joint"])
    finally:
        env.close()
