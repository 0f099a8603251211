"""The most the real_time_factor 0 pipeline reaches on this machine with its messages (figures only).

    python bench/bench_pipeline_ceiling.py [--ticks 6000] [--physics-s 3]

Issue 34 asks the full pipeline (sim + motion + recorder --record, cameras off) for >= 50 % of the
physics-only tick rate (bench/bench_throughput.py). This bench runs the same processes and the
same messages with nothing else in them, each a loop on an rcl wait set (no executor):

  sim        the sim's own Physics stepped in its own process (no physics process beside it),
             one control tick at a time; each tick's five messages published as serialized CDR
             with the sim node's own TickMessages (joint_states, ground truth, servo targets,
             object poses, /clock); the joint_commands that arrived taken and applied before
             the tick, by name, as the node applies them
  recorder   takes every message of the five topics, raw, and keeps nothing (no checks, no bag)
  motion     takes /clock, raw, and publishes a serialized JointState command for each tick

in three rows, as bench_throughput's: the sim alone, with the recorder, and with motion and the
recorder. Each row: ticks/s against raw mj_step x decimation in this process (the higher of
before and after the rows), what the recorder missed (by topic), CPU per tick of each process,
and the bound their sum sets: on C cores no design runs faster than C / (CPU per tick, summed
over the processes), however its work is split (the real sim's physics runs in a process of its
own, beside the node: more CPU in all, not less). Any pipeline that sends these messages between
Python processes spends at least this CPU per tick.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # DDS stays on this host
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import rclpy  # noqa: E402
from bench_throughput import physics_only_ticks_per_s  # noqa: E402  (bench/: the same limit as the pipeline's)
from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from robogym_ros.ros import qos  # noqa: E402

PHYSICS_DT_S, DECIMATION, SEED = 0.002, 5, 0
QUIET_S = 3.0  # a recorder or motion that saw nothing for this long after its first message ends
MATCH_TIMEOUT_S = 30.0
CLOCK_GRACE_S = 0.5
# (topic, type, QoS) of each tick's messages, in the order the sim publishes them
TICK_TOPICS = (("joint_states", JointState, qos.STREAM_QOS), ("truth_joint_states", JointState, qos.STREAM_QOS),
               ("truth_targets", JointState, qos.STREAM_QOS), ("object_poses", PoseArray, qos.STREAM_QOS),
               ("clock", Clock, qos.CLOCK_QOS))


def tick_publishers(node, prefix: str, physics, model_path: str) -> list:
    """(publisher, encode) of each tick's five messages, as the sim node publishes them (TICK_TOPICS)."""
    from robogym_ros.nodes.sim_node.tick_messages import TickMessages
    from robogym_ros.sim.physics import ctrl_columns

    messages = TickMessages(physics.joint_names, ctrl_columns(model_path, physics.joint_names))
    encoders = (messages.joint_states, messages.joint_states, messages.targets, messages.object_poses,
                messages.clock)
    return [(node.create_publisher(t, prefix + name, profile), encode)
            for (name, t, profile), encode in zip(TICK_TOPICS, encoders)]


def _node(name: str):
    rclpy.init(args=[])
    return rclpy.create_node(name, start_parameter_services=False, enable_rosout=False)


def _raw(node, topic: str, msg_type, profile):
    return node.create_subscription(msg_type, topic, lambda _msg: None, profile, raw=True)


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} within {MATCH_TIMEOUT_S:g} s")
        time.sleep(0.01)


def _take_loop(node, subs, on_message, stop) -> None:
    """Take every message of ``subs`` as it arrives (``on_message(i, data)``) until ``stop()``
    or QUIET_S without one after the first."""
    ws = _rclpy.WaitSet(len(subs), 0, 0, 0, 0, 0, node.context.handle)
    started, matched, last = time.monotonic(), None, None
    while not stop():
        now = time.monotonic()
        if matched is None and all(sub.get_publisher_count() > 0 for sub in subs):
            matched = now
        if last is None and now - (started + MATCH_TIMEOUT_S if matched is None else matched) > QUIET_S:
            return  # nothing came: the row says so
        ws.clear_entities()
        for sub in subs:
            ws.add_subscription(sub.handle)
        ws.wait(int(0.2e9))
        for i, sub in enumerate(subs):
            while (taken := sub.handle.take_message(sub.msg_type, True)) is not None:
                on_message(i, taken[0])
                last = time.monotonic()
        if last is not None and time.monotonic() - last > QUIET_S:
            return


