"""Success is the task: at the step where the env first says success, the physics shows the block
lying in the tray, touching no arm, at rest; a held block near the goal is never success; a
block dropped into the tray that comes to rest there is.

Judged from the physics' own state (the env's MjData: MuJoCo's contacts after ``mj_forward`` at
that instant, the free joint's velocity), never from what the env computed.
"""
from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import robogym_ros.envs  # noqa: F401  (registers the env)
from robogym_ros.expert.runner import EnvExpert

WALL_INNER_HALF_M = 0.046  # models/so101_dual.xml: the tray walls' inner faces from its centre
WALL_TOP_M = 0.030


def truth(env) -> dict:
    """What the physics says about the block now: what it touches, its speed, where it is in the tray."""
    p = env.unwrapped._backend._physics
    m, d = p.model, p.data
    mujoco.mj_forward(m, d)  # contacts of this very state (mj_step's are of the state before its last step)
    block, tray = m.body("block").id, m.body("tray").id
    touches = set()
    for c in d.contact[:d.ncon]:
        bodies = (int(m.geom_bodyid[c.geom[0]]), int(m.geom_bodyid[c.geom[1]]))
        if block in bodies:
            other = bodies[1] if bodies[0] == block else bodies[0]
            touches.add("tray" if other == tray else m.body(int(m.body_rootid[other])).name)
    dof = m.jnt_dofadr[m.body("block").jntadr[0]]
    rel = np.zeros(3)
    rot = d.xmat[tray].reshape(3, 3)
    rel[:] = rot.T @ (d.xpos[block] - d.xpos[tray])
    return {"touches": touches, "speed_m_s": float(np.linalg.norm(d.qvel[dof:dof + 3])),
            "turn_rad_s": float(np.linalg.norm(d.qvel[dof + 3:dof + 6])),
            "inside": bool(abs(rel[0]) < WALL_INNER_HALF_M and abs(rel[1]) < WALL_INNER_HALF_M and rel[2] < WALL_TOP_M)}


def arms_touching(t: dict) -> set[str]:
    return {name for name in t["touches"] if name.endswith("_base")}  # the arms' root bodies


@pytest.fixture(scope="module")
def env():
    e = gym.make("robogym_ros/Handover-v0")
    yield e
    e.close()


# seed 1: an upright block handed over level; seed 0: a lying block taken end-on; seed 2: the other side
@pytest.mark.parametrize("seed", [1, 0, 2])
def test_at_the_first_success_the_block_lies_released_and_still_in_the_tray(env, seed):
    expert = EnvExpert(env)
    expert.reset()
    obs, _ = env.reset(seed=seed)
    for step in range(env.spec.max_episode_steps):
        obs, reward, terminated, truncated, info = env.step(expert(obs))
        t = truth(env)
        if arms_touching(t):  # held (or touched): never a success, however near the goal
            assert not terminated and info["is_success"] == 0.0, (step, expert.expert.phase, t)
        if terminated or truncated:
            break
    assert terminated and info["is_success"] == 1.0, (step, expert.expert.phase, info)
    assert arms_touching(t) == set(), t
    assert "tray" in t["touches"] and t["inside"], t
    assert t["speed_m_s"] < 0.02 and t["turn_rad_s"] < 0.2, t
    # and it stays there: a second later, the expert done with its retreat, the block still lies in the tray
    for _ in range(25):
        obs, *_ = env.step(expert(obs))
    later = truth(env)
    assert later["inside"] and "tray" in later["touches"] and not arms_touching(later), later


