"""The main job without a ROS install: sim + motion + recorder, then the verdict.

    robogym_demo [--duration-s 10] [--out robogym_out]

The same three nodes as launch/bringup.launch.py, started as processes of their own. The
exit code is the recorder's: 0 pass, 1 fail, 2 usage error or no data.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _node(module: str, namespace: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args, "--ros-args", "-r", f"__ns:=/{namespace}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=10.0, help="recording length [s]")
    parser.add_argument("--out", default="robogym_out", help="folder for the bag and verdict")
    parser.add_argument("--namespace", default="robogym_demo")
    args = parser.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    bag = out / f"bag_{time.strftime('%Y%m%d_%H%M%S')}"
    verdict = out / "verdict.json"

    print(f"robogym_demo: sim + motion + recorder for {args.duration_s:g} s "
          f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')})", flush=True)
    log = open(out / "nodes.log", "w")
    helpers = [
        subprocess.Popen(_node("robogym_ros.nodes.sim_node", args.namespace), stdout=log, stderr=log),
        subprocess.Popen(_node("robogym_ros.nodes.motion_node", args.namespace), stdout=log, stderr=log),
    ]
    try:
        recorder = subprocess.run(_node(
            "robogym_ros.nodes.recorder_node", args.namespace, "--duration", str(args.duration_s),
            "--record", str(bag), "--json", str(verdict)))
        code = recorder.returncode
    except KeyboardInterrupt:
        code = 130
    finally:
        for proc in helpers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in helpers:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    print(f"bag: {bag}\nverdict: {verdict}\nnode logs: {out / 'nodes.log'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
