"""Goal relabelling (HER) consistency: a batch of goal-conditioned transitions, and its check.

When a transition is relabelled with a new goal, the reward, ``terminated`` and ``truncated``
must each be recomputed for that goal with the env's own ``compute_reward``,
``compute_terminated`` and ``compute_truncated``; the new goal must be in the current *and*
the next observation; ``achieved_goal`` (what really happened) is never edited; a time-limit
truncation (the TimeLimit wrapper's, not the env's) survives relabelling; ``terminated`` is
never set because the new reward looks like success; ``info`` is kept.

:func:`check_her_consistency` checks a batch against those rules using the env's own
functions, and, given the transitions the batch was relabelled from, the rules that need
them (achieved goal and observation unedited, truncation kept, info kept). It works on any
learner's buffer once it is put into a :class:`GoalBatch` (numpy only).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .results import LIST_LIMIT, CheckResult, Finding, capped

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")
GoalFunction = Callable[[np.ndarray, np.ndarray, Any], Any]


@dataclass
class GoalBatch:
    """N goal-conditioned transitions, one row each (all arrays have N rows).

    ``obs`` and ``next_obs`` map each observation key (at least ``observation``,
    ``achieved_goal``, ``desired_goal``) to an (N, ...) array. ``source[i]``, where given, is
    the row of the batch this row was relabelled from.
    """
    obs: dict[str, np.ndarray]
    next_obs: dict[str, np.ndarray]
    action: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: list[dict] = field(default_factory=list)
    source: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.reward)
        for name, d in (("obs", self.obs), ("next_obs", self.next_obs)):
            missing = [k for k in GOAL_KEYS if k not in d]
            if missing:
                raise ValueError(f"{name} lacks {missing}: a goal observation has {list(GOAL_KEYS)}")
            for k, v in d.items():
                if len(v) != n:
                    raise ValueError(f"{name}[{k!r}] has {len(v)} rows, the batch has {n}")
        if set(self.obs) != set(self.next_obs):
            raise ValueError(f"obs and next_obs have different keys: {sorted(self.obs)} vs {sorted(self.next_obs)}")
        for name in ("action", "terminated", "truncated"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, the batch has {n}")
        if len(self.infos) != n:
            raise ValueError(f"infos has {len(self.infos)} entries, the batch has {n}")
        if self.source is not None and len(self.source) != n:
            raise ValueError(f"source has {len(self.source)} entries, the batch has {n}")

    def __len__(self) -> int:
        return len(self.reward)

    @classmethod
    def from_steps(cls, steps: Iterable[Sequence[Any]]) -> "GoalBatch":
        """From (obs, action, reward, terminated, truncated, next_obs, info) tuples, in order; copies."""
        steps = list(steps)
        if not steps:
            raise ValueError("no steps: an episode needs at least one transition")
        obs, action, reward, terminated, truncated, next_obs, infos = zip(*steps)
        keys = list(obs[0])
        return cls(
            obs={k: np.array([o[k] for o in obs]) for k in keys},
            next_obs={k: np.array([o[k] for o in next_obs]) for k in keys},
            action=np.array(action), reward=np.array(reward, dtype=np.float64),
            terminated=np.array(terminated, dtype=bool), truncated=np.array(truncated, dtype=bool),
            infos=[dict(i) for i in infos])

    def info_array(self) -> np.ndarray:
        """The infos as a 1-D object array, the batched form ``compute_*`` functions receive."""
        arr = np.empty(len(self.infos), dtype=object)
        arr[:] = self.infos
        return arr


def _mismatch(a: np.ndarray, b: np.ndarray, atol: float) -> np.ndarray:
    """Rows where a and b differ (NaN equal to NaN), any trailing shape."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        close = np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=0.0, atol=atol, equal_nan=True)
    else:
        close = a == b
    return ~close.reshape(len(a), -1).all(axis=1)


def _as_rows(values: Any, n: int, what: str, dtype) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    if arr.size != n:
        raise ValueError(f"{what} returned shape {np.shape(values)} for a batch of {n}: it must be batched")
    return arr.reshape(n)


def _finding(code: str, rows: np.ndarray, sentence: str, **figures) -> Finding:
    idx = np.flatnonzero(rows)
    return Finding(code, f"{len(idx)} of {len(rows)} transitions: {sentence} (rows {capped(idx, 5)}"
                         f"{', ...' if len(idx) > 5 else ''})",
                   {"count": int(len(idx)), "rows": capped(idx, LIST_LIMIT), **figures})


