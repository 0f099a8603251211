"""Pacing benchmark of the sim node against a naive single-process rclpy timer loop.

Both run physics dt 2 ms, joint_states at 100 Hz, for --duration-s each, while a separate
subscriber process takes every joint_states message. Prints figures; asserts nothing.

    python bench/bench_sim.py --duration-s 30 [--cameras]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import threading
import time

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from robogym_ros import contract
from robogym_ros.nodes.sim_node.node import SimNode  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.sim.lateness import HIST_BIN_S, HIST_BINS, lateness_percentile_s  # noqa: E402
from robogym_ros.sim.physics import Physics  # noqa: E402
from robogym_ros.task.scene import default_model_path  # noqa: E402

PHYSICS_DT_S = 0.002
DECIMATION = 5

SUBSCRIBER = textwrap.dedent("""
    import sys, time, rclpy
    from sensor_msgs.msg import JointState
    from robogym_ros.ros import qos
    rclpy.init()
    node = rclpy.create_node("bench_subscriber")
    count = [0]
    node.create_subscription(JointState, sys.argv[1], lambda m: count.__setitem__(0, count[0] + 1),
                             qos.STREAM_QOS)
    end = time.monotonic() + float(sys.argv[2])
    last = [0, time.monotonic()]
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
        if count[0] != last[0]:
            last[:] = [count[0], time.monotonic()]
        elif count[0] and time.monotonic() - last[1] > 2.0:
            break  # the stream has ended
    print(count[0], flush=True)
""")


def start_subscriber(topic: str, duration_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SUBSCRIBER, topic, str(duration_s)],
                            stdout=subprocess.PIPE, text=True)


def wait_matched(publisher, timeout_s: float = 30.0) -> None:
    """Until the subscriber process is matched: messages before that are not lost, just unseen."""
    deadline = time.monotonic() + timeout_s
    while publisher.get_subscription_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)


def summarize(name, hist, late_steps, steps, sim_s, wall_s, cpu_s, received, sent):
    return {
        "name": name,
        "steps": steps,
        "late_fraction": late_steps / max(steps, 1),
        "late_steps": late_steps,
        "p50_ms": lateness_percentile_s(hist, 50) * 1e3,
        "p99_ms": lateness_percentile_s(hist, 99) * 1e3,
        "max_ms": (np.flatnonzero(hist).max() + 1) * HIST_BIN_S * 1e3 if hist.any() else float("nan"),
        "rtf": sim_s / wall_s,
        "publisher_cpu_core_fraction": cpu_s / wall_s,
        "received": received,
        "sent": sent,
    }


def run_sim_node(duration_s: float, cameras: bool) -> dict:
    params = ["-p", f"physics_dt_s:={PHYSICS_DT_S}", "-p", f"decimation:={DECIMATION}",
              "-p", "start_paused:=true"]
    if not cameras:
        params += ["-p", "camera_period_s:=0.0"]  # 0 = cameras off
    node = SimNode(cli_args=["--ros-args", "-r", "__ns:=/bench", *params])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    sub = start_subscriber("/bench/joint_states", duration_s + 30)
    wait_matched(node.ticks.pub_joints)
    status0 = node.sim.status()
    hist0 = node.sim.lateness_histogram()
    published0 = node.ticks.published
    cpu0, wall0 = time.process_time(), time.monotonic()
    node.sim.resume()
    time.sleep(duration_s)
    node.sim.pause()
    cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
    status = node.sim.status()
    hist = node.sim.lateness_histogram() - hist0
    sent = node.ticks.published - published0
    received = int(sub.communicate()[0].strip() or 0)
    executor.shutdown()
    node.destroy_node()
    return summarize("sim node (physics process)", hist,
                     status.late_steps - status0.late_steps, status.steps - status0.steps,
                     (status.sim_time_ns - status0.sim_time_ns) * 1e-9, wall_s, cpu_s,
                     received, sent)


def run_baseline(duration_s: float) -> dict:
    """The naive way: one process, an rclpy timer at the physics dt stepping MuJoCo."""
    physics = Physics(default_model_path(), PHYSICS_DT_S, DECIMATION, seed=0)
    node = rclpy.create_node("bench_baseline", namespace="/baseline")
    pub = node.create_publisher(JointState, contract.JOINT_STATES, qos.STREAM_QOS)
    names = physics.joint_names
    hist = np.zeros(HIST_BINS, dtype=np.int64)
    state = {"k": 0, "late": 0, "origin": None, "sent": 0}

    def on_timer():
        now = time.monotonic()
        if state["origin"] is None:
            state["origin"] = now
        lateness = now - (state["origin"] + state["k"] * PHYSICS_DT_S)
        hist[min(max(int(lateness / HIST_BIN_S), 0), HIST_BINS - 1)] += 1
        state["late"] += lateness > PHYSICS_DT_S
        state["k"] += 1
        mujoco.mj_step(physics.model, physics.data)
        if state["k"] % DECIMATION == 0:
            msg = JointState()
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.name = names
            msg.position = physics.q.tolist()
            pub.publish(msg)
            state["sent"] += 1

    sub = start_subscriber("/baseline/joint_states", duration_s + 30)
    wait_matched(pub)
    cpu0, wall0 = time.process_time(), time.monotonic()
    node.create_timer(PHYSICS_DT_S, on_timer)
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    cpu_s, wall_s = time.process_time() - cpu0, time.monotonic() - wall0
    received = int(sub.communicate()[0].strip() or 0)
    node.destroy_node()
    return summarize("baseline (rclpy timer loop)", hist, state["late"], state["k"],
                     state["k"] * PHYSICS_DT_S, wall_s, cpu_s, received, state["sent"])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--cameras", action="store_true", help="sim with its default cameras on")
    args = parser.parse_args()
    rclpy.init()
    try:
        sim = run_sim_node(args.duration_s, args.cameras)
        base = run_baseline(args.duration_s)
    finally:
        rclpy.try_shutdown()
    print(f"\nbench_sim: physics dt {PHYSICS_DT_S * 1e3:g} ms, joint_states {1 / (PHYSICS_DT_S * DECIMATION):g} Hz, "
          f"{args.duration_s:g} s each, cameras {'on' if args.cameras else 'off'}, {os.cpu_count()} cores")
    cols = ["steps", "late_steps", "late_fraction", "p50_ms", "p99_ms", "max_ms", "rtf",
            "publisher_cpu_core_fraction", "sent", "received"]
    print(f"{'':30s}" + "".join(f"{c:>14s}" for c in ["steps", "late", "late %", "p50 ms", "p99 ms",
                                                      "max ms", "RTF", "node CPU", "sent", "received"]))
    for r in (sim, base):
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v * 100:14.4f}" if c in ("late_fraction", "publisher_cpu_core_fraction")
                         else f"{v:14.3f}" if isinstance(v, float) else f"{v:14d}")
        print(f"{r['name']:30s}" + "".join(cells))
    ratio = base["late_steps"] / max(sim["late_steps"], 1)
    print(f"late steps, baseline / sim node: {ratio:.1f}x  (sim node {sim['late_steps']}, "
          f"baseline {base['late_steps']}; target >= 10x)")
    print(f"targets: p99 <= 0.25 ms -> {sim['p99_ms']:.3f} ms; late <= 0.01 % -> "
          f"{sim['late_fraction'] * 100:.4f} %; node CPU <= 10 % of a core -> "
          f"{sim['publisher_cpu_core_fraction'] * 100:.1f} %")


if __name__ == "__main__":
    main()
