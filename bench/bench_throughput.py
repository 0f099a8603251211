"""How fast the whole pipeline runs at real_time_factor 0, against the physics-only limit.

    python bench/bench_throughput.py [--ticks 6000] [--camera-ticks 2000] [--only sim,rec,record,full]
                                     [--cameras off,on]

One run, real processes (each with DDS on this host and a domain of its own):
  physics only       raw mj_step x decimation in this process, on the sim's scene after its seeded reset: the limit
  rendering only     bare mujoco.Renderer of the sim's cameras at their size: frames/s, and the
                     ticks/s that allows (frames/s x camera_period_s / control dt); also at the size
                     the sim renders them, its lens's pinhole source (the fisheye's is larger), each
                     row with cameras given against it too, after the table
  sim                python -m robogym_ros.nodes.sim_node, real_time_factor 0, nobody subscribed
  sim + rec          + python -m robogym_ros.nodes.recorder --ticks N --json
  sim + rec --record + the recorder writing a bag (mcap)
  sim + motion + rec --record   + motion_node, and the recorder writing a bag
each with cameras off and on (the defaults: 3 cameras, 320x240, every camera_period_s).

Ticks/s and CPU per tick come from the sim's /diagnostics (ticks_published, sampled every
0.1 s) and /proc of each process, over the part of the run where the sim runs and the
recorder takes ticks (start-up and the verdict left out). A recorder's run lasts as long as
its --ticks take: on a quiet machine, at 0.5 s a sample, 6000 ticks gave two samples and no
figure ("nan"); a run with fewer than three samples is measured from the resume instead. Frames and losses come from the
recorder's verdict JSON when it has them (its tick_grid and images checks), so the bench
works with whatever recorder is installed; "?" where a figure is missing. Asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robogym_ros import contract  # noqa: E402
from robogym_ros.camera.lens import Lens  # noqa: E402
from robogym_ros.params import DEFAULT_CAMERAS, default  # noqa: E402
from robogym_ros.processes import stop_processes  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.sim.physics import Physics  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402

PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")
DIAG_PERIOD_S = 0.1  # diagnostics cost the sim ~nothing at this rate
MIN_SAMPLES = 3  # running samples a window needs, start-up left out


# --- processes -----------------------------------------------------------------------------

def cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def child_pids(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return out


# --- the limits ----------------------------------------------------------------------------

def physics_only_ticks_per_s(physics_dt_s: float, decimation: int, seconds: float = 3.0) -> float:
    """Raw mj_step x decimation on the sim's own scene, reset as the sim resets it (arms folded,
    block and tray placed with the default seed): the contacts the sim steps through. The bare
    model's initial state has other contacts and steps ~20 % faster."""
    physics = Physics(default_model_path(), physics_dt_s, decimation, seed=default("seed"))
    model, data = physics.model, physics.data
    ticks, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(50):
            for _ in range(decimation):
                mujoco.mj_step(model, data)
        ticks += 50
    return ticks / (time.perf_counter() - t0)


def bare_render_frames_per_s(width: int, height: int, frames: int = 60, fovy_deg: float | None = None) -> float:
    """Frames/s of the default cameras rendered one after the other; ``fovy_deg``: every camera's
    field of view widened to it (the lens's source pinhole), else the model's own."""
    model = mujoco.MjModel.from_xml_path(default_model_path())
    if fovy_deg is not None:
        for c in DEFAULT_CAMERAS:
            model.cam_fovy[model.camera(c).id] = fovy_deg
            model.cam_sensorsize[model.camera(c).id] = 0.0  # else MuJoCo takes focal/sensor data over fovy
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    model.vis.quality.offsamples = 0  # as the sim chooses on a software GL (see camera/renderer.py)
    renderer = mujoco.Renderer(model, height, width)
    renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    cams = [c for c in DEFAULT_CAMERAS]
    for c in cams:
        renderer.update_scene(data, c)
        renderer.render()
    t0 = time.perf_counter()
    for _ in range(frames):
        for c in cams:
            renderer.update_scene(data, c)
            renderer.render()
    fps = frames / (time.perf_counter() - t0)
    renderer.close()
    return fps


# --- one configuration ---------------------------------------------------------------------

@dataclass
class Sample:
    t: float
    ticks: int
    cpu: dict[str, float | None]


@dataclass
class Result:
    name: str
    cameras: bool
    ticks_per_s: float = float("nan")
    cpu_us_per_tick: dict[str, float] = field(default_factory=dict)
    frames_expected: str = "-"
    frames_received: str = "-"
    lost: str = "-"
    verdict: str = "-"
    note: str = ""


