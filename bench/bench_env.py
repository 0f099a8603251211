"""Env steps per second of robogym_ros/Handover-v0 against the physics-only limit (figures only).

    python bench/bench_env.py [--steps 1500] [--action-repeat 4] [--vector 1 2 4] [--ros-steps 500]
        [--batched 1 2 8 32] [--ray-actors 2]

physics only: raw ``mj_step`` x decimation x action_repeat per env step, on the same scene with
the same held targets, no Python around it: what no env can beat, measured in this run.
local single: ``gym.make`` (TimeLimit, order and passive checks included), random actions.
local vector K: ``AsyncVectorEnv`` of K local envs; env steps/s = K x vector steps/s.
ros lockstep: one ``robogym_sim`` (paused, cameras off), one step request per env step; measured
alternately with local single (same action_repeat, same step count) and printed beside it.
native batched K, mujoco.rollout alone K, Ray fleet: see bench/batched_rows.py.
Each figure is the median of --repeats runs; physics only and local single are measured
alternately (one of each per repeat), and also given by this process's CPU time, which other
load on the machine does not inflate.
Targets (issue 34, on a quiet machine): local single >= 90 % of the physics-only limit at action_repeat 4;
native batched K = 8 >= 1.7 x local single and >= 90 % of mujoco.rollout alone (K = 8); ros lockstep
>= 50 % of local single at action_repeat 4, >= 30 % at 1. (Issue 9: local vector K = 2 >= 1.6 x single.)
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # DDS stays on this host
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from batched_rows import rows as batched_rows_of  # noqa: E402  (bench/: the batched env, rollout alone, Ray)

import robogym_ros.envs  # noqa: E402,F401  (registers the env)
from robogym_ros.envs import ENV_ID  # noqa: E402
from robogym_ros.envs.actions import ActionMap  # noqa: E402
from robogym_ros.sim.physics import Physics  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402

PHYSICS_DT_S, DECIMATION = 0.002, 5


def actions(n: int, k: int = 1, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, k, 12)).astype(np.float32)


def physics_only(n: int, action_repeat: int) -> float:
    physics = Physics(default_model_path(), PHYSICS_DT_S, DECIMATION, seed=0)
    physics.reset()
    m, d = physics.model, physics.data
    lower, upper = zip(*((j.lower, j.upper) for j in physics.joints))
    targets = [ActionMap(physics.joint_names, lower, upper, normalized=True).targets(a[0]) for a in actions(n)]
    steps = DECIMATION * action_repeat
    t0, c0 = time.perf_counter(), time.process_time()
    for target in targets:
        d.ctrl[:] = target  # the scene's actuators are exactly the 12 servos, in order
        for _ in range(steps):
            mujoco.mj_step(m, d)
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def _physics_rate(args) -> float:
    return physics_only(*args)[0]


def physics_parallel(n: int, k: int, action_repeat: int) -> float:
    """Env steps/s of ``physics_only`` in k processes at once, summed: what k cores give to
    physics alone on this machine, the ceiling of any k-env vector."""
    import multiprocessing
    with multiprocessing.get_context("spawn").Pool(k) as pool:
        return sum(pool.map(_physics_rate, [(n, action_repeat)] * k))


def local_single(n: int, action_repeat: int) -> float:
    env = gym.make(ENV_ID, action_repeat=action_repeat, max_episode_steps=n + 1)
    env.reset(seed=0)
    acts = actions(n)
    t0, c0 = time.perf_counter(), time.process_time()
    for a in acts:
        env.step(a[0])
    rates = n / (time.perf_counter() - t0), n / (time.process_time() - c0)
    env.close()
    return rates


def local_vector(n: int, k: int, action_repeat: int) -> float:
    vec = gym.vector.AsyncVectorEnv(
        [lambda: gym.make(ENV_ID, action_repeat=action_repeat, max_episode_steps=n + 1) for _ in range(k)])
    vec.reset(seed=list(range(k)))
    acts = actions(n // k, k)
    t0 = time.perf_counter()
    for a in acts:
        vec.step(a)
    rate = len(acts) * k / (time.perf_counter() - t0)
    vec.close()
    return rate


def ros_lockstep_vs_local(n: int, action_repeat: int, repeats: int) -> tuple[float, float]:
    """(ros lockstep, local single) env steps/s, medians of ``repeats`` runs of ``n`` steps each,
    measured alternately so that load which comes and goes weighs on both alike."""
    from robogym_ros.envs.vector.sim_fleet import SimFleet
    lockstep, local = [], []
    with SimFleet(1, prefix=f"bench_env_{os.getpid()}_", seed=0, start_paused=True, camera_period_s=0.0) as fleet:
        try:
            env = gym.make(ENV_ID, mode="ros_lockstep", namespace=fleet.namespaces[0],
                           action_repeat=action_repeat, max_episode_steps=n + 1)
        except RuntimeError as exc:
            raise SystemExit(f"{exc}\nsims that died: {fleet.dead()}") from None
        acts = actions(n)
        for _ in range(repeats):
            local.append(local_single(n, action_repeat)[0])
            env.reset(seed=0)
            t0 = time.perf_counter()
            for a in acts:
                env.step(a[0])
            lockstep.append(n / (time.perf_counter() - t0))
        env.close()
    return statistics.median(lockstep), statistics.median(local)


def physics_and_single(n: int, action_repeat: int, repeats: int) -> tuple[float, float, float, float, float]:
    """Physics only and local single measured alternately, ``repeats`` times each, so that a
    machine whose speed drifts weighs on both alike: their medians (wall and CPU) and the median
    of the per-pair CPU-time ratios single / physics."""
    runs = [(physics_only(n, action_repeat), local_single(n, action_repeat)) for _ in range(repeats)]
    med = statistics.median
    return (med(p[0] for p, _ in runs), med(p[1] for p, _ in runs), med(s[0] for _, s in runs),
            med(s[1] for _, s in runs), med(s[1] / p[1] for p, s in runs))


def median_of(repeats: int, f, *args):
    """Median of each figure over ``repeats`` runs (a run gives one figure or a tuple of them)."""
    runs = [f(*args) for _ in range(repeats)]
    if isinstance(runs[0], tuple):
        return tuple(statistics.median(r[i] for r in runs) for i in range(len(runs[0])))
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1500, help="env steps per local measurement")
    ap.add_argument("--action-repeat", type=int, nargs="+", default=[4, 1],
                    help="control ticks per env step (4 is the env's default)")
    ap.add_argument("--vector", type=int, nargs="+", default=[1, 2, 4], help="K of the vector envs")
    ap.add_argument("--ros-steps", type=int, default=500,
                    help="env steps over ROS, and of local single beside them (0 = skip)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batched", type=int, nargs="+", default=[1, 2, 8, 32],
                    help="K of the native batched env (each with mujoco.rollout alone on the same work)")
    ap.add_argument("--ray-actors", type=int, default=2, help="actors of the Ray fleet, 4 scenes each (0 = skip)")
    args = ap.parse_args()
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; env steps/s, median of "
          f"{args.repeats}")
    for ar in args.action_repeat:
        limit, limit_cpu, single, single_cpu, single_share = physics_and_single(args.steps, ar, args.repeats)
        rows = [("physics only (mj_step x decimation x action_repeat)", limit),
                ("local single (gym.make)", single)]
        for k in args.vector:
            if k > 1:
                rows.append((f"physics only, {k} processes at once (the ceiling for K = {k})",
                             median_of(args.repeats, physics_parallel, args.steps, k, ar)))
            rows.append((f"local vector K = {k} (AsyncVectorEnv)",
                         median_of(args.repeats, local_vector, args.steps, k, ar)))
        batched_rows, batched_notes = batched_rows_of(args.steps, args.batched, args.ray_actors, ar, args.repeats)
        rows += batched_rows
        if args.ros_steps:
            lockstep, beside = ros_lockstep_vs_local(args.ros_steps, ar, args.repeats)
            rows.append(("local single, measured alternately with ros lockstep", beside))
            rows.append(("ros lockstep (1 sim)", lockstep))
        print(f"\naction_repeat {ar} ({ar * DECIMATION} physics steps of {PHYSICS_DT_S * 1e3:g} ms per env step)")
        print(f"  {'':55s} {'steps/s':>9s} {'/ physics':>10s} {'/ single':>9s}")
        for name, rate in rows:
            print(f"  {name:55s} {rate:9.0f} {rate / limit:9.0%} {rate / single:8.2f}x")
        # CPU time of this process: what other load on the machine does not inflate.
        print(f"  by CPU time: physics only {limit_cpu:.0f}/s, local single {single_cpu:.0f}/s (medians), measured "
              f"alternately: single {single_share:.0%} of the limit (median of the pairs)"
              + (" (target >= 90 %)" if ar == 4 else ""))
        for note in batched_notes:
            print(f"  {note}")
        if args.ros_steps:
            print(f"  ros lockstep {lockstep:.0f} steps/s beside local single {beside:.0f} steps/s, measured "
                  f"alternately in this run: {lockstep / beside:.0%} of local (target >= {50 if ar >= 4 else 30} %)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
