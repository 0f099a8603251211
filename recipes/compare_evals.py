"""Whether two evaluations differ beyond chance: Fisher's exact test on their successes.

    .venv/bin/python recipes/compare_evals.py robogym_out/a/outcomes.json robogym_out/b/outcomes.json

Each file is the per-seed outcomes recipes/lerobot_recipe.py writes (``outcomes_<seed>_<n>.json``).
Prints each run's success with its Wilson 95 % interval, the two-sided p-value, and the verdict at
``--alpha`` (0.05). Runs on the same seeds are paired by nature; Fisher's test treats them as
independent samples, the conservative reading. Exit 0: printed; 2: usage.
"""
from __future__ import annotations

import argparse
import sys

from robogym_ros.export.evaluation import fisher_exact, read_outcomes, summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a", help="the first run's outcomes (.json)")
    p.add_argument("b", help="the second run's outcomes (.json)")
    p.add_argument("--alpha", type=float, default=0.05, help="the test's level, 0 < alpha < 1")
    args = p.parse_args(argv)
    if not 0 < args.alpha < 1:
        p.error(f"--alpha must be in 0 .. 1 (exclusive), got {args.alpha}")
    try:
        a, b = read_outcomes(args.a), read_outcomes(args.b)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    if not a or not b:
        print("error: a run without episodes", file=sys.stderr)
        return 2
    ka, kb = sum(ok for _, ok in a), sum(ok for _, ok in b)
    pv = fisher_exact(ka, len(a), kb, len(b))
    print(f"a: {summary(a)}  ({args.a})")
    print(f"b: {summary(b)}  ({args.b})")
    print(f"Fisher's exact test, two-sided: p = {pv:.4g}: "
          + ("they differ beyond chance" if pv < args.alpha else "no difference beyond chance")
          + f" at alpha {args.alpha:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
