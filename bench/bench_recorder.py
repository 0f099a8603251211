"""Recorder benchmark: per-message cost, bag throughput and the highest loss-free rate.

Every figure is a ratio or a difference against a baseline measured in the same run (the
machine may be shared), and nothing is asserted. Three parts:

1. Cost per JointState. The recorder takes joint_states raw (``RecorderNode._on_joint_state``
   gets the CDR bytes, ``Recording.store_joint_state_cdr`` decodes them straight into the
   ring); the baseline is the typed path it replaced (rclpy deserializes into a message
   object, ``Recording.store_joint_state`` copies it into the ring), measured in the same run.
   (a) Micro: the callbacks called directly on serialized JointStates (12 joints), median of
   interleaved batches; also the ``--record`` raw callback. (b) End to end: a publisher
   process streams at 1 kHz; this process subscribes with the recorder's executor and QoS,
   the callback switched window by window (ABBA) between a bare counter and the recorder's;
   CPU per message of the process (all threads: DDS, executor, callback) and of the spinning
   thread, and each callback timed as it runs. Target: <= 50 us process CPU per JointState
   end to end (raw), shown as a ratio to the typed path.
2. Bag write throughput: ``BagWriter.write_raw`` of serialized JointState and 320x240 rgb8
   Image CDR against rosbags' own ``Writer`` writing the same bytes (no ROS on either side).
3. Loss-free rate: a publisher process (the sim's STREAM_QOS, RELIABLE; a latched spec;
   joint_states + ground truth stamped on the tick grid) at 250..4000 Hz against the real
   recorder CLI (``python -m robogym_ros.nodes.recorder --ticks N``): received/sent and the
   verdict's tick_grid figures per rate, the publisher's achieved rate (it may be the
   bottleneck) and the CPU of both processes.

    python bench/bench_recorder.py                       # all three parts, ~1.5 min
    python bench/bench_recorder.py --parts 3 --rates 1000,2000,4000,8000 --seconds-per-rate 5

ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and ROS_DOMAIN_ID=74 unless set otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "74")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import Image, JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from robogym_ros import contract  # noqa: E402
from robogym_ros.contract import JointSpec, Spec, TopicSpec  # noqa: E402
from robogym_ros.nodes.recorder import cli as recorder_cli  # noqa: E402
from robogym_ros.nodes.recorder import node as rn  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.ros.node_runner import events_executor  # noqa: E402

N_JOINTS = 12
NAMES = [f"joint_{i}" for i in range(N_JOINTS)]
AMPLITUDE, OMEGA = 0.5, 2 * np.pi * 0.7  # rad, rad/s: every joint moves, phase-shifted


def child_env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))


def make_spec(ns: str, control_dt_ns: int) -> Spec:
    def topic(name: str, msg_type: str) -> TopicSpec:
        return TopicSpec(f"{ns}/{name}", msg_type, control_dt_ns * 1e-9, contract.STREAM_QOS)

    return Spec(node=f"{ns}/{contract.SIM_NODE}", joints=tuple(JointSpec(n) for n in NAMES), decimation=1,
                control_dt_ns=control_dt_ns,
                topics={"joint_states": topic(contract.JOINT_STATES, "sensor_msgs/msg/JointState"),
                        "ground_truth_joints": topic(contract.TRUTH_JOINTS, "sensor_msgs/msg/JointState"),
                        "ground_truth_objects": topic(contract.TRUTH_OBJECTS, "geometry_msgs/msg/PoseArray")})


def tick_arrays(n: int, dt_ns: int, first: int = 1) -> tuple[list, list]:
    """Positions and velocities (array('d'), as rclpy delivers them) of ticks first..first+n-1."""
    t = (np.arange(first, first + n) * dt_ns * 1e-9)[:, None]
    phase = np.linspace(0, np.pi, N_JOINTS)[None, :]
    q = AMPLITUDE * np.sin(OMEGA * t + phase)
    v = AMPLITUDE * OMEGA * np.cos(OMEGA * t + phase)
    return [array("d", row.tobytes()) for row in q], [array("d", row.tobytes()) for row in v]


def joint_state(k: int, dt_ns: int, q, v) -> JointState:
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(k * dt_ns, 1_000_000_000)
    msg.name = NAMES
    msg.position, msg.velocity, msg.effort = q, v, q  # all three fields, as the sim publishes them
    return msg


# ----------------------------------------------------------------------------- publisher

def publisher_main(argv: list[str]) -> int:
    """Child process: publish N ticks at a rate on the tick grid; JSON figures on stdout."""
    p = argparse.ArgumentParser()
    p.add_argument("--ns", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--truth", action="store_true", help="also ground truth and the latched spec")
    a = p.parse_args(argv)
    dt_ns = round(1e9 / a.rate)
    rclpy.init()
    node = rclpy.create_node("bench_recorder_publisher", namespace=a.ns)
    pubs = [node.create_publisher(JointState, contract.JOINT_STATES, qos.STREAM_QOS)]
    if a.truth:
        pubs.insert(0, node.create_publisher(JointState, contract.TRUTH_JOINTS, qos.STREAM_QOS))
        spec_pub = node.create_publisher(String, f"{contract.SIM_NODE}/spec", qos.SPEC_QOS)
        spec_pub.publish(String(data=make_spec(a.ns, dt_ns).to_json()))
    deadline = time.monotonic() + 30.0
    while any(pub.get_subscription_count() == 0 for pub in pubs) and time.monotonic() < deadline:
        time.sleep(0.02)
    matched = all(pub.get_subscription_count() > 0 for pub in pubs)
    time.sleep(0.5)  # let the subscriber side finish matching too
    qs, vs = tick_arrays(a.n, dt_ns)
    msg = joint_state(0, dt_ns, qs[0], vs[0])
    stamp = msg.header.stamp
    period = dt_ns * 1e-9
    late, max_lag = 0, 0.0
    cpu0 = time.process_time()
    t0 = time.monotonic()
    for i in range(a.n):
        target = t0 + i * period
        wait = target - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        elif wait < -period:
            late += 1
            max_lag = max(max_lag, -wait)
        stamp.sec, stamp.nanosec = divmod((i + 1) * dt_ns, 1_000_000_000)
        msg.position, msg.velocity, msg.effort = qs[i], vs[i], qs[i]
        for pub in pubs:
            pub.publish(msg)
    wall = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    acked = all(pub.wait_for_all_acked(rclpy.duration.Duration(seconds=10)) for pub in pubs)
    print(json.dumps({"sent": a.n, "wall_s": wall, "achieved_hz": (a.n - 1) / wall if wall > 0 else 0.0,
                      "late_ticks": late, "max_lag_ms": max_lag * 1e3, "cpu_core_fraction": cpu / wall,
                      "matched": matched,
                      "acked": acked}), flush=True)
    time.sleep(0.3)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def start_publisher(ns: str, rate: float, n: int, truth: bool, out_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--publisher", "--ns", ns, "--rate", str(rate),
           "--n", str(n)] + (["--truth"] if truth else [])
    return subprocess.Popen(cmd, stdout=open(out_path, "w"), stderr=subprocess.STDOUT, env=child_env())


def reap(proc: subprocess.Popen, timeout_s: float, *, kill: bool = True) -> tuple[int | None, float]:
    """Wait for a child: (exit code, its CPU seconds); (None, nan) on timeout, killed if ``kill``."""
    if proc.returncode is not None:  # already reaped by poll(): no rusage left
        return proc.returncode, float("nan")
    end = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() > end:
            break
        time.sleep(0.02)
    if not kill:
        return None, float("nan")
    proc.kill()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return None, usage.ru_utime + usage.ru_stime


def read_json_line(path: Path) -> dict:
    for line in reversed(path.read_text().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"no JSON from {path}:\n{path.read_text()[-2000:]}")


# ----------------------------------------------------------------------------- part 1

def recorder_node(ns: str, dt_ns: int, record: str | None = None) -> rn.RecorderNode:
    """A real RecorderNode, handed the spec directly (as its latched subscription would)."""
    argv = ["--record", record] if record else []
    node = rn.RecorderNode(recorder_cli.parse_args(argv), namespace=ns)
    node._on_spec(String(data=make_spec(ns, dt_ns).to_json()))
    return node


def callback_of(node, topic: str):
    return next(s.callback for s in node.subscriptions if s.topic_name == topic)


def micro(tmp: Path, batch: int, n_batches: int) -> dict:
    dt_ns = 1_000_000
    qs, vs = tick_arrays(batch * n_batches, dt_ns)
    # Distinct objects per message, each as rclpy delivers it (deserialized from CDR).
    cdrs = [serialize_message(joint_state(k + 1, dt_ns, qs[k], vs[k])) for k in range(batch * n_batches)]
    msgs = [deserialize_message(c, JointState) for c in cdrs]
    assert isinstance(msgs[0].position, array)
    received = [0]

    def bare(msg):
        received[0] += 1

    ns = f"/bench_rec_micro_{os.getpid()}"
    node = recorder_node(ns, dt_ns)
    node_raw = recorder_node(ns + "_raw", dt_ns, record=str(tmp / "micro_bag"))
    raw_cb = callback_of(node_raw, f"{ns}_raw/{contract.JOINT_STATES}")
    def deserialize_bare(cdr):  # what rclpy does before a (non-raw) callback: the raw path's baseline
        bare(deserialize_message(cdr, JointState))

    node_typed = recorder_node(ns + "_typed", dt_ns)
    typed_rec = node_typed.recording  # the path raw replaced, on its own rings

    def typed_store(cdr):  # what a typed subscription did: rclpy deserializes, then the recording copies
        typed_rec.store_joint_state(deserialize_message(cdr, JointState))

    cases = {"bare callback": (bare, msgs), "deserialize + bare callback": (deserialize_bare, cdrs),
             "typed: deserialize + store_joint_state": (typed_store, cdrs),
             "raw: recorder _on_joint_state": (node._on_joint_state, cdrs),
             "recorder --record raw callback": (raw_cb, cdrs)}
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for b in range(n_batches):  # interleaved, so a load change hits every case alike
        lo, hi = b * batch, (b + 1) * batch
        for name, (cb, items) in cases.items():
            chunk = items[lo:hi]
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            for m in chunk:
                cb(m)
            w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            wall[name].append((w1 - w0) / batch / 1e3)
            cpu[name].append((c1 - c0) / batch / 1e3)
    stored = len(node.recording.joints)
    assert node.recording.joints.snapshot().position.tobytes() == typed_rec.joints.snapshot().position.tobytes()
    node_raw.bag.close()
    for n in (node, node_raw, node_typed):
        n.destroy_node()
    return {"wall": {k: statistics.median(v) for k, v in wall.items()},
            "cpu": {k: statistics.median(v) for k, v in cpu.items()},
            "stored": stored, "n": batch * n_batches, "batch": batch, "batches": n_batches}


def e2e(tmp: Path, rate: float, windows: int, window_s: float) -> dict:
    """Subscriber configurations in this process, one publisher process streaming throughout.

    Phase "typed": one JointState subscription (RECORD_QOS) whose callback alternates every
    window between a bare counter and the recorder's ``_on_joint_state``. Phase "raw": a
    raw subscription (as with ``--record``) alternating between a bare counter and the
    recorder's ``--record`` closure (deserialize, write_raw, store). Same executor type as
    the recorder, same stream, windows interleaved, so a change of load hits both sides.
    """
    dt_ns = round(1e9 / rate)
    ns = f"/bench_rec_e2e_{os.getpid()}"
    topic = f"{ns}/{contract.JOINT_STATES}"
    # Real RecorderNodes under other namespaces, not spun: only their callbacks are used here.
    rec = recorder_node(ns + "_typed", dt_ns)  # its recording takes the typed messages
    rec_cdr = recorder_node(ns + "_cdr", dt_ns)
    rec_raw = recorder_node(ns + "_raw", dt_ns, record=str(tmp / "e2e_bag"))
    raw_cb = callback_of(rec_raw, f"{ns}_raw/{contract.JOINT_STATES}")
    count = [0]

    def bare(msg):
        count[0] += 1

    def recorder_typed(msg):  # the path raw replaced
        count[0] += 1
        rec.recording.store_joint_state(msg)

    def recorder(data):
        count[0] += 1
        rec_cdr._on_joint_state(data)

    def recorder_record(data):
        count[0] += 1
        raw_cb(data)

    phases = [("typed", False, [("bare", bare), ("recorder typed", recorder_typed)]),
              ("raw", True, [("bare raw", bare), ("recorder", recorder), ("recorder --record", recorder_record)])]
    n_pub = int(rate * (len(phases) * windows * 2 * window_s + 4.0))
    node = rclpy.create_node("bench_e2e_subscriber", namespace=ns)
    executor = events_executor()
    executor.add_node(node)
    pub = start_publisher(ns, rate, n_pub, False, tmp / "pub_e2e.log")
    results: dict = {}
    try:
        for _phase, raw, configs in phases:
            samples: dict[str, list[int]] = {name: [] for name, _ in configs}
            active = {"cb": configs[0][1], "samples": samples[configs[0][0]]}
            clock = time.thread_time_ns

            def dispatch(msg):  # the callback timed as it runs, caches as cold as they are
                t0 = clock()
                active["cb"](msg)
                active["samples"].append(clock() - t0)
            sub = node.create_subscription(JointState, topic, dispatch, rn.RECORD_QOS, raw=raw)
            end = time.monotonic() + 30.0
            while count[0] < 200 and time.monotonic() < end:  # matched and streaming
                executor.spin_once(timeout_sec=0.05)
            per: dict[str, dict[str, list[float]]] = {name: {"cpu": [], "thread": [], "n": []} for name, _ in configs}
            for w in range(windows * len(configs)):
                order = configs if (w // len(configs)) % 2 == 0 else configs[::-1]  # ABBA: no side goes first
                name, cb = order[w % len(configs)]
                active["cb"], active["samples"] = cb, samples[name]
                n0, c0, t0 = count[0], time.process_time(), time.thread_time()
                stop = time.monotonic() + window_s
                while time.monotonic() < stop:
                    executor.spin_once(timeout_sec=0.05)
                got = count[0] - n0
                if got:
                    per[name]["cpu"].append((time.process_time() - c0) / got * 1e6)
                    per[name]["thread"].append((time.thread_time() - t0) / got * 1e6)
                    per[name]["n"].append(got)
            node.destroy_subscription(sub)
            for name, _ in configs:
                results[name] = {"cpu_us": statistics.median(per[name]["cpu"]),
                                 "thread_us": statistics.median(per[name]["thread"]),
                                 "callback_us": statistics.median(samples[name]) / 1e3,
                                 "messages": sum(per[name]["n"]), "windows": len(per[name]["n"]),
                                 "rate_hz": sum(per[name]["n"]) / (len(per[name]["n"]) * window_s)}
    finally:
        pub.kill()
        reap(pub, 5.0)
        executor.shutdown()
        node.destroy_node()
        rec_raw.bag.close()
        for n in (rec, rec_cdr, rec_raw):
            n.destroy_node()
    results["_stored"] = (len(rec.recording.joints), len(rec_cdr.recording.joints), len(rec_raw.recording.joints))
    return results


# ----------------------------------------------------------------------------- part 2

def bag_throughput(tmp: Path, repeats: int) -> list[dict]:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore

    from robogym_ros.recorder.bag.format import IMAGE, JOINT_STATE, TYPESTORE, recorded_qos
    from robogym_ros.recorder.bag.writer import BagWriter

    typestore = get_typestore(TYPESTORE)
    dt_ns = 10_000_000
    qs, vs = tick_arrays(20_000, dt_ns)
    js = [serialize_message(joint_state(k + 1, dt_ns, qs[k], vs[k])) for k in range(len(qs))]
    rng = np.random.default_rng(0)
    frames = []
    for k in range(150):  # distinct pixels per frame, as a camera delivers
        img = Image(height=240, width=320, encoding="rgb8", step=320 * 3)
        img.header.stamp.sec, img.header.stamp.nanosec = divmod((k + 1) * 33_000_000, 1_000_000_000)
        img.data = rng.integers(0, 256, 240 * 320 * 3, dtype=np.uint8).tobytes()
        frames.append(serialize_message(img))
    streams = [("JointState (12 joints)", "/bench/joint_states", JOINT_STATE, js),
               ("Image 320x240 rgb8", "/bench/cam/image_raw", IMAGE, frames)]
    counter = iter(range(10**6))

    def with_bagwriter(topic, msgtype, data, path):
        bag = BagWriter(path)
        for i, cdr in enumerate(data):
            bag.write_raw(topic, msgtype, cdr, i)
        bag.close()

    def with_rosbags(topic, msgtype, data, path):
        writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
        writer.open()
        conn = writer.add_connection(topic, msgtype, typestore=typestore, offered_qos_profiles=[recorded_qos(False)])
        for i, cdr in enumerate(data):
            writer.write(conn, i, cdr)
        writer.close()

    writers = [("BagWriter.write_raw", with_bagwriter), ("rosbags Writer", with_rosbags)]
    out = []
    for label, topic, msgtype, data in streams:
        nbytes = sum(len(c) for c in data)
        wall: dict[str, list[float]] = {name: [] for name, _ in writers}
        cpu: dict[str, list[float]] = {name: [] for name, _ in writers}
        for rep in range(repeats):  # interleaved, order alternating; each bag removed at once
            for name, fn in (writers if rep % 2 == 0 else writers[::-1]):
                path = tmp / f"bag_{next(counter)}"
                c0, w0 = time.thread_time(), time.perf_counter()
                fn(topic, msgtype, data, path)  # open, every write, close (flushed to the OS)
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.thread_time() - c0)
                shutil.rmtree(path)
        w = {k: statistics.median(v) for k, v in wall.items()}
        c = {k: statistics.median(v) for k, v in cpu.items()}
        out.append({"stream": label, "n": len(data), "mb": nbytes / 1e6,
                    "ours_mb_s": nbytes / 1e6 / w["BagWriter.write_raw"],
                    "ref_mb_s": nbytes / 1e6 / w["rosbags Writer"],
                    "ours_us": c["BagWriter.write_raw"] / len(data) * 1e6,
                    "ref_us": c["rosbags Writer"] / len(data) * 1e6})
    return out


# ----------------------------------------------------------------------------- part 3

def rate_run(tmp: Path, rate: float, seconds: float) -> dict:
    n = int(rate * seconds)
    ns = f"/bench_rec_rate_{int(rate)}_{os.getpid()}"
    json_path = tmp / f"verdict_{int(rate)}.json"
    rec_log = tmp / f"recorder_{int(rate)}.log"
    pub_log = tmp / f"publisher_{int(rate)}.log"
    t_start = time.monotonic()
    recorder = subprocess.Popen(
        [sys.executable, "-m", "robogym_ros.nodes.recorder", "--ticks", str(n), "--json", str(json_path),
         "--ros-args", "-r", f"__ns:={ns}"],
        stdout=open(rec_log, "w"), stderr=subprocess.STDOUT, env=child_env())
    pub = start_publisher(ns, rate, n, True, pub_log)
    _, pub_cpu = reap(pub, 60.0 + seconds)
    # The recorder stops by itself at n joint_states; short of that (a loss), stop it as Ctrl-C would.
    code, rec_cpu = reap(recorder, 5.0, kill=False)
    interrupted = code is None
    if interrupted:
        recorder.send_signal(signal.SIGINT)
        code, rec_cpu = reap(recorder, 15.0)
    total_wall = time.monotonic() - t_start
    pub_fig = read_json_line(pub_log)
    verdict = json.loads(json_path.read_text()) if json_path.exists() else None
    grid = next((c for c in verdict["checks"] if c["name"] == "tick_grid"), None) if verdict else None
    fig = grid["figures"] if grid else {}
    return {"rate": rate, "sent": n, "publisher": pub_fig, "verdict": verdict and verdict["status"],
            "failing": [c["name"] for c in verdict["checks"] if c["status"] != "pass"] if verdict else [],
            "interrupted": interrupted, "exit": code,
            "received": fig.get("n_received", 0), "n_unique": fig.get("n_unique", 0),
            "n_expected": fig.get("n_expected", 0), "n_dropped": fig.get("n_dropped"),
            "n_duplicated": fig.get("n_duplicated"), "n_reordered": fig.get("n_reordered"),
            "period_ok": fig.get("period_equals_control_dt"),
            "pub_cpu_s": pub_cpu, "rec_cpu_s": rec_cpu, "total_wall_s": total_wall,
            "log": None if verdict else rec_log.read_text()[-1500:]}


# ----------------------------------------------------------------------------- reports

def report_micro(m: dict) -> None:
    cpu, wall = m["cpu"], m["wall"]
    print(f"\n1a. callback cost, micro: {m['n']} JointStates (12 joints, array('d') fields, distinct objects) "
          f"called directly; median of {m['batches']} interleaved batches of {m['batch']} [us per message]")
    print(f"    {'':34s}{'thread CPU':>12s}{'wall':>10s}")
    for k in cpu:
        print(f"    {k:34s}{cpu[k]:12.2f}{wall[k]:10.2f}")
    raw, typed = cpu["raw: recorder _on_joint_state"], cpu["typed: deserialize + store_joint_state"]
    print(f"    raw recorder callback: {raw:.2f} us per message, {raw / typed:.2f}x the typed path it replaced "
          f"({typed:.2f} us: rclpy's deserialize + store_joint_state); --record adds "
          f"{cpu['recorder --record raw callback'] - raw:.2f} us (write_raw + clock) [stored {m['stored']} of "
          f"{m['n']}, equal to the typed path's ring]", flush=True)


def report_e2e(r: dict, args: argparse.Namespace, executor_name: str) -> None:
    print(f"\n1b. end to end: a publisher process streams JointStates at {args.e2e_rate:g} Hz; this process "
          f"subscribes (RECORD_QOS, {executor_name}), the callback switched every {args.e2e_window_s:g} s between a "
          f"bare counter and the recorder's, {args.e2e_windows} windows each, interleaved. Per message: CPU of this "
          f"process (all threads) and of the spinning thread (take, deserialize if typed, callback), medians over "
          f"windows; the callback alone, timed as it runs (median over messages; caches are cold there, unlike in 1a)")
    print(f"    {'subscription':14s}{'callback':20s}{'messages':>10s}{'Hz':>7s}{'CPU us/msg':>12s}"
          f"{'spin thread':>13s}{'callback':>10s}")
    for sub_kind, names in (("typed", ("bare", "recorder typed")),
                            ("raw=True", ("bare raw", "recorder", "recorder --record"))):
        for name in names:
            x = r[name]
            print(f"    {sub_kind:14s}{name:20s}{x['messages']:10d}{x['rate_hz']:7.0f}{x['cpu_us']:12.1f}"
                  f"{x['thread_us']:13.1f}{x['callback_us']:10.1f}")
    for name, base, what in (("recorder typed", "bare", "typed recorder - bare"),
                             ("recorder", "bare raw", "raw recorder - bare raw"),
                             ("recorder --record", "bare raw", "--record - bare raw")):
        a, b = r[name], r[base]
        print(f"    {what:24s}: process CPU {a['cpu_us'] - b['cpu_us']:6.1f} us/msg "
              f"({a['cpu_us'] / b['cpu_us']:4.2f}x), "
              f"spin thread {a['thread_us'] - b['thread_us']:6.1f} us ({a['thread_us'] / b['thread_us']:4.2f}x), "
              f"callback {a['callback_us'] - b['callback_us']:6.1f} us")
    new, old = r["recorder"], r["recorder typed"]
    print(f"    recorder per JointState, end to end (process CPU): raw {new['cpu_us']:.1f} us vs typed "
          f"{old['cpu_us']:.1f} us = {new['cpu_us'] / old['cpu_us']:.2f}x; spin thread {new['thread_us']:.1f} vs "
          f"{old['thread_us']:.1f} us = {new['thread_us'] / old['thread_us']:.2f}x; target <= 50 us "
          f"[stored {' + '.join(str(n) for n in r['_stored'])}]", flush=True)


def report_bag(rows: list[dict], repeats: int) -> None:
    print(f"\n2. bag write (mcap, uncompressed; open, writes, close), the same serialized messages, median of "
          f"{repeats} interleaved runs; MB/s on wall time, us/msg on CPU time")
    print(f"    {'stream':24s}{'msgs':>7s}{'MB':>7s}{'BagWriter MB/s':>16s}{'rosbags MB/s':>14s}"
          f"{'ratio':>7s}{'BagWriter CPU us/msg':>22s}{'rosbags CPU us/msg':>20s}")
    for r in rows:
        print(f"    {r['stream']:24s}{r['n']:7d}{r['mb']:7.1f}{r['ours_mb_s']:16.1f}{r['ref_mb_s']:14.1f}"
              f"{r['ours_mb_s'] / r['ref_mb_s']:7.2f}{r['ours_us']:22.1f}{r['ref_us']:20.1f}", flush=True)


def report_rate_head(seconds: float) -> None:
    print(f"\n3. loss-free rate: a publisher process (joint_states + ground truth on the tick grid, STREAM_QOS "
          f"RELIABLE depth {qos.STREAM_QOS.depth}, latched spec) vs "
          f"`python -m robogym_ros.nodes.recorder --ticks N`, "
          f"{seconds:g} s per rate; the recorder receives 2 messages per tick", flush=True)
    print(f"    {'rate':>6s}{'pub Hz':>9s}{'pub late':>9s}{'lag ms':>8s}{'sent':>7s}{'received':>10s}{'recv %':>8s}"
          f"{'dropped':>9s}{'dup':>5s}{'reord':>6s}{'period':>8s}{'verdict':>9s}{'pub CPU%':>10s}{'rec CPU s':>10s}")


def report_rate_row(r: dict) -> None:
    p = r["publisher"]
    print(f"    {r['rate']:6.0f}{p['achieved_hz']:9.0f}{p['late_ticks']:9d}{p['max_lag_ms']:8.1f}{r['sent']:7d}"
          f"{r['received']:10d}{r['received'] / r['sent'] * 100:8.2f}{str(r['n_dropped']):>9s}"
          f"{str(r['n_duplicated']):>5s}{str(r['n_reordered']):>6s}{'ok' if r['period_ok'] else 'OFF':>8s}"
          f"{str(r['verdict']):>9s}{p['cpu_core_fraction'] * 100:10.1f}{r['rec_cpu_s']:10.2f}", flush=True)
    if p["achieved_hz"] < 0.98 * r["rate"]:
        print(f"           the publisher reached only {p['achieved_hz']:.0f} Hz: it is a bottleneck at this rate")
    if r["failing"] or r["interrupted"] or not p["acked"]:
        print(f"           failing checks {r['failing']}; recorder stopped by SIGINT: {r['interrupted']}; "
              f"publisher all acked: {p['acked']}; matched: {p['matched']}")
    if r["log"]:
        print("           recorder log tail:\n" + r["log"])


def report_rate_summary(runs: list[dict]) -> None:
    print("    (pub late = ticks published more than one period behind schedule, lag = the most; rec CPU s = the "
          "recorder process's CPU seconds, start-up and verdict included)")
    clean = sorted((r for r in runs if r["received"] == r["sent"] and not r["interrupted"]), key=lambda r: r["rate"])
    lossy = [r["rate"] for r in runs if r not in clean]
    print(f"    highest rate without loss: {clean[-1]['rate']:g} Hz" if clean else "    loss at every rate tried",
          end="")
    print(f"; first with loss: {min(lossy):g} Hz" if lossy else " (no loss at any rate tried)")
    if len(clean) >= 2:  # the slope leaves out start-up and verdict: CPU per received message
        msgs = np.array([2.0 * r["received"] for r in clean])  # joint_states + ground truth
        rec_s = np.array([r["rec_cpu_s"] for r in clean])
        pub_s = np.array([r["publisher"]["cpu_core_fraction"] * r["publisher"]["wall_s"] for r in clean])
        slope, fixed = np.polyfit(msgs, rec_s, 1)
        top = clean[-1]
        print(f"    recorder process CPU per received message (fit over the loss-free rates): {slope * 1e6:.0f} us "
              f"(+ {fixed:.2f} s start-up and verdict); publisher CPU per published message: "
              f"{np.polyfit(msgs, pub_s, 1)[0] * 1e6:.0f} us; at {top['rate']:g} Hz the recorder needs "
              f"{slope * 2 * top['received'] / top['publisher']['wall_s'] * 100:.0f} % of a core", flush=True)


# ----------------------------------------------------------------------------- main

def main() -> int:
    if "--publisher" in sys.argv[1:]:
        return publisher_main([a for a in sys.argv[1:] if a != "--publisher"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-per-rate", type=float, default=3.0)
    parser.add_argument("--rates", default="250,500,1000,2000,4000", help="joint_states rates for part 3 [Hz]")
    parser.add_argument("--e2e-rate", type=float, default=1000.0)
    parser.add_argument("--e2e-windows", type=int, default=8, help="windows per configuration and phase")
    parser.add_argument("--e2e-window-s", type=float, default=0.5)
    parser.add_argument("--parts", default="1,2,3", help="which parts to run, e.g. 1,3")
    args = parser.parse_args()
    parts = {int(p) for p in args.parts.split(",")}
    rclpy.init()
    probe = events_executor()
    executor_name = type(probe).__name__
    probe.shutdown()
    print(f"bench_recorder: {os.cpu_count()} cores, ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']}, rmw "
          f"{os.environ.get('RMW_IMPLEMENTATION', 'default')}, recorder executor {executor_name}, load avg "
          f"{os.getloadavg()[0]:.2f} at start", flush=True)
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench_recorder_") as tmpdir:
        tmp = Path(tmpdir)
        try:
            if 1 in parts:
                report_micro(micro(tmp, batch=1000, n_batches=21))
                report_e2e(e2e(tmp, args.e2e_rate, args.e2e_windows, args.e2e_window_s), args, executor_name)
            if 2 in parts:
                report_bag(bag_throughput(tmp, repeats=5), 5)
            if 3 in parts:
                report_rate_head(args.seconds_per_rate)
                runs = []
                for rate in (float(r) for r in args.rates.split(",")):
                    runs.append(rate_run(tmp, rate, args.seconds_per_rate))
                    report_rate_row(runs[-1])
                report_rate_summary(runs)
        finally:
            rclpy.try_shutdown()
    print(f"\ntotal {time.monotonic() - t_all:.0f} s; load avg {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
