"""Soak and fault matrix: the main job over many configurations, then every injectable fault.

Clean runs: the real sim process + motion node + recorder (as robogym_ros/tools/demo.py starts
them), each for a few seconds with ``--record``, over decimation {1, 2, 5, 7, 10, 20} x
real_time_factor {0, 0.5, 1, 2} x cameras {on, off} x capacity {small, large} x start order
{sim first, recorder first (it sees the sim's very first tick and frame)} x seeds. A clean
run counts as a false alarm unless the live verdict AND the offline verdict of its bag
(``--bag``) both PASS.

Fault runs: the same real sim and motion, with one fault injected, each expected to be named
by a finding (or, for a ring overwrite, by the verdict's statement of what it checked):

  aliasing        the recorder's joint ring stores views of one array (patched into the real
                  recorder process): every slot ends up the newest          -> buffer_audit, aliasing
  drop, duplicate, reorder, stale_payload
                  a fault-injecting relay between the sim and the recorder (a stand-in
                  publisher in its own process) drops / repeats / swaps one joint_states
                  message, or sends one with the previous message's payload -> tick_grid, stale_payload
  dt_unit         the relay publishes velocity = (q[n] - q[n-1]) / physics dt -> velocity_reported
  name_mismatch   the relay renames the ground truth's joints; the bag is then also checked
                  offline, where it must be a usage error (exit 2)         -> slot_error; --bag exit 2
  sim_death       the sim node and its physics process are killed (SIGKILL) mid-run -> streams
  ring_overwrite  --capacity 100 for ~300 ticks: the verdict must say "checked the newest 100 of
                  N received; N - 100 overwritten" and the grid must count all N

    python recipes/soak.py                      # the whole matrix x 2 seeds, then the faults
    python recipes/soak.py --runs 104           # 104 clean runs spread over the matrix, then the faults
    python recipes/soak.py --quick              # 12 clean runs and every fault once
    python recipes/soak.py --faults-only --fault-repeats 3
    python recipes/soak.py --lock /tmp/robogym_heavy.lock   # take the shared lock run by run

Prints one table: clean runs and false alarms per configuration group, faults and
detections per fault. ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, a ROS_DOMAIN_ID of its own.
Not part of the test suite.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from robogym_ros.processes import stop_processes

# The recorder process with a joint ring of views (the aliasing fault, in the recorder itself): the
# same ring the recorder's positive-control test patches in, from the tests' harness folder.
sys.path.insert(0, str(Path(__file__).parents[1] / "test" / "harness"))
from faulty_rings import VIEW_RING  # noqa: E402

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYTHONUNBUFFERED", "1")

ROOT = Path(__file__).resolve().parents[1]
DECIMATIONS = (1, 2, 5, 7, 10, 20)
RTFS = (0.0, 0.5, 1.0, 2.0)
CAMERAS = (True, False)
CAPACITIES = {"small": 200, "large": 120_000}
FAULTS = ("aliasing", "drop", "duplicate", "reorder", "stale_payload", "dt_unit", "name_mismatch", "sim_death",
          "ring_overwrite")
RELAYED = {"drop", "duplicate", "reorder", "stale_payload", "dt_unit", "name_mismatch"}
EXPECTED = {  # fault -> (check, finding code) that names it
    "aliasing": ("aliasing", "every_slot_newest"),
    "drop": ("tick_grid", "dropped_ticks"),
    "duplicate": ("tick_grid", "duplicated_ticks"),
    "reorder": ("tick_grid", "reordered_ticks"),
    "stale_payload": ("stale_payload", "stale_payload"),
    "dt_unit": ("velocity_reported", "velocity_factor_decimation"),
    "name_mismatch": ("slot_error", "slot_error"),
    "sim_death": ("streams", "stream_stopped"),
}
SETUP_RETRIES = 2  # a run whose sim did not come up is run again (a shared tree may be mid-edit)
FAULT_AT = 150  # the relay's joint_states message (counted once the recorder listens) that gets the fault

@dataclass
class Run:
    kind: str  # "clean" or a fault
    decimation: int = 5
    rtf: float = 1.0
    cameras: bool = False
    capacity: str = "large"
    seed: int = 0
    seconds: float = 3.0
    recorder_first: bool = False  # the recorder waits for the sim: it sees the sim's very first tick and frame

    @property
    def group(self) -> str:
        return (f"dec {self.decimation:>2}  rtf {self.rtf:g}".ljust(16) + f"cams {'on ' if self.cameras else 'off'}"
                + f"  cap {self.capacity}" + ("  rec first" if self.recorder_first else ""))


@dataclass
class Outcome:
    run: Run
    ok: bool  # clean: no false alarm; fault: detected
    live_status: str = ""
    offline_status: str = ""
    codes: list = field(default_factory=list)
    note: str = ""
    ticks: int = 0
    wall_s: float = 0.0
    setup_error: bool = False  # the sim did not start: retried, and never counted as a verdict


# ----------------------------------------------------------------------------- processes

def _env() -> dict:
    paths = (str(ROOT), str(ROOT / "test" / "harness"), os.environ.get("PYTHONPATH", ""))  # the aliasing fault's ring
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))


def _node(module: str, ns: str, *args: str, params: dict | None = None) -> list[str]:
    cmd = [sys.executable, "-m", module, *args, "--ros-args", "-r", f"__ns:=/{ns}"]
    for k, v in (params or {}).items():
        cmd += ["-p", f"{k}:={v}"]
    return cmd


def _kill_tree(pid: int) -> None:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    for p in [pid, *map(int, children)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def _wait_for(path: Path, text: str, timeout_s: float, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def _verdict(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _codes(verdict: dict | None) -> list[tuple[str, str]]:
    if not verdict:
        return []
    return [(c["name"], f["code"]) for c in verdict["checks"] for f in c["findings"]]


def execute(run: Run, workdir: Path, index: int) -> Outcome:
    """One run: sim + motion (+ relay) + recorder --record, then --bag on the bag it wrote."""
    ns = f"soak{index}_{os.getpid()}"
    rec_ns = f"{ns}_relayed" if run.kind in RELAYED else ns
    out = workdir / ns
    out.mkdir(parents=True)
    log = open(out / "nodes.log", "w")
    sim_params = {"decimation": run.decimation, "real_time_factor": run.rtf, "seed": run.seed,
                  "camera_period_s": 0.1 if run.cameras else 0.0}
    procs: list[subprocess.Popen] = []

    def start_nodes() -> None:
        procs.append(subprocess.Popen(_node("robogym_ros.nodes.sim_node", ns, params=sim_params), stdout=log,
                                      stderr=subprocess.STDOUT, env=_env()))
        procs.append(subprocess.Popen(_node("robogym_ros.nodes.motion", ns), stdout=log,
                                      stderr=subprocess.STDOUT, env=_env()))
        if run.kind in RELAYED:
            procs.append(subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--relay", run.kind,
                                           "--relay-from", ns, "--relay-to", rec_ns], stdout=log,
                                          stderr=subprocess.STDOUT, env=_env()))

    if not run.recorder_first:
        start_nodes()
    capacity = 100 if run.kind == "ring_overwrite" else CAPACITIES[run.capacity]
    bag, verdict_path = out / "bag", out / "verdict.json"
    args = ["--duration", f"{run.seconds:g}", "--capacity", str(capacity), "--record", str(bag), "--json",
            str(verdict_path), "--spec-timeout", "60", "--ros-args", "-r", f"__ns:=/{rec_ns}"]
    head = [sys.executable, "-c", VIEW_RING] if run.kind == "aliasing" else \
        [sys.executable, "-m", "robogym_ros.nodes.recorder"]
    rec_log = out / "recorder.log"
    started = time.monotonic()
    with open(rec_log, "w") as rlog:
        recorder = subprocess.Popen(head + args, stdout=rlog, stderr=subprocess.STDOUT, env=_env())
        try:
            if run.recorder_first:
                time.sleep(3.0)  # the recorder is up and waiting for the spec before the sim exists
                start_nodes()
            if run.kind == "sim_death":
                if _wait_for(rec_log, "spec from", 60, recorder):
                    time.sleep(1.5)
                    _kill_tree(procs[0].pid)
            recorder.wait(run.seconds + 90)
        except subprocess.TimeoutExpired:
            stop_processes([recorder], 10.0)
        finally:
            for p in reversed(procs):
                stop_processes([p], 10.0)
            log.close()
    wall = time.monotonic() - started
    live = _verdict(verdict_path)
    offline_path = out / "offline.json"
    offline = None
    offline_rc = None
    if bag.exists():
        r = subprocess.run([sys.executable, "-m", "robogym_ros.nodes.recorder", "--bag", str(bag), "--json",
                            str(offline_path)], capture_output=True, text=True, env=_env(), timeout=120)
        offline, offline_rc = _verdict(offline_path), r.returncode
    return judge(run, live, offline, offline_rc, rec_log.read_text(errors="replace"), wall)


def judge(run: Run, live: dict | None, offline: dict | None, offline_rc: int | None, log: str,
          wall: float) -> Outcome:
    codes = _codes(live)
    live_status = live["status"] if live else "no verdict"
    off_status = offline["status"] if offline else "no bag"
    ticks = 0
    if live:
        grid = next((c for c in live["checks"] if c["name"] == "tick_grid"), None)
        ticks = grid["figures"]["n_received"] if grid else 0
    o = Outcome(run, False, live_status, off_status, codes, ticks=ticks, wall_s=wall)
    if live and live_status == "usage_error" and "no spec on" in (live.get("usage_error") or ""):
        o.setup_error = True  # the sim never came up: not a verdict on data at all
        o.note = "the sim did not come up (no spec): see nodes.log"
        return o
    if "Traceback" in log:
        o.note = "traceback in the recorder's output"
        return o
    if run.kind == "clean":
        o.ok = live_status == "pass" and off_status == "pass"
        if not o.ok:
            o.codes = codes + [("offline:" + n, c) for n, c in _codes(offline)]
            o.note = (live or {}).get("usage_error") or (offline or {}).get("usage_error") or ""
        return o
    if run.kind == "ring_overwrite":
        notes = " ".join((live or {}).get("notes", []))
        want = f"checked the newest 100 of {ticks} received; {ticks - 100} overwritten"
        o.ok = ticks > 100 and want in notes and live_status == "pass"
        o.note = want if o.ok else f"expected {want!r} in {notes!r}"
        return o
    check, code = EXPECTED[run.kind]
    o.ok = (check, code) in codes
    if run.kind == "name_mismatch":  # offline, the same bag must be a usage error naming the joints
        usage = (offline or {}).get("usage_error") or ""
        o.ok = o.ok and offline_rc == 2 and "names other joints" in usage
        o.note = usage[:120]
    return o


# ----------------------------------------------------------------------------- the relay

def relay(fault: str, src: str, dst: str) -> int:
    """A fault-injecting stand-in: the sim's spec, state, joint_states and truth from /src to /dst."""
    import numpy as np
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from robogym_ros import contract
    from robogym_ros.contract import Spec
    from robogym_ros.ros.qos import SPEC_QOS, STATE_QOS, STREAM_QOS

    rclpy.init()
    node = rclpy.create_node("soak_relay")
    pubs = {"spec": node.create_publisher(String, f"/{dst}/{contract.SPEC_TOPIC}", SPEC_QOS),
            "state": node.create_publisher(String, f"/{dst}/{contract.STATE_TOPIC}", STATE_QOS),
            "js": node.create_publisher(JointState, f"/{dst}/{contract.JOINT_STATES}", STREAM_QOS),
            "gt": node.create_publisher(JointState, f"/{dst}/{contract.TRUTH_JOINTS}", STREAM_QOS)}
    st = {"n": 0, "held": None, "prev": None, "physics_dt_s": None, "prev_q": None}

    def on_spec(msg):
        spec = Spec.from_json(msg.data)
        st["physics_dt_s"] = spec.physics_dt_s
        pubs["spec"].publish(String(data=msg.data.replace(f'"/{src}/', f'"/{dst}/')))

    def on_js(msg):
        if pubs["js"].get_subscription_count() == 0:
            st["prev"], st["prev_q"] = msg, list(msg.position)
            return  # nothing listens yet: the fault must land in the recording
        st["n"] += 1
        n, out = st["n"], [msg]
        if fault == "dt_unit":
            q = np.array(msg.position)
            if st["prev_q"] is not None:
                msg.velocity = ((q - np.array(st["prev_q"])) / st["physics_dt_s"]).tolist()
            st["prev_q"] = list(msg.position)
        elif n == FAULT_AT and fault == "drop":
            out = []
        elif n == FAULT_AT and fault == "duplicate":
            out = [msg, msg]
        elif n == FAULT_AT and fault == "reorder":
            st["held"], out = msg, []
        elif n == FAULT_AT + 1 and fault == "reorder":
            out = [msg, st["held"]]
        elif n == FAULT_AT and fault == "stale_payload" and st["prev"] is not None:
            stale = JointState(header=msg.header, name=msg.name, position=st["prev"].position,
                               velocity=st["prev"].velocity, effort=st["prev"].effort)
            out = [stale]
        st["prev"] = msg
        for m in out:
            pubs["js"].publish(m)

    def on_gt(msg):
        if fault == "name_mismatch":
            msg.name = [f"x_{n}" for n in msg.name]
        pubs["gt"].publish(msg)

    node.create_subscription(String, f"/{src}/{contract.SPEC_TOPIC}", on_spec, SPEC_QOS)
    node.create_subscription(String, f"/{src}/{contract.STATE_TOPIC}", lambda m: pubs["state"].publish(m), STATE_QOS)
    node.create_subscription(JointState, f"/{src}/{contract.JOINT_STATES}", on_js, STREAM_QOS)
    node.create_subscription(JointState, f"/{src}/{contract.TRUTH_JOINTS}", on_gt, STREAM_QOS)
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    while not stop["now"]:
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


