"""Success rate of the scripted handover expert in local mode, and where each failure happened.

    python -m robogym_ros.tools.expert_success [--seeds 100] [--first-seed 0] [--verbose]

Runs ``robogym_ros/Handover-v0`` (local mode, the registered time limit: 250 steps x 4 control
ticks = 10 s of sim time) with :class:`robogym_ros.expert.HandoverExpert`, one episode per seed
(``reset(seed=s)``), and prints the share of episodes that end in success within the limit and,
for each failure, the expert's phase and reason. Exit 0 when the rate reaches ``--min-rate``.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="number of episodes (seeds first-seed ..)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--min-rate", type=float, default=0.9, help="exit 1 below this success share")
    parser.add_argument("--verbose", action="store_true", help="one line per episode")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.first_seed < 0 or not 0.0 <= args.min_rate <= 1.0:
        parser.error("--seeds must be >= 1, --first-seed >= 0 and --min-rate in [0, 1]")
    import gymnasium as gym

    import robogym_ros.envs  # noqa: F401  (registers the env)
    from robogym_ros.expert.runner import EnvExpert, run_episode

    env = gym.make("robogym_ros/Handover-v0")
    expert = EnvExpert(env)
    results, t0 = [], time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        r = run_episode(env, seed, expert)
        results.append(r)
        if args.verbose:
            what = "success" if r.success else f"FAIL in {r.phase}: {r.failure or 'time limit'}"
            retries = f" (retries: {'; '.join(r.events)})" if r.events else ""
            print(f"seed {seed}: {what} at {r.sim_time_s:.2f} s{retries}", flush=True)
    env.close()
    ok = [r for r in results if r.success]
    failed = [r for r in results if not r.success]
    rate = len(ok) / len(results)
    times = sorted(r.sim_time_s for r in ok)
    print(f"expert success: {len(ok)}/{len(results)} = {100 * rate:.1f} % within the time limit "
          f"(seeds {args.first_seed}..{args.first_seed + args.seeds - 1}; "
          f"{time.perf_counter() - t0:.0f} s wall)")
    if times:
        print(f"sim time to success: median {times[len(times) // 2]:.2f} s, max {times[-1]:.2f} s")
    retried = sum(1 for r in ok if r.events)
    if retried:
        print(f"successes after a retried grasp: {retried}")
    by_phase = collections.Counter(r.phase for r in failed)
    for phase, n in by_phase.most_common():
        print(f"  failed in {phase}: {n}")
    for r in failed:
        print(f"  seed {r.seed}: {r.phase}: {r.failure or 'time limit reached'}")
    return 0 if rate >= args.min_rate else 1


if __name__ == "__main__":
    sys.exit(main())