class Watcher:
    """This bench's own node: the sim's spec and diagnostics, and its services."""

    def __init__(self, ns: str):
        self.ns = ns
        self.node = rclpy.create_node(f"bench_throughput_{os.getpid()}")
        self.spec: dict | None = None
        self.diag: list[tuple[float, dict]] = []
        self.node.create_subscription(String, f"/{ns}/{contract.SPEC_TOPIC}", self._on_spec, qos.SPEC_QOS)
        self.node.create_subscription(DiagnosticArray, contract.DIAGNOSTICS, self._on_diag, 10)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)

    def _on_spec(self, msg):
        self.spec = json.loads(msg.data)

    def _on_diag(self, msg):
        me = f"/{self.ns}/{contract.SIM_NODE}"
        for status in msg.status:
            if status.hardware_id == me:
                self.diag.append((time.monotonic(), {kv.key: kv.value for kv in status.values}))

    def spin_until(self, predicate, timeout_s: float, what: str):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if predicate():
                return
            self.executor.spin_once(timeout_sec=0.05)
        raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")

    def call(self, service: str) -> None:
        client = self.node.create_client(Trigger, f"/{self.ns}/{contract.SIM_NODE}/{service}")
        if not client.wait_for_service(timeout_sec=10.0):
            raise TimeoutError(f"service {service} not available")
        future = client.call_async(Trigger.Request())
        self.spin_until(future.done, 10.0, f"{service} response")
        self.node.destroy_client(client)

    def close(self):
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.node.destroy_node()