def run_sim(prefix: str, ticks: int, recorder: bool, motion: bool) -> dict:
    from robogym_ros.sim.physics import Physics
    from robogym_ros.task.scene import default_model_path
    from robogym_ros.wire.decode import decode_joint_state

    model = default_model_path()
    physics = Physics(model, PHYSICS_DT_S, DECIMATION, SEED)
    node = _node(f"{prefix}sim")
    publishers = tick_publishers(node, prefix, physics, model)
    pubs = [pub for pub, _ in publishers]
    commands = _raw(node, f"{prefix}joint_commands", JointState, qos.COMMAND_QOS)
    _wait_for(lambda: all(p.get_subscription_count() >= recorder for p in pubs[:4])
              and pubs[4].get_subscription_count() >= recorder + motion and commands.get_publisher_count() >= motion,
              "the recorder or motion did not match")
    time.sleep(0.5)  # discovery settles both ways before the first tick
    applied = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(ticks):
        while (taken := commands.handle.take_message(JointState, True)) is not None:
            command = decode_joint_state(taken[0])
            physics.set_targets(dict(zip(command.name, command.position.tolist())))
            applied += 1
        physics.step_ticks(1)
        tick = physics.snapshot()
        for pub, encode in publishers:
            pub.publish(encode(tick))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"ticks_per_s": ticks / wall, "cpu_us_per_tick": 1e6 * cpu / ticks, "commands_applied": applied}


def run_recorder(prefix: str, ticks: int) -> dict:
    node = _node(f"{prefix}recorder")
    subs = [_raw(node, prefix + name, t, profile) for name, t, profile in TICK_TOPICS]
    counts = [0] * len(subs)
    start = []

    def on_message(i: int, _data: bytes) -> None:
        if not start:
            start.append(time.process_time())
        counts[i] += 1

    streams_done = []

    def done() -> bool:
        # Every message here; or every stream message, and CLOCK_GRACE_S more for a /clock still on its
        # way (keep-last 10: it may have lost some), so that late is not counted as lost.
        if all(c >= ticks for c in counts):
            return True
        if not streams_done and all(c >= ticks for c in counts[:-1]):
            streams_done.append(time.monotonic())
        return bool(streams_done) and time.monotonic() - streams_done[0] > CLOCK_GRACE_S

    _take_loop(node, subs, on_message, done)
    cpu = time.process_time() - start[0] if start else 0.0
    return {"received": dict(zip((name for name, _, _ in TICK_TOPICS), counts)),
            "cpu_us_per_tick": 1e6 * cpu / ticks}


def run_motion(prefix: str, ticks: int) -> dict:
    from robogym_ros.nodes.motion.scripted_motion import targets_at
    from robogym_ros.wire.decode import decode_time
    from robogym_ros.wire.encode import JointStateEncoder

    node = _node(f"{prefix}motion")
    clock = _raw(node, f"{prefix}clock", Clock, qos.CLOCK_QOS)
    pub = node.create_publisher(JointState, f"{prefix}joint_commands", qos.COMMAND_QOS)
    names = tuple(targets_at(0.0))
    encoder = JointStateEncoder(names)
    sent, start, last_ns = [0], [], [0]
    end_ns = ticks * round(PHYSICS_DT_S * 1e9) * DECIMATION  # the stamp of the sim's last tick

    def on_clock(_i: int, data: bytes) -> None:
        if not start:
            start.append(time.process_time())
        now_ns = last_ns[0] = decode_time(data)
        targets = targets_at(now_ns * 1e-9)
        pub.publish(encoder.encode(now_ns, [targets[n] for n in names], (), ()))
        sent[0] += 1

    _take_loop(node, [clock], on_clock, lambda: last_ns[0] >= end_ns)
    cpu = time.process_time() - start[0] if start else 0.0
    return {"sent": sent[0], "cpu_us_per_tick": 1e6 * cpu / ticks}