def check_her_consistency(batch: GoalBatch, compute_reward: GoalFunction, compute_terminated: GoalFunction,
                          compute_truncated: GoalFunction, *, originals: GoalBatch | None = None,
                          atol: float = 1e-9, name: str = "her_consistency") -> CheckResult:
    """Findings for every rule a relabelled batch breaks (see the module's docstring).

    ``compute_*`` are the env's own (``env.unwrapped.compute_reward`` ...), called once each on
    the whole batch. With ``originals`` (the transitions the batch was relabelled from) and
    ``batch.source`` (each row's original row), the rules that need the originals are checked too.
    """
    n = len(batch)
    if n == 0:
        return CheckResult(name, "no transitions to check", {"n_transitions": 0}, no_data=True)
    infos = batch.info_array()
    goal = batch.obs["desired_goal"]
    next_achieved = batch.next_obs["achieved_goal"]
    reward = _as_rows(compute_reward(next_achieved, goal, infos), n, "compute_reward", np.float64)
    terminated = _as_rows(compute_terminated(next_achieved, goal, infos), n, "compute_terminated", bool)
    base_truncated = _as_rows(compute_truncated(next_achieved, goal, infos), n, "compute_truncated", bool)
    stored_terminated = np.asarray(batch.terminated, dtype=bool)
    stored_truncated = np.asarray(batch.truncated, dtype=bool)

    findings = []
    rows = _mismatch(batch.next_obs["desired_goal"], goal, atol)
    if rows.any():
        findings.append(_finding("goal_not_in_next_obs", rows,
                                 "next_obs['desired_goal'] is not the transition's goal (obs['desired_goal']): "
                                 "the new goal must go into the next observation too"))
    rows = _mismatch(np.asarray(batch.reward, dtype=np.float64), reward, atol)
    if rows.any():
        findings.append(_finding("reward_mismatch", rows,
                                 "the stored reward is not compute_reward(next achieved_goal, goal)"))
    rows = stored_terminated != terminated
    if rows.any():
        set_rows = rows & stored_terminated
        findings.append(_finding("terminated_mismatch", rows,
                                 "the stored terminated is not compute_terminated(next achieved_goal, goal)"
                                 + (f"; {int(set_rows.sum())} set where the env says not terminated"
                                    if set_rows.any() else ""), set_where_env_says_not=int(set_rows.sum())))
    rows = base_truncated & ~stored_truncated
    if rows.any():
        findings.append(_finding("truncated_mismatch", rows,
                                 "compute_truncated says truncated but the stored truncated is False"))
    figures = {"n_transitions": n, "terminated": int(stored_terminated.sum()),
               "truncated": int(stored_truncated.sum()), "mean_reward": float(np.mean(batch.reward))}
    if originals is not None:
        findings += _against_originals(batch, originals, compute_truncated, atol, figures)
    summary = (f"{n} transitions: " + ("consistent" if not findings else
               ", ".join(f"{f.figures['count']} {f.code}" for f in findings)))
    return CheckResult(name, summary, figures, tuple(findings))


def _against_originals(batch: GoalBatch, originals: GoalBatch, compute_truncated: GoalFunction,
                       atol: float, figures: dict) -> list[Finding]:
    if batch.source is None:
        raise ValueError("originals given but batch.source is None: which original is each row from?")
    source = np.asarray(batch.source, dtype=np.int64)
    if source.size and (source.min() < 0 or source.max() >= len(originals)):
        raise ValueError(f"batch.source must index the {len(originals)} originals, "
                         f"got values {source.min()} .. {source.max()}")
    findings = []
    edited = np.zeros(len(batch), dtype=bool)
    for d, od in ((batch.obs, originals.obs), (batch.next_obs, originals.next_obs)):
        edited |= _mismatch(d["achieved_goal"], od["achieved_goal"][source], atol)
    if edited.any():
        findings.append(_finding("achieved_goal_edited", edited,
                                 "achieved_goal differs from the original transition's: it records what "
                                 "happened and must never be relabelled"))
    other = np.zeros(len(batch), dtype=bool)
    for d, od in ((batch.obs, originals.obs), (batch.next_obs, originals.next_obs)):
        for key in d:
            if key not in ("achieved_goal", "desired_goal"):
                other |= _mismatch(d[key], od[key][source], atol)
    other |= _mismatch(batch.action, originals.action[source], atol)
    if other.any():
        findings.append(_finding("transition_edited", other,
                                 "the observation or action differs from the original transition's"))
    # The original's truncation that its own goal does not explain came from outside the env
    # (the TimeLimit wrapper): it holds whatever the goal.
    o_infos = originals.info_array()
    base = _as_rows(compute_truncated(originals.next_obs["achieved_goal"], originals.obs["desired_goal"], o_infos),
                    len(originals), "compute_truncated", bool)
    external = (np.asarray(originals.truncated, dtype=bool) & ~base)[source]
    dropped = external & ~np.asarray(batch.truncated, dtype=bool)
    figures["time_limit_truncations"] = int(external.sum())
    if dropped.any():
        findings.append(_finding("time_limit_truncation_dropped", dropped,
                                 "the original was truncated by the time limit, the relabelled one is not"))
    lost = np.array([bool(originals.infos[s]) and not set(originals.infos[s]) <= set(batch.infos[i] or {})
                     for i, s in enumerate(source)], dtype=bool)
    if lost.any():
        findings.append(_finding("info_dropped", lost, "info keys of the original transition are missing"))
    return findings