# ----------------------------------------------------------------------------- the matrix

def clean_runs(seeds: list[int], seconds: float) -> list[Run]:
    return [Run("clean", d, r, c, cap, s, seconds, first)
            for s, d, r, c, cap, first in itertools.product(seeds, DECIMATIONS, RTFS, CAMERAS, CAPACITIES,
                                                            (False, True))]


def spread(runs: list[Run], n: int) -> list[Run]:
    """``n`` runs spread over the matrix: every configuration before any repeats (seeded order)."""
    if n >= len(runs):
        return runs
    by_config: dict[tuple, list[Run]] = {}
    for r in runs:
        by_config.setdefault((r.decimation, r.rtf, r.cameras, r.capacity, r.recorder_first), []).append(r)
    configs = list(by_config)
    random.Random(7).shuffle(configs)
    out: list[Run] = []
    for layer in itertools.count():
        for c in configs:
            if len(out) == n:
                return out
            if layer < len(by_config[c]):
                out.append(by_config[c][layer])
        if layer > len(runs):
            return out
    return out


@contextlib.contextmanager
def maybe_locked(path: str | None):
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def table(outcomes: list[Outcome]) -> str:
    lines = []
    setup = [o for o in outcomes if o.setup_error]
    outcomes = [o for o in outcomes if not o.setup_error]
    clean = [o for o in outcomes if o.run.kind == "clean"]
    if clean:
        lines.append("CLEAN RUNS (a false alarm: the live or the offline verdict is not PASS)")
        lines.append(f"  {'configuration':<38} {'runs':>5} {'false alarms':>13} {'ticks/run':>10}")
        groups: dict[str, list[Outcome]] = {}
        for o in clean:
            groups.setdefault(o.run.group, []).append(o)
        for g in sorted(groups):
            os_ = groups[g]
            lines.append(f"  {g:<38} {len(os_):>5} {sum(not o.ok for o in os_):>13} "
                         f"{sum(o.ticks for o in os_) / len(os_):>10.0f}")
        n_fa = sum(not o.ok for o in clean)
        lines.append(f"  {'TOTAL':<38} {len(clean):>5} {n_fa:>13}")
        for o in clean:
            if not o.ok:
                lines.append(f"    false alarm: {o.run.group} seed {o.run.seed}: live {o.live_status}, offline "
                             f"{o.offline_status}: {o.codes[:6]} {o.note[:160]}")
    faults = [o for o in outcomes if o.run.kind != "clean"]
    if faults:
        lines.append("")
        lines.append("FAULTS (injected how: see the docstring; detected = named by the expected finding)")
        lines.append(f"  {'fault':<16} {'runs':>5} {'detected':>9}   named by")
        by: dict[str, list[Outcome]] = {}
        for o in faults:
            by.setdefault(o.run.kind, []).append(o)
        for k in FAULTS:
            if k in by:
                os_ = by[k]
                what = ("verdict note: checked the newest 100 of N; N-100 overwritten" if k == "ring_overwrite"
                        else "/".join(EXPECTED[k]) + (" + --bag exit 2" if k == "name_mismatch" else ""))
                lines.append(f"  {k:<16} {len(os_):>5} {sum(o.ok for o in os_):>9}   {what}")
                for o in os_:
                    if not o.ok:
                        lines.append(f"    missed: live {o.live_status}: {o.codes[:6]} {o.note[:160]}")
        lines.append(f"  {'TOTAL':<16} {len(faults):>5} {sum(o.ok for o in faults):>9}")
    if setup:
        lines.append("")
        lines.append(f"SETUP ERRORS (the sim did not come up after {1 + SETUP_RETRIES} tries; no verdict, not "
                     f"counted): " + ", ".join(f"{o.run.kind} {o.run.group.strip()} seed {o.run.seed}" for o in setup))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="12 clean runs and every fault once")
    parser.add_argument("--runs", type=int, help="this many clean runs, spread over the matrix")
    parser.add_argument("--seeds", default="0,1", help="seeds of the clean matrix (comma-separated)")
    parser.add_argument("--seconds", type=float, default=3.0, help="recording length per run [s]")
    parser.add_argument("--jobs", type=int, default=1, help="runs in parallel (the machine has 2 cores)")
    parser.add_argument("--faults-only", action="store_true")
    parser.add_argument("--clean-only", action="store_true")
    parser.add_argument("--fault-repeats", type=int, default=1, help="runs per fault (seeds 0..n-1)")
    parser.add_argument("--config", help="clean runs of one configuration only: DECIMATION,RTF,on|off,small|large")
    parser.add_argument("--lock", help="take this flock file for each run (shared machines)")
    parser.add_argument("--keep", help="keep every run's logs, bags and verdicts under this folder")
    parser.add_argument("--relay", choices=sorted(RELAYED), help=argparse.SUPPRESS)
    parser.add_argument("--relay-from", help=argparse.SUPPRESS)
    parser.add_argument("--relay-to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        return relay(args.relay, args.relay_from, args.relay_to)
    seeds = [int(s) for s in args.seeds.split(",")]
    runs: list[Run] = []
    if not args.faults_only:
        matrix = clean_runs(seeds, args.seconds)
        if args.config:
            d, r, c, cap = args.config.split(",")
            matrix = [m for m in matrix if (m.decimation, m.rtf, m.cameras, m.capacity) ==
                      (int(d), float(r), c == "on", cap)]
        runs += spread(matrix, 12 if args.quick and args.runs is None else (args.runs or len(matrix)))
    if not args.clean_only:
        runs += [Run(k, seed=s, seconds=args.seconds) for s in range(args.fault_repeats) for k in FAULTS]
    imports = "import robogym_ros.nodes.sim_node.node, robogym_ros.nodes.motion.node, robogym_ros.nodes.recorder.cli"
    broken = subprocess.run([sys.executable, "-c", imports], capture_output=True, text=True, env=_env())
    if broken.returncode:
        print(f"soak: the nodes do not import; nothing run:\n{broken.stderr[-2000:]}", file=sys.stderr)
        return 2
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="robogym_soak_"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"soak: {len(runs)} runs ({sum(r.kind == 'clean' for r in runs)} clean), {args.seconds:g} s each, "
          f"jobs {args.jobs}, ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, files in {workdir}", flush=True)
    started = time.monotonic()

    def one(item):
        i, run = item
        for attempt in range(1 + SETUP_RETRIES):
            with maybe_locked(args.lock):
                o = execute(run, workdir, i + 10_000 * attempt)
            if not o.setup_error:
                break
            time.sleep(5.0)
        print(f"  [{i + 1}/{len(runs)}] {run.kind:<15} {run.group} seed {run.seed}: "
              f"{'ok' if o.ok else 'SETUP ERROR' if o.setup_error else 'NOT OK'} (live {o.live_status}, offline "
              f"{o.offline_status}, {o.ticks} ticks, {o.wall_s:.1f} s){' ' + str(o.codes[:4]) if not o.ok else ''}",
              flush=True)
        return o

    if args.jobs <= 1:  # in this thread: Ctrl-C stops it (the finally clauses stop every process)
        outcomes = [one(item) for item in enumerate(runs)]
    else:
        with ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(one, enumerate(runs)))
    print()
    print(table(outcomes))
    print(f"\n{len(runs)} runs in {(time.monotonic() - started) / 60:.1f} min; command: python recipes/soak.py "
          + " ".join(argv if argv is not None else sys.argv[1:]))
    bad = sum(not o.ok for o in outcomes)  # setup errors included: the run did not happen
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
