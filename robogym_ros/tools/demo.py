"""The main job without a ROS install: sim + motion + recorder, then the verdict and its report.

    robogym_demo [--duration-s 10] [--out robogym_out] [--no-report] [--expert] [--seed N]

The same three nodes as launch/bringup.launch.py, started as processes of their own. The
exit code is the recorder's: 0 pass, 1 fail, 2 usage error or no data. ``--expert`` moves the
arms with the scripted handover expert (robogym_ros.nodes.expert.node) instead of the fixed
path and prints its episodes' results (``<out>/expert.json``) beside the verdict. Then the verdict
and the bag become ``<out>/report/report.html`` with its plots (robogym_ros.recorder.report.page).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from robogym_ros.processes import stop_processes


def _node(module: str, namespace: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args, "--ros-args", "-r", f"__ns:=/{namespace}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=10.0, help="recording length [s]")
    parser.add_argument("--out", default="robogym_out", help="folder for the bag and verdict")
    parser.add_argument("--namespace", default="robogym_demo")
    parser.add_argument("--no-report", action="store_true", help="skip report.html")
    parser.add_argument("--expert", action="store_true", help="the scripted handover expert moves the arms")
    parser.add_argument("--seed", type=int, default=None, help="the sim's seed (its scene)")
    args = parser.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    bag = out / f"bag_{time.strftime('%Y%m%d_%H%M%S')}"
    verdict = out / "verdict.json"

    print(f"robogym_demo: sim + {'expert' if args.expert else 'motion'} + recorder for {args.duration_s:g} s "
          f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')})", flush=True)
    log = open(out / "nodes.log", "w")
    sim_args = ["-p", f"seed:={args.seed}"] if args.seed is not None else []
    results = out / "expert.json"
    if args.expert:
        results.unlink(missing_ok=True)
        mover = _node("robogym_ros.nodes.expert", args.namespace) + ["-p", f"results_json:={results}"]
    else:
        mover = _node("robogym_ros.nodes.motion", args.namespace)
    helpers = [
        subprocess.Popen(_node("robogym_ros.nodes.sim_node", args.namespace) + sim_args, stdout=log, stderr=log),
        subprocess.Popen(mover, stdout=log, stderr=log),
    ]
    try:
        recorder = subprocess.run(_node(
            "robogym_ros.nodes.recorder", args.namespace, "--duration", str(args.duration_s),
            "--record", str(bag), "--json", str(verdict)))
        code = recorder.returncode
    except KeyboardInterrupt:
        code = 130
    finally:
        stop_processes(helpers, 15.0)
        log.close()
    if args.expert:
        print(f"expert: {_expert_summary(results)}")
    print(f"bag: {bag}\nverdict: {verdict}\nnode logs: {out / 'nodes.log'}")
    if not args.no_report and bag.exists() and verdict.exists():
        print(f"report: {write_demo_report(bag, verdict, out / 'report')}")
    return code


def _expert_summary(results: Path) -> str:
    if not results.exists():
        return "no episode ended within the recording (make --duration-s longer)"
    lines = []
    for r in json.loads(results.read_text()):
        what = "SUCCESS (placed in the tray)" if r["success"] else f"FAIL ({r['failure'] or r['phase']})"
        lines.append(f"episode {r['episode']}: {what}, block {r.get('placement', '')}, {r['distance_m'] * 1e3:.0f} mm "
                     f"from the goal after {r['sim_time_s']:.2f} s sim time")
    return "; ".join(lines)


def write_demo_report(bag: Path, verdict_json: Path, out_dir: Path) -> Path:
    """report.html from the recorder's verdict and the bag it wrote; a report that cannot be
    made is said in one line, and the demo's exit code stays the recorder's."""
    from robogym_ros.recorder.bag.format import BagError
    from robogym_ros.recorder.bag.reader import read_bag
    from robogym_ros.recorder.report.data import ReportData
    from robogym_ros.recorder.report.inputs import frames_from_bag, judged_window_ns, verdict_from_dict
    from robogym_ros.recorder.report.page import write_report
    verdict = verdict_from_dict(json.loads(verdict_json.read_text()))
    try:
        data = read_bag(bag)
        report_data = None
        if data.spec is not None and data.ground_truth is not None:
            frames = frames_from_bag(bag, data.images, window_ns=judged_window_ns(verdict))
            report_data = ReportData.from_bag(data, data.spec, frames=frames)
    except (BagError, ValueError) as exc:
        print(f"robogym_demo: the report has no plots: {exc}", file=sys.stderr)
        report_data = None
    return write_report(out_dir, verdict, report_data).html


if __name__ == "__main__":
    sys.exit(main())
