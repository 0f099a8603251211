"""The scripted expert over ROS in real time: the bringup launch on seeds nobody tuned to.

    source ~/.cache/ros-toolchain/activate-ros.sh   # or a ROS install
    colcon build --symlink-install --packages-select robogym_ros && source install/local_setup.bash
    python recipes/expert_ros_seeds.py --seeds 10 [--hog 2] [--seed-list 5,17,...] [--duration-s 30]

Each seed is one ``ros2 launch robogym_ros bringup.launch.py expert:=true seed:=S duration_s:=D``
(sim with its cameras, robot_state_publisher, the expert, the recorder recording a bag), run to
its end. From its output the table takes the expert's result (its own judgement: the block
placed in the tray, touching no arm, at rest) and the recorder's verdict. ``--hog N`` runs N
busy loops (plain Python processes, at this process's priority) for the whole series, the way a
loaded machine takes CPU from the nodes. Seeds are drawn at random from the sim's range unless
listed; they are printed so a run can be repeated. Exit 0 when at least ``--min-successes`` of
the seeds succeed and every verdict is PASS. Bags and logs go to ``--out`` (a temporary folder
unless given).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SEED_LIMIT = 2**31  # the sim node's seed range
ANSI = re.compile(r"\x1b\[[0-9;]*m")
EXPERT = re.compile(r"robogym_expert\]: episode 1: (SUCCESS|FAIL in \S+): (.*?) after ([0-9.]+) s sim time"
                    r"(?: \((.*?)\))?(?:; retries: (.*))?$", re.MULTILINE)
VERDICT = re.compile(r"robogym_recorder verdict: (\w+) \(exit (\d+)\)(.*)")


def hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"], start_new_session=True)
            for _ in range(n)]


def run_seed(seed: int, duration_s: float, out: Path, namespace: str) -> dict:
    """One bringup launch; its expert result and verdict, parsed from its output."""
    log = out / f"launch_{seed}.log"
    cmd = ["ros2", "launch", "robogym_ros", "bringup.launch.py", "expert:=true", f"seed:={seed}",
           f"duration_s:={duration_s:g}", f"record:={out / f'bag_{seed}'}"]
    if namespace:
        cmd.append(f"namespace:={namespace}")
    t0 = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(duration_s + 90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # the whole launch: a SIGTERM to ros2 launch alone leaves its nodes
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    text = ANSI.sub("", log.read_text())
    expert, verdict = EXPERT.search(text), VERDICT.search(text)
    return {"seed": seed, "wall_s": time.monotonic() - t0, "log": str(log),
            "expert": expert.group(1) if expert else "no result (the episode did not end within the recording)",
            "placement": expert.group(2) if expert else "", "sim_time_s": float(expert.group(3)) if expert else None,
            "failure": "; ".join(x for x in (expert.group(4), expert.group(5) and f"retries: {expert.group(5)}")
                                 if x) if expert else "",
            "verdict": verdict.group(1) if verdict else "no verdict", "verdict_detail": verdict.group(3).strip(" -")
            if verdict else ""}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=10, help="how many seeds, drawn at random (default 10)")
    p.add_argument("--seed-list", help="exactly these seeds (comma-separated) instead of a draw")
    p.add_argument("--draw-seed", type=int, help="the draw's own seed (default: OS entropy)")
    p.add_argument("--hog", type=int, default=0, metavar="N", help="N busy-loop processes for the whole series")
    p.add_argument("--duration-s", type=float, default=45.0, help="the recorder's duration (wall s) per seed")
    p.add_argument("--min-successes", type=int, help="exit 1 below this many (default: 9 of 10, scaled)")
    p.add_argument("--namespace", default="", help="the launch's namespace (default none)")
    p.add_argument("--out", help="bags and logs here (default: a temporary folder, removed unless a seed failed)")
    args = p.parse_args(argv)
    if shutil.which("ros2") is None:
        print("ros2 is not on PATH: source a ROS install or ~/.cache/ros-toolchain/activate-ros.sh, and the "
              "workspace with robogym_ros built in it (install/local_setup.bash)", file=sys.stderr)
        return 2
    if subprocess.run(["ros2", "pkg", "prefix", "robogym_ros"], capture_output=True).returncode:
        print("ros2 does not find the robogym_ros package: build it with colcon and source install/local_setup.bash",
              file=sys.stderr)
        return 2
    if args.seed_list:
        seeds = [int(s) for s in args.seed_list.split(",") if s.strip()]
    else:
        rng = np.random.default_rng(args.draw_seed)
        seeds = sorted(int(s) for s in rng.choice(SEED_LIMIT, size=args.seeds, replace=False))
    if not seeds or any(not 0 <= s < SEED_LIMIT for s in seeds) or args.hog < 0:
        p.error(f"seeds must be in 0 .. {SEED_LIMIT - 1}, --hog >= 0")
    need = args.min_successes if args.min_successes is not None else int(np.ceil(0.9 * len(seeds)))
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="expert_ros_seeds_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"seeds ({len(seeds)}; rerun with --seed-list): {','.join(map(str, seeds))}")
    print(f"bringup expert:=true, duration_s:={args.duration_s:g}, cameras on, recorder recording; "
          f"{args.hog} busy loop(s); load average before: {os.getloadavg()[0]:.2f}; logs in {out}", flush=True)
    loops = hogs(args.hog)
    rows = []
    try:
        for seed in seeds:
            r = run_seed(seed, args.duration_s, out, args.namespace)
            rows.append(r)
            sim = f"{r['sim_time_s']:.2f} s" if r["sim_time_s"] is not None else "-"
            print(f"seed {seed:>10}: expert {r['expert']:<22} at {sim:>8}  verdict {r['verdict']}"
                  + (f"  ({r['failure']})" if r["failure"] else ""), flush=True)
    finally:
        for proc in loops:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    successes = sum(r["expert"] == "SUCCESS" for r in rows)
    passes = sum(r["verdict"] == "PASS" for r in rows)
    print("\n| seed | expert | sim time to the result | recorder verdict |\n|---|---|---|---|")
    for r in rows:
        sim = f"{r['sim_time_s']:.2f} s" if r["sim_time_s"] is not None else "-"
        what = r["expert"] + (f" ({r['failure']})" if r["failure"] else "")
        print(f"| {r['seed']} | {what} | {sim} | {r['verdict']} |")
    print(f"\nexpert: {successes}/{len(rows)} succeeded (need {need}); recorder: {passes}/{len(rows)} PASS; "
          f"{args.hog} busy loop(s); load average after: {os.getloadavg()[0]:.2f}")
    ok = successes >= need and passes == len(rows)
    if ok and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