def test_a_block_held_still_in_the_tray_is_not_success(env):
    """Positive control of the above: the far gripper holds the block still just above the
    tray's floor, inside its walls and near the goal (where the expert lowered it, before it
    lets go), then presses it onto the floor: at rest, in the tray, resting on it, but touching
    an arm, so never success."""
    expert = EnvExpert(env)
    expert.reset()
    obs, _ = env.reset(seed=1)
    action = None
    for _ in range(env.spec.max_episode_steps):
        if expert.expert.phase == "far_release":
            break  # lowered, the jaws still closed: hold the last action from here on
        action = expert(obs)
        obs, reward, terminated, truncated, info = env.step(action)
    assert expert.expert.phase == "far_release" and not terminated
    for _ in range(10):  # held still: the block's speed falls to zero with the arm's
        obs, reward, terminated, truncated, info = env.step(action)
        assert not terminated and info["is_success"] == 0.0, info
    t = truth(env)
    assert arms_touching(t) and t["inside"] and t["speed_m_s"] < 0.03, t  # held: the jaws squeeze it, it hardly moves
    assert info["block_at_rest"] and info["distance_m"] < 0.03 and info["stage"] < 6, info
    # pressed onto the floor, still gripped: resting on the tray too, and still not placed
    u, e = env.unwrapped, expert.expert
    far = e.arms["left" if obs["desired_goal"][1] > 0 else "right"]
    q5 = obs["observation"][far.cols][:5]
    pos, rot = far.kin.fk(q5)
    down = far.kin.solve(pos - [0.0, 0.0, 0.004], [(0, rot[:, 0])], q0=q5)
    targets = e.timeline.cmd.copy()
    targets[far.cols.start:far.cols.start + 5] = down.q
    pressed = u._actions.action_of(targets)
    for _ in range(25):
        obs, reward, terminated, truncated, info = env.step(pressed)
        assert not terminated and info["is_success"] == 0.0, info
    t = truth(env)
    assert arms_touching(t) and "tray" in t["touches"] and t["inside"], t
    assert info["block_on_tray"] and info["block_at_rest"], info


def test_the_staged_reward_climbs_through_every_stage_of_a_handover():
    """The expert's episode under the staged reward: grasp, lift, handover, release, place each
    seen, in that order of first appearance (a clean grasp closes both jaws at once: reach and
    grasp can come in the same step), the reward (stage - 6) / 6, 0 at success."""
    env = gym.make("robogym_ros/Handover-v0", reward_type="staged")
    try:
        expert = EnvExpert(env)
        expert.reset()
        obs, _ = env.reset(seed=0)
        first_seen = {}
        for step in range(env.spec.max_episode_steps):
            obs, reward, terminated, truncated, info = env.step(expert(obs))
            first_seen.setdefault(info["stage"], step)
            assert reward == (info["stage"] - 6) / 6
            if terminated or truncated:
                break
        assert terminated and reward == 0.0 and info["stage"] == 6
        order = [s for s, _ in sorted(first_seen.items(), key=lambda kv: kv[1])]
        assert order == sorted(order) and {2, 3, 4, 5, 6} <= set(order), first_seen
    finally:
        env.close()


def test_the_info_contacts_are_the_physics_contacts_at_every_step_of_a_handover(env):
    """The judge tests only the block's pairs (a private model filtering the rest): at every step
    of the expert's handover, what the info says touches the block (either arm, both jaws of an
    arm, the tray, the table) is what the full scene's contacts of that state say."""
    expert = EnvExpert(env)
    expert.reset()
    obs, _ = env.reset(seed=0)
    p = env.unwrapped._backend._physics  # a seeded reset builds a new one
    m = p.model
    jaws = {side: {m.geom(f"{side}_{j}").id for j in ("fixed_jaw", "moving_jaw_finger")} for side in ("left", "right")}
    seen = set()
    for _ in range(env.spec.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(expert(obs))
        t = truth(env)  # mj_forward: the full scene's contacts of this state
        d, block = p.data, m.body("block").id
        touching_geoms = {g for pair in d.contact.geom[:d.ncon].tolist() for g in pair
                          if block in (int(m.geom_bodyid[pair[0]]), int(m.geom_bodyid[pair[1]]))}
        for side in ("left", "right"):
            assert info[f"{side}_touches_block"] == (f"{side}_base" in t["touches"]), (side, t, info)
            assert info[f"{side}_grasps_block"] == (jaws[side] <= touching_geoms), (side, t, info)
            seen |= {f"{side} touches"} if info[f"{side}_touches_block"] else set()
        assert info["block_on_tray"] == ("tray" in t["touches"]), (t, info)
        assert info["block_on_table"] == ("world" in t["touches"]), (t, info)
        seen |= {k for k in ("block_on_tray", "block_on_table") if info[k]}
        if terminated or truncated:
            break
    assert {"left touches", "right touches", "block_on_tray", "block_on_table"} <= seen, seen