def row(prefix: str, ticks: int, recorder: bool, motion: bool) -> dict:
    """One configuration: its processes started, the sim's ticks timed, each process's figures."""
    roles = (["recorder"] if recorder else []) + (["motion"] if motion else [])
    base = [sys.executable, __file__, "--ticks", str(ticks), "--prefix", prefix]
    helpers = {r: subprocess.Popen([*base, "--role", r], stdout=subprocess.PIPE, text=True) for r in roles}
    sim = subprocess.Popen([*base, "--role", "sim", *(["--with-recorder"] if recorder else []),
                            *(["--with-motion"] if motion else [])], stdout=subprocess.PIPE, text=True)
    out = {}
    try:
        for name, proc in {"sim": sim, **helpers}.items():
            text, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"the ceiling's {name} process failed (exit code {proc.returncode})")
            out[name] = json.loads(text.strip().splitlines()[-1])
    finally:
        for proc in (sim, *helpers.values()):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # A row whose messages did not flow measures less work than the pipeline's: no figure.
    silent = [topic for topic, n in out.get("recorder", {}).get("received", {}).items() if n == 0]
    if silent:
        raise SystemExit(f"the ceiling's recorder received nothing on {', '.join(silent)}: no figure")
    if motion and out["sim"]["commands_applied"] == 0:
        raise SystemExit("the ceiling's sim applied no joint_commands from motion: no figure")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=6000)
    ap.add_argument("--physics-s", type=float, default=3.0, help="seconds of each physics-only measurement")
    ap.add_argument("--role", choices=("sim", "recorder", "motion"), help=argparse.SUPPRESS)
    ap.add_argument("--prefix", help=argparse.SUPPRESS)
    ap.add_argument("--with-recorder", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--with-motion", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role:
        run = {"sim": lambda: run_sim(args.prefix, args.ticks, args.with_recorder, args.with_motion),
               "recorder": lambda: run_recorder(args.prefix, args.ticks),
               "motion": lambda: run_motion(args.prefix, args.ticks)}[args.role]
        print(json.dumps(run()))
        return
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; {args.ticks} ticks a row, "
          f"physics dt {PHYSICS_DT_S * 1e3:g} ms x decimation {DECIMATION}")
    before = physics_only_ticks_per_s(PHYSICS_DT_S, DECIMATION, args.physics_s)
    rows = []
    for i, (name, recorder, motion) in enumerate((("sim", False, False), ("sim + rec", True, False),
                                                  ("sim + motion + rec", True, True))):
        rows.append((name, row(f"ceiling_{os.getpid()}_{i}_", args.ticks, recorder, motion)))
    after = physics_only_ticks_per_s(PHYSICS_DT_S, DECIMATION, args.physics_s)
    limit = max(before, after)
    print(f"physics only (mj_step x {DECIMATION}): {limit:,.0f} ticks/s = 100 % (the higher of {before:,.0f} before "
          f"and {after:,.0f} after the rows)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"  {'':20s} {'ticks/s':>8s} {'% phys':>7s} {'CPU bound':>10s}  {'lost by the recorder':22s} "
          "CPU us per tick (process)")
    for name, out in rows:
        rate = out["sim"]["ticks_per_s"]
        received = out.get("recorder", {}).get("received")
        lost = "-" if received is None else ", ".join(
            f"{args.ticks - n} {topic}" for topic, n in received.items() if n < args.ticks) or "0"
        cpu = ", ".join(f"{p} {o['cpu_us_per_tick']:.0f}" for p, o in out.items())
        total = sum(o["cpu_us_per_tick"] for o in out.values())
        bound = cores * 1e6 / total / limit
        print(f"  {name:20s} {rate:8.0f} {rate / limit:7.1%} {bound:10.1%}  {lost:22s} {cpu} (sum {total:.0f})")
    print(f"(CPU bound: {cores} cores / the CPU per tick summed over the processes, as a share of physics only)")
    print("target for the real pipeline (sim + motion + rec --record, bench_throughput): >= 50 % of physics only; "
          "these rows bound any pipeline that sends these messages between Python processes on this machine")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
