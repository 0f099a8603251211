"""Evaluations you can trust: per-seed outcomes of a lerobot-eval run, success with its Wilson 95 %
interval, and Fisher's exact test of whether two runs differ beyond chance. Standard library only.

lerobot-eval's ``eval_info.json`` keeps each episode's success in episode order
(``per_task[*].metrics.successes``) but not its seed; episode i ran seed S + i (``--seed=S``,
the plugin's promise), so the outcomes are (S + i, success).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

Z_95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of a success rate (fractions 0 .. 1); ValueError on bad counts."""
    if not (isinstance(n, int) and n >= 1 and isinstance(successes, int) and 0 <= successes <= n):
        raise ValueError(f"successes must be an integer in 0 .. n and n an integer >= 1, got {successes!r} of {n!r}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact(a_successes: int, a_n: int, b_successes: int, b_n: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2 x 2 table (successes, failures) of two runs:
    the probability, with the margins fixed, of a table at most as likely as the one seen."""
    for name, k, n in (("a", a_successes, a_n), ("b", b_successes, b_n)):
        if not (isinstance(n, int) and n >= 1 and isinstance(k, int) and 0 <= k <= n):
            raise ValueError(f"run {name}: successes must be an integer in 0 .. n, n >= 1; got {k!r} of {n!r}")
    total_successes, total = a_successes + b_successes, a_n + b_n

    def probability(k: int) -> float:  # hypergeometric: k of run a's a_n among the total_successes
        return math.comb(a_n, k) * math.comb(b_n, total_successes - k) / math.comb(total, total_successes)

    seen = probability(a_successes)
    low, high = max(0, total_successes - b_n), min(a_n, total_successes)
    p = sum(q for q in map(probability, range(low, high + 1)) if q <= seen * (1 + 1e-7))
    return min(1.0, p)


def outcomes(eval_info: dict, first_seed: int) -> list[tuple[int, bool]]:
    """(seed, success) of each episode of a lerobot-eval run started at ``--seed=first_seed``."""
    successes = [bool(s) for task in eval_info.get("per_task", []) for s in task["metrics"]["successes"]]
    if not successes:
        raise ValueError("eval_info.json holds no per-episode successes (per_task[*].metrics.successes)")
    return [(first_seed + i, s) for i, s in enumerate(successes)]


def max_rewards(eval_info: dict) -> list[float]:
    """Each episode's highest reward, in episode order (``per_task[*].metrics.max_rewards``)."""
    values = [float(r) for task in eval_info.get("per_task", []) for r in task["metrics"].get("max_rewards", [])]
    if not values:
        raise ValueError("eval_info.json holds no per-episode max rewards (per_task[*].metrics.max_rewards)")
    return values


def write_outcomes(path_stem: Path, rows: list[tuple[int, bool]],
                   furthest_stage: list[str] | None = None) -> tuple[Path, Path]:
    """``<stem>.json`` ({"seeds": [...], "success": [...]}, and "furthest_stage" when given) and
    ``<stem>.csv`` (seed,success[,furthest_stage])."""
    path_stem = Path(path_stem)
    json_path, csv_path = path_stem.with_suffix(".json"), path_stem.with_suffix(".csv")
    data = {"seeds": [s for s, _ in rows], "success": [ok for _, ok in rows]}
    if furthest_stage is not None:
        if len(furthest_stage) != len(rows):
            raise ValueError(f"{len(furthest_stage)} furthest stages for {len(rows)} episodes")
        data["furthest_stage"] = list(furthest_stage)
    json_path.write_text(json.dumps(data))
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["seed", "success"] + ["furthest_stage"] * (furthest_stage is not None))
        for k, (s, ok) in enumerate(rows):
            writer.writerow([s, int(ok)] + ([furthest_stage[k]] if furthest_stage is not None else []))
    return json_path, csv_path


def failures_by_stage(rows: list[tuple[int, bool]], furthest_stage: list[str], stages: list[str]) -> str:
    """``failed episodes by the furthest stage reached: lift 12, handover 30`` (``stages`` in order,
    the last one success). ValueError where a stage and its episode's success disagree: a placed
    episode below the last stage, or a failed one at it (lerobot-eval's max_reward counts the
    masked steps after an episode ended as 0, the top staged reward, when episodes of one batch
    end at different steps: evaluate with --eval.batch_size=1)."""
    wrong = [seed for k, (seed, ok) in enumerate(rows) if ok != (furthest_stage[k] == stages[-1])]
    if wrong:
        raise ValueError(f"seeds {wrong[:5]}: success and furthest stage disagree (evaluate with --eval.batch_size=1)")
    failed = [furthest_stage[k] for k, (_, ok) in enumerate(rows) if not ok]
    counts = ", ".join(f"{name} {failed.count(name)}" for name in stages if name in failed)
    return f"failed episodes by the furthest stage reached: {counts or 'no episode failed'}"


def read_outcomes(path: Path) -> list[tuple[int, bool]]:
    """What ``write_outcomes`` wrote (its .json)."""
    data = json.loads(Path(path).read_text())
    return list(zip((int(s) for s in data["seeds"]), (bool(ok) for ok in data["success"]), strict=True))


def summary(rows: list[tuple[int, bool]]) -> str:
    """``k of n = p % (Wilson 95 %: lo .. hi %)``."""
    k, n = sum(ok for _, ok in rows), len(rows)
    low, high = wilson_interval(k, n)
    return f"{k} of {n} = {100 * k / n:.1f} % (Wilson 95 %: {100 * low:.1f} .. {100 * high:.1f} %)"
