"""The reference MCP agent's success against its thinking time: the table in docs/agents.md.

    python recipes/agent_latency.py [--seeds 20] [--think-s 0 0.25 0.5 1 2] [--no-lockstep]
        [--seed-list 5,17,...] [--out results.jsonl]

Each episode is one ``examples/mcp_agent.py --start-sim --seed S`` (its own sim with cameras
off, its own robogym_mcp over stdio, its own ROS domain): in lockstep (the sim paused, every
wait steps it) and in real time with each thinking delay (seconds the agent sleeps before each
decision, on the observation it made before, while the sim runs on). Success is the env's,
judged by the physics in the server (``task.success`` of the last observation, the block at
rest in the tray); the agent's exit code carries it. The same seeds for every row, drawn at
random from the sim's range unless listed (printed, so a run can be repeated). Per row: the
successes, Wilson's 95 % interval, the median sim time and wall time an episode took.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from robogym_ros.export.evaluation import wilson_interval

AGENT = Path(__file__).resolve().parents[1] / "examples" / "mcp_agent.py"
SEED_LIMIT = 2**31
EPISODE_LIMIT_S = 600


def episode(seed: int, think_s: float | None, domain: int) -> dict:
    """One episode; ``think_s`` None: lockstep."""
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(domain),
               MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    mode = ["--lockstep"] if think_s is None else ["--think-s", str(think_s)]
    args = [sys.executable, str(AGENT), "--start-sim", "--quiet", "--seed", str(seed),
            "--namespace", f"/latency_{domain}", *mode]
    try:
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=EPISODE_LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"seed": seed, "success": False, "failed": f"no end within {EPISODE_LIMIT_S} s"}
    lines = run.stdout.strip().splitlines()
    try:
        outcome = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"seed": seed, "success": False, "failed": f"exit {run.returncode}: {run.stderr[-300:]}"}
    if outcome.get("success") != (run.returncode == 0):
        raise RuntimeError(f"exit code {run.returncode} disagrees with the outcome {outcome}")
    return outcome


def median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f}" if xs else "-"


def row(name: str, outcomes: list[dict]) -> str:
    n, k = len(outcomes), sum(bool(o["success"]) for o in outcomes)
    lo, hi = wilson_interval(k, n)
    sim = [o["sim_s"] for o in outcomes if "sim_s" in o]
    wall = [o["wall_s"] for o in outcomes if "wall_s" in o]
    return (f"| {name} | {k}/{n} | {100 * k / n:.0f} % | {100 * lo:.0f}-{100 * hi:.0f} % | {median(sim)} "
            f"| {median(wall)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--seed-list", default="", help="comma-separated seeds (instead of random ones)")
    parser.add_argument("--think-s", type=float, nargs="*", default=[0.0, 0.25, 0.5, 1.0, 2.0])
    parser.add_argument("--no-lockstep", action="store_true")
    parser.add_argument("--out", default="", help="append every episode's outcome here (JSON lines)")
    args = parser.parse_args()
    seeds = ([int(s) for s in args.seed_list.split(",") if s] if args.seed_list
             else [random.SystemRandom().randrange(SEED_LIMIT) for _ in range(args.seeds)])
    print("seeds:", ",".join(map(str, seeds)), flush=True)
    modes = ([] if args.no_lockstep else [None]) + list(args.think_s)
    domain = 150 + os.getpid() % 80  # <= 232, apart from the tests' domains
    lines = []
    for think in modes:
        name = "lockstep" if think is None else f"real time, thinking {think:g} s a decision"
        outcomes = []
        for seed in seeds:
            outcome = episode(seed, think, domain)
            outcomes.append(outcome)
            print(f"  {name}: seed {seed}: {'placed' if outcome['success'] else 'FAILED'}"
                  + ("" if outcome["success"] else f" ({outcome.get('failed', outcome.get('stage'))})"), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps({"mode": name, **outcome}) + "\n")
        lines.append(row(name, outcomes))
    print("\n| mode | placed | rate | 95 % interval (Wilson) | median sim s | median wall s |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