def run_config(name: str, cameras: bool, ticks: int, workdir: Path, *, recorder: bool, motion: bool,
               record: bool) -> Result:
    slug = "_".join("".join(c if c.isalnum() else " " for c in name).split())  # ROS names: no "__"
    ns = f"tp_{slug}_{'cam' if cameras else 'nocam'}_{os.getpid()}"
    result = Result(name, cameras)
    logs = workdir / ns
    logs.mkdir()
    params = ["-p", "real_time_factor:=0.0", "-p", "start_paused:=true",
              "-p", f"diagnostics_period_s:={DIAG_PERIOD_S}"]
    if not cameras:
        params += ["-p", "camera_period_s:=0.0"]
    procs: dict[str, subprocess.Popen] = {}

    def spawn(key, args):
        out = open(logs / f"{key}.log", "w")
        procs[key] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)

    watcher = Watcher(ns)
    verdict_path = logs / "verdict.json"
    try:
        spawn("sim", [PY, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r", f"__ns:=/{ns}", *params])
        watcher.spin_until(lambda: watcher.spec is not None, 60, "the sim's spec")
        if motion:
            spawn("motion", [PY, "-m", "robogym_ros.nodes.motion", "--ros-args", "-r", f"__ns:=/{ns}"])
        if recorder:
            args = [PY, "-m", "robogym_ros.nodes.recorder", "--ticks", str(ticks), "--json", str(verdict_path)]
            if record:
                args += ["--record", str(logs / "bag")]
            spawn("recorder", [*args, "--ros-args", "-r", f"__ns:=/{ns}"])
            topics = [f"/{ns}/{contract.JOINT_STATES}", f"/{ns}/{contract.TRUTH_JOINTS}"]
            topics += [c["image_topic"] for c in watcher.spec["cameras"]]
            watcher.spin_until(lambda: all(watcher.node.count_subscribers(t) >= 1 for t in topics), 60,
                               "the recorder's subscriptions")
        if motion:
            watcher.spin_until(lambda: watcher.node.count_publishers(f"/{ns}/{contract.JOINT_COMMANDS}") >= 1,
                               60, "the motion node")
        time.sleep(1.0)  # discovered is not yet matched
        sim_pid = procs["sim"].pid
        physics = [p for p in child_pids(sim_pid)]
        pids = {"sim node": sim_pid, **({"physics": physics[0]} if physics else {}),
                **({"recorder": procs["recorder"].pid} if recorder else {}),
                **({"motion": procs["motion"].pid} if motion else {})}
        samples: list[Sample] = []
        seen = len(watcher.diag)

        def sample_new():
            nonlocal seen
            for t, values in watcher.diag[seen:]:
                if values.get("paused") == "False":
                    samples.append(Sample(t, int(values["ticks_published"]), {k: cpu_s(p) for k, p in pids.items()}))
            seen = len(watcher.diag)

        paused = [values for _, values in watcher.diag if values.get("paused") == "True"]
        watcher.call("resume")
        # Where the run starts: the paused sim's count, at the resume (the fallback window's start).
        resumed = Sample(time.monotonic(), int(paused[-1]["ticks_published"]) if paused else 0,
                         {k: cpu_s(p) for k, p in pids.items()})
        if recorder:
            def done():
                sample_new()
                return procs["recorder"].poll() is not None
            watcher.spin_until(done, 600, "the recorder's end")
        else:
            watcher.spin_until(lambda: (sample_new(), len(samples) > 2 and samples[-1].ticks - samples[1].ticks
                                        >= ticks)[1], 600, f"{ticks} ticks")
        watcher.call("pause")
        last_diag = watcher.diag[-1][1] if watcher.diag else {}
        window, note = measurement_window(resumed, samples)
        if window is not None:
            a, b = window
            n = b.ticks - a.ticks
            result.ticks_per_s = n / (b.t - a.t)
            result.cpu_us_per_tick = {k: (b.cpu[k] - a.cpu[k]) / n * 1e6 for k in pids if n}
        result.note = note
        if cameras and not recorder:
            rendered = last_diag.get("camera_frames_rendered", "?")
            skipped = last_diag.get("camera_frames_skipped", "?")
            result.frames_expected = f"{rendered}+{skipped} due"
            result.frames_received = f"{rendered} rendered"
            result.lost = f"{skipped} skipped"
        if recorder:
            read_verdict(verdict_path, result, cameras)
    finally:
        for key in ("recorder", "motion", "sim"):
            if key in procs:
                stop_processes([procs[key]], 15.0)
        watcher.close()
    return result


def measurement_window(resumed: Sample, samples: list[Sample]) -> tuple[tuple[Sample, Sample] | None, str]:
    """The two samples a figure is taken between, and a note: from the second running sample
    (the first may hold the start-up) to the last one taken while every process was alive; with
    fewer than MIN_SAMPLES of those, from the resume (start-up included, said in the note)."""
    alive = [s for s in samples if all(v is not None for v in s.cpu.values())]
    if len(alive) >= MIN_SAMPLES:
        return (alive[1], alive[-1]), ""
    if alive and alive[-1].ticks > resumed.ticks and all(v is not None for v in resumed.cpu.values()):
        return (resumed, alive[-1]), f"{len(alive)} samples: measured from the resume, start-up included"
    return None, "no diagnostics sample while the sim ran"


def _find(checks: list, name: str) -> dict:
    for c in checks:
        if c.get("name") == name:
            return c
    return {}


def read_verdict(path: Path, result: Result, cameras: bool) -> None:
    try:
        verdict = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        result.note = f"no verdict: {exc}"
        return
    result.verdict = str(verdict.get("status", "?")).upper()
    checks = verdict.get("checks", [])
    grid = _find(checks, "tick_grid").get("figures", {})
    lost = grid.get("n_dropped", "?")
    if cameras:
        frames = _find(checks, "images").get("figures", {}).get("frames", {})
        result.frames_expected = str(frames.get("n_due", "?"))
        result.frames_received = str(frames.get("n_received", "?"))
        lost = f"{lost} + {frames.get('n_lost', '?')} frames ({frames.get('n_skipped', '?')} skipped)"
    result.lost = f"{lost}"
    failed = [c.get("name") for c in checks if c.get("status") not in ("pass", "skip")]
    if failed:
        result.note = "not passed: " + ", ".join(map(str, failed))


# --- the table -----------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ticks", type=int, default=6000, help="ticks per run with cameras off")
    ap.add_argument("--camera-ticks", type=int, default=2000, help="ticks per run with cameras on")
    ap.add_argument("--only", default="sim,rec,record,full",
                    help="which rows: sim, rec, record, full (comma-separated)")
    ap.add_argument("--cameras", default="off,on", help="which camera settings: off, on (comma-separated)")
    ap.add_argument("--limit-s", type=float, default=3.0, help="seconds to measure the physics-only limit for")
    ap.add_argument("--keep", metavar="DIR", help="keep logs, verdicts and bags here")
    args = ap.parse_args()
    physics_dt_s, decimation = default("physics_dt_s"), default("decimation")
    period_s, width, height = default("camera_period_s"), default("camera_width_px"), default("camera_height_px")
    control_dt_s = physics_dt_s * decimation
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_throughput_"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"bench_throughput: {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.2f} at start, "
          f"ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']}; physics dt {physics_dt_s * 1e3:g} ms x decimation "
          f"{decimation}; cameras {', '.join(DEFAULT_CAMERAS)} {width}x{height} every {period_s:g} s")
    limits = [physics_only_ticks_per_s(physics_dt_s, decimation, args.limit_s)]
    with_cameras = "on" in args.cameras.split(",")
    fps = bare_render_frames_per_s(width, height) if with_cameras else float("nan")
    render_limit = fps * period_s / control_dt_s
    # What the sim itself must render for a frame: its lens's pinhole source (the fisheye's is
    # wider and larger than the image), not the image's size.
    lens = Lens(width, height, fisheye=default("camera_fisheye"), source_scale=default("camera_source_scale"))
    source_fps = bare_render_frames_per_s(lens.source_width_px, lens.source_height_px,
                                          fovy_deg=lens.source_fovy_deg) if with_cameras else float("nan")
    source_limit = source_fps * period_s / control_dt_s
    rclpy.init()
    rows = []
    wanted = set(args.only.split(","))
    try:
        for cameras in [c == "on" for c in ("off", "on") if c in args.cameras.split(",")]:
            ticks = args.camera_ticks if cameras else args.ticks
            if "sim" in wanted:
                rows.append(run_config("sim", cameras, ticks, workdir, recorder=False, motion=False, record=False))
            if "rec" in wanted:
                rows.append(run_config("sim + rec", cameras, ticks, workdir, recorder=True, motion=False,
                                       record=False))
            if "record" in wanted:
                rows.append(run_config("sim + rec --record", cameras, ticks, workdir, recorder=True, motion=False,
                                       record=True))
            if "full" in wanted:
                rows.append(run_config("sim + motion + rec --record", cameras, ticks, workdir, recorder=True,
                                       motion=True, record=True))
    finally:
        rclpy.try_shutdown()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    # Measured before and after the runs; the higher is the limit (the machine's pace drifts).
    limits.append(physics_only_ticks_per_s(physics_dt_s, decimation, args.limit_s))
    limit = max(limits)
    print(f"\nphysics only (mj_step x {decimation}): {limit:,.0f} ticks/s = 100 % "
          f"(the higher of {limits[0]:,.0f} before and {limits[1]:,.0f} after the runs)")
    if with_cameras:
        print(f"rendering only ({len(DEFAULT_CAMERAS)} cameras, bare mujoco.Renderer {width}x{height}): {fps:.1f} "
              f"frames/s -> {render_limit:,.0f} ticks/s at one frame per {period_s:g} s "
              f"({100 * render_limit / limit:.0f} % of physics only)")
        print(f"rendering only at the lens's source size ({lens.source_width_px}x{lens.source_height_px}, fovy "
              f"{lens.source_fovy_deg:.1f} deg: what the sim renders for each frame): {source_fps:.1f} frames/s -> "
              f"{source_limit:,.0f} ticks/s")
    head = (f"{'':30s} {'cams':>4s} {'ticks/s':>8s} {'% phys':>7s} {'% lim':>6s} {'frames exp':>11s} "
            f"{'frames recv':>12s} {'lost':>24s} {'verdict':>8s}  CPU us per tick (process)")
    print(head)
    for r in rows:
        cap = min(limit, render_limit) if r.cameras else limit
        cpu = ", ".join(f"{k} {v:.0f}" for k, v in r.cpu_us_per_tick.items())
        print(f"{r.name:30s} {'on' if r.cameras else 'off':>4s} {r.ticks_per_s:8.0f} "
              f"{100 * r.ticks_per_s / limit:6.1f}% {100 * r.ticks_per_s / cap:5.0f}% {r.frames_expected:>11s} "
              f"{r.frames_received:>12s} {r.lost:>24s} {r.verdict:>8s}  {cpu}"
              + (f"  [{r.note}]" if r.note else ""))
    for r in rows:
        if r.cameras:
            print(f"{r.name} with cameras: {100 * r.ticks_per_s / source_limit:.0f} % of rendering only at the lens's "
                  "source size")
    print("(% lim: of the limit that applies, physics only, or rendering only with cameras on; "
          "lost: joint_states dropped + camera frames lost on the way, as the recorder's verdict says)")
    print("targets (issue 34, quiet machine): the full pipeline (sim + motion + rec --record) >= 50 % of physics "
          "only with cameras off, >= 40 % of the rendering limit with cameras on")
    print(f"load avg {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
