"""Reference for vector envs: K single ``gym.make`` envs stepped with the same actions.

``compare_with_singles`` steps a vector env and one single env per seed side by side, the
singles autoresetting the way Gymnasium 1.x's next-step autoreset does (SyncVectorEnv's
rule: the step after an episode ended resets that env, unseeded, and returns reward 0, not
terminated, not truncated). It compares every array, reward, flag and info value bit for
bit and returns what differed, so a test can assert equality and a positive control can
assert a difference. It also keeps every array the vector env returned, for the
no-shared-memory check.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

from robogym_ros.envs import ENV_ID


@dataclass
class Comparison:
    mismatches: list[str] = field(default_factory=list)
    returned: list[np.ndarray] = field(default_factory=list)  # every array the vector env returned
    terminations: int = 0
    truncations: int = 0
    autoresets: np.ndarray | None = None  # per sub-env


def _bits(value) -> bytes:
    a = np.asarray(value)
    return a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes()


def _keep(out: Comparison, *parts) -> None:
    for part in parts:
        out.returned.extend(part.values() if isinstance(part, dict) else [part])


def compare_with_singles(vec, seeds, n_steps: int, *, single_kwargs: dict, vec_seeds=None,
                         action_seed: int = 0, before_step=None, actions=None, max_mismatches: int = 20) -> Comparison:
    """Step ``vec`` (reset with ``vec_seeds``, default ``seeds``) and single envs reset with
    ``seeds`` ``n_steps`` times with the same actions (random, or ``actions(t, singles)``);
    ``before_step(t, vec, singles)`` may change both sides (fault injection, a block put in the tray)."""
    out = Comparison(autoresets=np.zeros(len(seeds), dtype=int))
    singles = [gym.make(ENV_ID, **single_kwargs) for _ in seeds]
    try:
        obs, infos = vec.reset(seed=list(vec_seeds if vec_seeds is not None else seeds))
        _keep(out, obs, infos)
        ref = [e.reset(seed=s) for e, s in zip(singles, seeds)]
        for i, (o, info) in enumerate(ref):
            _compare(out, "reset", i, obs, infos, o, info)
        done = np.zeros(len(seeds), dtype=bool)
        rng = np.random.default_rng(action_seed)
        for t in range(n_steps):
            step_actions = (rng.uniform(-1, 1, (len(seeds), 12)).astype(np.float32) if actions is None
                            else actions(t, singles))
            if before_step is not None:
                before_step(t, vec, singles)
            obs, reward, terminated, truncated, infos = vec.step(step_actions)
            _keep(out, obs, infos, reward, terminated, truncated)
            for i, env in enumerate(singles):
                if done[i]:
                    o, info = env.reset()
                    r, te, tr = 0.0, False, False
                    out.autoresets[i] += 1
                else:
                    o, r, te, tr, info = env.step(step_actions[i])
                done[i] = te or tr
                out.terminations += int(te)
                out.truncations += int(tr)
                where = f"step {t}"
                _compare(out, where, i, obs, infos, o, info)
                if _bits(np.float64(reward[i])) != _bits(np.float64(r)) or bool(terminated[i]) != te \
                        or bool(truncated[i]) != tr:
                    out.mismatches.append(f"{where} sub-env {i}: (reward, terminated, truncated) "
                                          f"{(reward[i], terminated[i], truncated[i])} != {(r, te, tr)}")
            dtypes = (reward.dtype, terminated.dtype, truncated.dtype)
            if dtypes != (np.float64, np.bool_, np.bool_):
                out.mismatches.append(f"step {t}: dtypes of reward, terminated, truncated {dtypes}")
            if len(out.mismatches) >= max_mismatches:
                break
    finally:
        for e in singles:
            e.close()
    return out


def _compare(out: Comparison, where: str, i: int, obs, infos, single_obs, single_info) -> None:
    if set(obs) != set(single_obs):
        out.mismatches.append(f"{where}: keys {sorted(obs)} != {sorted(single_obs)}")
    for key, want in single_obs.items():
        if key in obs and _bits(obs[key][i]) != _bits(want):
            out.mismatches.append(f"{where} sub-env {i}: obs[{key!r}] differs")
    expected_keys = set(single_info) | {f"_{k}" for k in single_info}
    if set(infos) != expected_keys:
        out.mismatches.append(f"{where}: info keys {sorted(infos)} != {sorted(expected_keys)}")
    for key, want in single_info.items():
        if key not in infos or not infos[f"_{key}"][i]:
            out.mismatches.append(f"{where} sub-env {i}: info[{key!r}] missing")
        elif _bits(infos[key][i]) != _bits(np.array(want, dtype=infos[key].dtype)) \
                or not np.array_equal(infos[key][i], np.array(want)):
            out.mismatches.append(f"{where} sub-env {i}: info[{key!r}] {infos[key][i]!r} != {want!r}")


def shared_pairs(arrays: list[np.ndarray]) -> list[tuple[int, int]]:
    """Index pairs of arrays that share memory (np.shares_memory, exact)."""
    arrays = [a for a in arrays if isinstance(a, np.ndarray)]
    return [(i, j) for i in range(len(arrays)) for j in range(i + 1, len(arrays))
            if np.shares_memory(arrays[i], arrays[j])]


def hold_the_reset_pose(t, singles) -> np.ndarray:
    """Actions that hold every arm folded where the reset put it (the arms stay clear of the tray)."""
    from robogym_ros.task import scene
    rows = []
    for env in singles:
        u = env.unwrapped
        folded = scene.folded_pose()
        rows.append(u._actions.action_of(np.array([folded[n] for n in u.joint_names])))
    return np.array(rows, dtype=np.float32)


def put_block_in_tray(data, model) -> bool:
    """Lay the block at rest on the tray's floor at its centre (as if dropped there and settled),
    unless it lies in or on the tray already; True if it was moved."""
    import mujoco

    from robogym_ros.task.placement import GOAL_ABOVE_TRAY_M
    block = model.jnt_qposadr[model.joint("block_free").id]
    tray = model.jnt_qposadr[model.joint("tray_free").id]
    if np.linalg.norm(data.qpos[block:block + 2] - data.qpos[tray:tray + 2]) < 0.05:
        return False
    lie = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])  # long axis horizontal
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, data.qpos[tray + 3:tray + 7], lie)
    data.qpos[block:block + 3] = data.qpos[tray:tray + 3] + [0.0, 0.0, GOAL_ABOVE_TRAY_M]
    data.qpos[block + 3:block + 7] = quat
    data.qvel[model.jnt_dofadr[model.joint("block_free").id]:][:6] = 0.0
    mujoco.mj_forward(model, data)
    return True
