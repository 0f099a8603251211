"""Where an env step's time goes, the physics against the env's own work (figures only).

    python bench/bench_env_profile.py [--steps 1500] [--repeats 9] [--action-repeat 4 1] [--batched 8]

local single (``gym.make``, random actions): per env step, the time inside ``mj_step`` (timed
around each call: the physics, the baseline of this run) and the rest, the env's own work.
Then each part of that work by what leaving it out saves, in place: the same run with that part
replaced by a result computed beforehand (the info, the contact scan inside it, the observation,
the action map), alternated with the full run. In place, because between two env steps the
physics leaves the interpreter's caches cold: the same Python costs about twice what a loop of
it alone costs (printed beside it, "alone"). Where the rest goes beyond those parts: stepping
(targets into MjData, the tick's bookkeeping), the snapshot of the tick and the wrappers.
native batched K (``gym.make_vec``): per vector step, the wall time of the scenes' stepping on
the thread pool (each thread also scans the contacts of the scenes it stepped) and of each part
that runs after it on the calling thread alone, while the other cores wait.
Each figure is the median of --repeats runs (the parts' savings are differences of two medians:
on this 2-core machine they move by several us from run to run, the range of the full runs is
printed); times are wall times, for a quiet machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import Counter

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from bench_env import actions as _actions  # noqa: E402  (bench/: the same random actions as the rates)

import robogym_ros.envs  # noqa: E402,F401  (registers the env)
from robogym_ros.envs import ENV_ID  # noqa: E402

_real_mj_step = mujoco.mj_step
_in_physics_ns = [0]


def _timed_mj_step(m, d, nstep=1):
    t0 = time.perf_counter_ns()
    _real_mj_step(m, d, nstep)
    _in_physics_ns[0] += time.perf_counter_ns() - t0


def _leave_out(env, part: str, acts: np.ndarray) -> list[int]:
    """Replace ``part`` of the unwrapped env by a result computed beforehand; returns the count
    of calls of the replacement (a part the env no longer calls by that name is found by it)."""
    u, calls = env.unwrapped, [0]

    def counted(f):
        def replacement(*args, **kwargs):
            calls[0] += 1
            return f(*args, **kwargs)
        return replacement
    if part == "action map":  # the targets of each action, in order: the physics sees the same targets
        targets = iter([u._actions.targets(a[0]) for a in acts])
        u._actions = type("Precomputed", (), {"targets": staticmethod(counted(lambda _a: next(targets)))})()
    elif part == "info":
        tick = u._tick
        info = u._info(tick, None, ticks_elapsed=u.action_repeat, block_before=tick.object_poses[u._block])
        u._info = counted(lambda *_a, **_k: dict(info))
    elif part == "observation":
        obs = u._observation(u._tick)
        u._observation = counted(lambda _t: dict(obs))
    elif part == "contact scan":
        found = u._judge._scan()
        u._judge._scan = counted(lambda: found)
    return calls


def local_run(n: int, action_repeat: int, part: str | None) -> tuple[float, float]:
    """(total, inside mj_step) us per env step of one run, ``part`` left out (None: the full env)."""
    acts = _actions(n)
    env = gym.make(ENV_ID, action_repeat=action_repeat, max_episode_steps=n + 1)
    env.reset(seed=0)
    env.step(acts[0, 0])  # the wrappers' checks of the first step, before any part is replaced
    calls = _leave_out(env, part, acts) if part is not None else [n]
    _in_physics_ns[0] = 0
    t0 = time.perf_counter_ns()
    for a in acts:
        env.step(a[0])
    total = (time.perf_counter_ns() - t0) / n / 1e3
    env.close()
    if calls[0] != n:
        raise SystemExit(f"{part}: replaced, but the env called the replacement {calls[0]} times in {n} steps "
                         "(renamed in the env? this profile would measure nothing)")
    return total, _in_physics_ns[0] / n / 1e3


def alone(action_repeat: int, n: int = 5000) -> dict[str, float]:
    """us per call of each part in a loop of its own, on one state: warm caches."""
    env = gym.make(ENV_ID, action_repeat=action_repeat)
    env.reset(seed=0)
    for a in _actions(30):
        env.step(a[0])
    u = env.unwrapped
    tick, action = u._tick, _actions(1)[0, 0]
    before = tick.object_poses[u._block]
    parts = {"info": lambda: u._info(tick, None, ticks_elapsed=action_repeat, block_before=before),
             "contact scan": u._judge._scan, "observation": lambda: u._observation(tick),
             "action map": lambda: u._actions.targets(action)}
    out = {}
    for name, f in parts.items():
        t0 = time.perf_counter_ns()
        for _ in range(n):
            f()
        out[name] = (time.perf_counter_ns() - t0) / n / 1e3
    env.close()
    return out


PARTS = ("info", "contact scan", "observation", "action map")
OWN_WORK, REST_OF_IT = "the env's own work", "stepping, the tick's snapshot, wrappers"
STEP_ARITHMETIC = "the step's own arithmetic"


def local_profile(n: int, action_repeat: int, repeats: int) -> None:
    runs: dict[str | None, list[tuple[float, float]]] = {p: [] for p in (None, *PARTS)}
    for _ in range(repeats):
        for part in runs:
            runs[part].append(local_run(n, action_repeat, part))
    med = statistics.median
    physics = med(r[1] for r in runs[None])
    own = [t - p for t, p in runs[None]]
    rest = med(own)
    print(f"\nlocal single, action_repeat {action_repeat}: us per env step (median of {repeats})")
    print(f"  {'physics (inside mj_step)':44s} {physics:7.1f}   the baseline")
    print(f"  {OWN_WORK:44s} {rest:7.1f}   {rest / physics:6.1%} of physics (runs: {min(own):.1f} .. "
          f"{max(own):.1f}); physics is {physics / (physics + rest):.1%} of the step")
    solo = alone(action_repeat)
    shown = 0.0
    for part in PARTS:
        saved = rest - med(t - p for t, p in runs[part])
        shown += 0.0 if part == "contact scan" else saved  # the scan is part of the info
        print(f"    {part + (' (inside the info)' if part == 'contact scan' else ''):42s} {saved:7.1f}   "
              f"{saved / physics:6.1%}   alone {solo[part]:5.1f}")
    print(f"    {REST_OF_IT:42s} {rest - shown:7.1f}   {(rest - shown) / physics:6.1%}")


def batched_profile(n: int, k: int, action_repeat: int, repeats: int) -> None:
    parts = ("_targets", "_observe", "_placement", "_infos")
    times: list[Counter] = []
    steps = max(n // k, 20)
    acts = _actions(steps, k)
    for _ in range(repeats):
        vec = gym.make_vec(ENV_ID, num_envs=k, vectorization_mode="vector_entry_point",
                           action_repeat=action_repeat, max_episode_steps=steps + 1)
        vec.reset(seed=0)
        u = vec.unwrapped if hasattr(vec, "unwrapped") else vec
        spent: Counter = Counter()
        calls: Counter = Counter()

        def timed(owner, name, label):
            f = getattr(owner, name)

            def wrapper(*args, **kwargs):
                calls[label] += 1
                t0 = time.perf_counter_ns()
                try:
                    return f(*args, **kwargs)
                finally:
                    spent[label] += time.perf_counter_ns() - t0
            setattr(owner, name, wrapper)
        timed(u._scenes, "step", "scenes stepped (thread pool)")
        for p in parts:
            timed(u, p, p.strip("_"))
        t0 = time.perf_counter_ns()
        for a in acts:
            vec.step(a)
        spent["total"] = time.perf_counter_ns() - t0
        vec.close()
        missed = {label: c for label, c in calls.items() if c != steps}
        if len(calls) != len(parts) + 1 or missed:
            raise SystemExit(f"batched K = {k}: each timed part should run once a step ({steps} steps), got "
                             f"{dict(calls)} (renamed in the env? this profile would measure nothing)")
        times.append(spent)
    med = {key: statistics.median(t[key] for t in times) / steps / 1e3 for key in times[0]}
    stepped = med["scenes stepped (thread pool)"]
    print(f"\nnative batched K = {k}, action_repeat {action_repeat}: us per vector step (median of {repeats})")
    print(f"  {'scenes stepped (thread pool)':44s} {stepped:7.1f}   the baseline")
    after = med["total"] - stepped
    print(f"  {'after it, on the calling thread alone':44s} {after:7.1f}   {after / stepped:6.1%} of the stepping")
    for p in parts:
        key = p.strip("_")
        print(f"    {key:42s} {med[key]:7.1f}   {med[key] / stepped:6.1%}")
    rest = after - sum(med[p.strip("_")] for p in parts)
    print(f"    {STEP_ARITHMETIC:42s} {rest:7.1f}   {rest / stepped:6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1500, help="env steps per run")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--action-repeat", type=int, nargs="+", default=[4, 1])
    ap.add_argument("--batched", type=int, nargs="*", default=[8], help="K of the native batched env (none: skip)")
    args = ap.parse_args()
    mujoco.mj_step = _timed_mj_step  # the env's physics calls it through the module
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    for ar in args.action_repeat:
        local_profile(args.steps, ar, args.repeats)
        for k in args.batched:
            batched_profile(args.steps, k, ar, args.repeats)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
