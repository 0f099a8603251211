"""Success rate of the scripted handover expert in local mode, and where each failure happened.

    python -m robogym_ros.tools.expert_success [--seeds 100] [--first-seed 0 | --random-seeds
        [--draw-seed D] | --seed-list 3,17,...] [--per-seed] [--min-rate 0.95]

Runs ``robogym_ros/Handover-v0`` (local mode, the registered time limit: 250 steps x 4 control
ticks = 10 s of sim time) with :class:`robogym_ros.expert.HandoverExpert`, one episode per seed
(``reset(seed=s)``), and prints the share of episodes whose block is placed in the tray (the
env's own success: inside the tray, touching no arm, at rest, robogym_ros.task.placement)
within the limit and, for each failure, the expert's phase and reason. ``--random-seeds`` draws
the seeds from the sim's whole seed range (from the OS's entropy, or ``--draw-seed``) and prints
them, so the run can be repeated with ``--seed-list``. ``--per-seed`` prints one line per
episode with a digest of its actions: a local rollout depends on the seed alone, so two runs of
the same seeds, on a quiet or a loaded machine, print the same lines. Exit 0 when the rate
reaches ``--min-rate``.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np

from robogym_ros.envs.local import SEED_LIMIT  # the sim node's seed range


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed-list must be integers separated by commas, got {text!r}") from None
    if not seeds or any(not 0 <= s < SEED_LIMIT for s in seeds):
        raise argparse.ArgumentTypeError(f"--seed-list needs seeds in 0 .. {SEED_LIMIT - 1}, got {text!r}")
    return seeds


def choose_seeds(args, parser) -> list[int]:
    if args.seed_list is not None:
        return args.seed_list
    if args.random_seeds:
        rng = np.random.default_rng(args.draw_seed)
        return sorted(int(s) for s in rng.choice(SEED_LIMIT, size=args.seeds, replace=False))
    return list(range(args.first_seed, args.first_seed + args.seeds))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="number of episodes")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, first-seed + 1, ...")
    how.add_argument("--random-seeds", action="store_true", help="draw --seeds seeds at random from the whole range")
    how.add_argument("--seed-list", type=_seed_list, help="exactly these seeds (comma-separated)")
    parser.add_argument("--draw-seed", type=int, help="with --random-seeds: the draw's own seed (default: OS entropy)")
    parser.add_argument("--min-rate", type=float, default=0.95, help="exit 1 below this success share")
    parser.add_argument("--per-seed", "--verbose", action="store_true", dest="per_seed",
                        help="one line per episode, with a digest of its actions")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.first_seed < 0 or not 0.0 <= args.min_rate <= 1.0:
        parser.error("--seeds must be >= 1, --first-seed >= 0 and --min-rate in [0, 1]")
    if args.draw_seed is not None and not args.random_seeds:
        parser.error("--draw-seed needs --random-seeds")
    seeds = choose_seeds(args, parser)
    import gymnasium as gym

    import robogym_ros.envs  # noqa: F401  (registers the env)
    from robogym_ros.expert.runner import EnvExpert, run_episode

    if args.random_seeds:
        print(f"random seeds ({len(seeds)}; rerun with --seed-list): {','.join(map(str, seeds))}", flush=True)
    env = gym.make("robogym_ros/Handover-v0")
    limit = env.spec.max_episode_steps
    expert = EnvExpert(env)
    results, t0 = [], time.perf_counter()
    for seed in seeds:
        r = run_episode(env, seed, expert)
        results.append(r)
        if args.per_seed:
            what = "placed" if r.success else f"FAIL in {r.phase}: {r.failure or 'time limit'}"
            retries = f" (retries: {'; '.join(r.events)})" if r.events else ""
            print(f"seed {seed}: {what} at step {r.steps} ({r.sim_time_s:.2f} s), actions {r.digest}{retries}",
                  flush=True)
    env.close()
    ok = [r for r in results if r.success]
    failed = [r for r in results if not r.success]
    rate = len(ok) / len(results)
    where = (f"seeds {seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[0] + len(seeds)))
             else f"{len(seeds)} seeds")
    print(f"expert success: {len(ok)}/{len(results)} = {100 * rate:.1f} % placed in the tray within the time limit "
          f"({limit} steps = {limit * expert._dt_s:g} s; {where}; {time.perf_counter() - t0:.0f} s wall)")
    times = sorted(r.sim_time_s for r in ok)
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
