"""Pacing at real time with a viewer open, against the same sim without one, in the same run.

One sim process (``python -m robogym_ros.nodes.sim_node``: real time, its default cameras,
three 320x240 at 10 Hz) moved by the scripted motion (so every frame differs and encodes as
frames do). Windows of --duration-s alternate: the baseline (no viewer), then robogym_viewer
with --viewers pages open on it (headless Chromium where it is installed, else a reader of
/frames per viewer), --rounds times. A window's late steps and lateness come from the sim's
own /diagnostics, differenced over the window; with them the load average and the CPU of the
sim node, its physics process and the viewer. Prints figures; asserts nothing.

    python bench/bench_viewer.py --duration-s 30 [--rounds 2] [--viewers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from robogym_ros import contract  # noqa: E402
from robogym_ros.processes import stop_processes  # noqa: E402
from robogym_ros.ros.qos import DIAGNOSTICS_QOS, SPEC_QOS  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "test" / "harness"))
from browser import Browser, chromium_path  # noqa: E402

NAMESPACE = "bench_viewer"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and all its descendants (a browser is many processes)."""
    return cpu_s(pid) + sum(tree_cpu_s(child) for child in children(pid))


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return found


class SimStatus:
    """The sim's /diagnostics status, as it arrives (about once a second)."""

    def __init__(self):
        self.node = rclpy.create_node("bench_viewer_diagnostics")
        self._cv = threading.Condition()
        self.values: list[tuple[float, dict]] = []
        self.spec: dict = {}
        self.node.create_subscription(DiagnosticArray, contract.DIAGNOSTICS, self._on, DIAGNOSTICS_QOS)
        self.node.create_subscription(String, f"/{NAMESPACE}/{contract.SPEC_TOPIC}",
                                      lambda m: self.spec.update(json.loads(m.data)), SPEC_QOS)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self.node)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stopping.is_set():
            self._executor.spin_once(timeout_sec=0.1)

    def close(self) -> None:
        """Stop spinning before ROS is shut down (tearing it down under a spin aborts)."""
        self._stopping.set()
        self._thread.join(10.0)
        self._executor.remove_node(self.node)
        self._executor.shutdown()
        self.node.destroy_node()

    def _on(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.hardware_id == f"/{NAMESPACE}/{contract.SIM_NODE}":
                with self._cv:
                    self.values.append((time.monotonic(), {kv.key: kv.value for kv in status.values}))
                    self._cv.notify_all()

    def next(self, timeout_s: float = 30.0) -> tuple[float, dict]:
        with self._cv:
            n = len(self.values)
            if not self._cv.wait_for(lambda: len(self.values) > n, timeout_s):
                raise TimeoutError("no diagnostics from the sim")
            return self.values[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StreamReader:
    """A viewer without a browser: reads /frames as fast as it comes, counting parts."""

    def __init__(self, url: str):
        self.parts = 0
        self._stop = False
        self._response = urllib.request.urlopen(url, timeout=30)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            while not self._stop:
                line = self._response.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                    self._response.readline()
                    self._response.read(length)
                    self.parts += 1
        except OSError:
            pass

    def close(self) -> None:
        self._stop = True
        self._response.close()


class Viewer:
    """robogym_viewer and its pages, open until close()."""

    def __init__(self, count: int):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.viewer", "--namespace", NAMESPACE,
                                      "--port", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "state", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.kind = "chromium" if chromium_path() else "MJPEG reader"
        self.pages = []
        for _ in range(count):
            if chromium_path():
                browser = Browser(1100, 480)
                browser.call("Page.navigate", session=True, url=url)
                browser.wait_event("Page.loadEventFired")
                self.pages.append(browser)
            else:
                self.pages.append(StreamReader(url + "frames"))
        time.sleep(3.0)  # the pages are showing frames

    def figures(self) -> dict:
        return json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/state", timeout=10))["viewer"]

    def close(self) -> None:
        for page in self.pages:
            page.close()
        stop_processes([self.proc], 10.0)


def window(name: str, status: SimStatus, duration_s: float, pids: dict[str, int], viewer: Viewer | None) -> dict:
    load0 = os.getloadavg()[0]
    t0, d0 = status.next()
    if viewer and viewer.kind == "chromium":
        pids = {**pids, "browsers": [page.proc.pid for page in viewer.pages]}
    cpu_of = {k: (lambda p=p: sum(tree_cpu_s(q) for q in p)) if isinstance(p, list) else (lambda p=p: cpu_s(p))
              for k, p in pids.items()}
    cpu0 = {k: f() for k, f in cpu_of.items()}
    f0 = viewer.figures() if viewer else None
    time.sleep(duration_s - 1.0)
    t1, d1 = status.next()
    cpu = {k: (f() - cpu0[k]) / (t1 - t0) for k, f in cpu_of.items()}
    h0, h1 = (json.loads(d["lateness_histogram"]) for d in (d0, d1))
    hist = [b - a for a, b in zip(h0["counts"], h1["counts"])]
    steps = sum(hist)
    row = {"name": name, "wall_s": t1 - t0, "steps": steps,
           "late_steps": int(d1["late_steps"]) - int(d0["late_steps"]),
           "rtf": (float(d1["sim_time_s"]) - float(d0["sim_time_s"])) / (t1 - t0),
           "hist": hist, "edges_s": h1["edges_s"], "cpu": cpu, "load": (load0 + os.getloadavg()[0]) / 2,
           "skipped_frames": int(d1.get("camera_frames_skipped", 0)) - int(d0.get("camera_frames_skipped", 0)),
           "rendered_frames": int(d1.get("camera_frames_rendered", 0)) - int(d0.get("camera_frames_rendered", 0))}
    if viewer:
        f1 = viewer.figures()
        row["encoded"] = f1["frames_encoded"] - f0["frames_encoded"]
        row["sent"] = f1["frames_sent"] - f0["frames_sent"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=1, help="baseline/viewer pairs, alternating")
    parser.add_argument("--viewers", type=int, default=1, help="pages open at once on the viewer")
    args = parser.parse_args()
    sim = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r",
                            f"__ns:=/{NAMESPACE}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    motion = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.motion", "--ros-args", "-r",
                               f"__ns:=/{NAMESPACE}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rclpy.init()
    rows = []
    status = None
    try:
        status = SimStatus()
        status.next(60.0)
        time.sleep(3.0)  # past the start-up
        physics = children(sim.pid)
        pids = {"sim node": sim.pid, **({"physics": physics[0]} if physics else {})}
        for k in range(args.rounds):
            rows.append(window(f"baseline {k + 1}", status, args.duration_s, pids, None))
            viewer = Viewer(args.viewers)
            try:
                rows.append(window(f"viewer {k + 1} ({args.viewers} {viewer.kind})", status, args.duration_s,
                                   {**pids, "viewer": viewer.proc.pid}, viewer))
            finally:
                viewer.close()
    finally:
        stop_processes([motion], 10.0)
        stop_processes([sim], 10.0)
        if status is not None:
            status.close()
        rclpy.try_shutdown()
    print(f"\nbench_viewer: the sim at real time with its default cameras and the scripted motion, "
          f"{args.duration_s:g} s windows, {os.cpu_count()} cores, physics scheduling "
          f"{status.spec.get('physics_scheduling', '?')!r}")
    edges = rows[0]["edges_s"]
    labels = [f"{a * 1e3:g}-{b * 1e3:g} ms" if b is not None else f">= {a * 1e3:g} ms"
              for a, b in zip(edges, edges[1:])]
    print(f"{'window':34s}{'steps':>8s}{'late':>6s}{'RTF':>7s}  lateness (steps per decade: "
          f"{', '.join(labels)})  CPU (cores)  frames rendered/skipped/encoded/sent  load")
    for r in rows:
        cpu = ", ".join(f"{k} {v:.2f}" for k, v in r["cpu"].items())
        frames = f"{r['rendered_frames']}/{r['skipped_frames']}/{r.get('encoded', '-')}/{r.get('sent', '-')}"
        print(f"{r['name']:34s}{r['steps']:8d}{r['late_steps']:6d}{r['rtf']:7.3f}  {r['hist']}  {cpu}  {frames}  "
              f"{r['load']:.2f}")
    base = [r for r in rows if r["name"].startswith("baseline")]
    view = [r for r in rows if r["name"].startswith("viewer")]
    print(f"late steps with a viewer open: {sum(r['late_steps'] for r in view)} in {len(view)} x {args.duration_s:g} s;"
          f" without (the baseline, same run): {sum(r['late_steps'] for r in base)}  (target: 0 with a viewer)")


if __name__ == "__main__":
    main()
