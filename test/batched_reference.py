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
                         action_seed: int = 0, before_step=None, max_mismatches: int = 20) -> Comparison:
    """Step ``vec`` (reset with ``vec_seeds``, default ``seeds``) and single envs reset with
    ``seeds`` ``n_steps`` times with the same random actions; ``before_step(t, vec, singles)``
    may change both sides (fault injection)."""
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
            actions = rng.uniform(-1, 1, (len(seeds), 12)).astype(np.float32)
            if before_step is not None:
                before_step(t, vec, singles)
            obs, reward, terminated, truncated, infos = vec.step(actions)
            _keep(out, obs, infos, reward, terminated, truncated)
            for i, env in enumerate(singles):
                if done[i]:
                    o, info = env.reset()
                    r, te, tr = 0.0, False, False
                    out.autoresets[i] += 1
                else:
                    o, r, te, tr, info = env.step(actions[i])
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
        elif _bits(infos[key][i]) != _bits(np.array(want, dtype=infos[key].dtype)) or infos[key][i] != want:
            out.mismatches.append(f"{where} sub-env {i}: info[{key!r}] {infos[key][i]!r} != {want!r}")


def shared_pairs(arrays: list[np.ndarray]) -> list[tuple[int, int]]:
    """Index pairs of arrays that share memory (np.shares_memory, exact)."""
    arrays = [a for a in arrays if isinstance(a, np.ndarray)]
    return [(i, j) for i in range(len(arrays)) for j in range(i + 1, len(arrays))
            if np.shares_memory(arrays[i], arrays[j])]
