"""The real recorder process against a faulty publisher: a publisher of real physics ticks in this
process (with the faults the recorder must name), the recorder run as a user runs it
(``python -m robogym_ros.nodes.recorder``), and the helpers that read its verdict."""
from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from simharness import new_namespace
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import JointSpec, Spec, TopicSpec
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.ros import qos
from robogym_ros.ros import stamps as ros_stamps
from robogym_ros.sim.physics import Physics

ROOT = Path(__file__).parents[2]
DECIMATION = 5
FIRST = 100  # streams start 1 s in, once every joint is moving
N_STREAM = 200  # joint_states per faulty-publisher run
FAULT_AT = 80  # index in the stream where a fault is injected (sim time 1.81 s)


# Deeper than the sim's own history: the test publishes faster than real time.
PUB_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


_ns = itertools.count()  # file names within one test's tmp_path


def fresh_ns(tag: str) -> str:
    return new_namespace(f"rec_{tag}_")


def make_spec(ns: str, physics: Physics, *, control_dt_ns: int | None = None,
              decimation: int | None = None) -> Spec:
    """A spec as the sim builds it, with real joint names and limits."""
    dt_ns = physics.control_dt_ns if control_dt_ns is None else control_dt_ns
    dt_s = dt_ns * 1e-9

    def topic(name, typ):
        return TopicSpec(f"/{ns}/{name}", typ, dt_s, contract.STREAM_QOS)

    return Spec(
        node=f"/{ns}/{contract.SIM_NODE}",
        joints=tuple(JointSpec(j.name, j.kind, j.lower, j.upper, j.unit) for j in physics.joints),
        objects=tuple(physics.object_names),
        physics_dt_ns=physics.physics_dt_ns,
        decimation=physics.decimation if decimation is None else decimation,
        control_dt_ns=dt_ns,
        topics={"joint_states": topic(contract.JOINT_STATES, "sensor_msgs/msg/JointState"),
                "ground_truth_joints": topic(contract.TRUTH_JOINTS, "sensor_msgs/msg/JointState"),
                "ground_truth_objects": topic(contract.TRUTH_OBJECTS, "geometry_msgs/msg/PoseArray")},
    )


class FaultyPublisher:
    """Stands in for the sim: latched spec, joint_states and ground truth, from this process.

    ``publish(events)`` publishes ``(kind, make)`` pairs in order, calling ``make()`` at the
    moment of publishing (so a message mutated in place is published with its value then).
    """

    def __init__(self, ns: str, spec: Spec):
        self.ns = ns
        self.node = rclpy.create_node("faulty_sim", namespace=f"/{ns}")
        self.pub = {
            "spec": self.node.create_publisher(String, f"{contract.SIM_NODE}/spec", qos.SPEC_QOS),
            "js": self.node.create_publisher(JointState, contract.JOINT_STATES, PUB_QOS),
            "gt": self.node.create_publisher(JointState, contract.TRUTH_JOINTS, PUB_QOS),
        }
        self.publish_spec(spec)

    def publish_spec(self, spec: Spec) -> None:
        self.pub["spec"].publish(String(data=spec.to_json()))

    def wait_matched(self, recorder: RecorderRun, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while (self.pub["js"].get_subscription_count() < 1
               or self.pub["gt"].get_subscription_count() < 1):
            if recorder.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the recorder never subscribed:\n{recorder.output()}")
            time.sleep(0.01)
        time.sleep(0.3)  # let the recorder's side of the match settle too

    def publish(self, events, period_s: float = 0.0005, stop: threading.Event | None = None) -> int:
        n = 0
        for kind, make in events:
            if stop is not None and stop.is_set():
                break
            self.pub[kind].publish(make())
            if kind == "js":
                n += 1
                if period_s:
                    time.sleep(period_s)
        return n

    def close(self) -> None:
        self.node.destroy_node()


class RecorderRun:
    """``python -m robogym_ros.nodes.recorder ...`` as a real process, output to a file."""

    def __init__(self, tmp_path: Path, *args: str, ns: str | None = None, module_code: str | None = None,
                 **popen):
        self.json_path = tmp_path / f"verdict_{next(_ns)}.json"
        self.log_path = tmp_path / f"recorder_{next(_ns)}.log"
        argv = list(args) + ["--json", str(self.json_path)]
        if ns is not None:
            argv += ["--ros-args", "-r", f"__ns:=/{ns}"]
        head = [sys.executable, "-c", module_code] if module_code else \
            [sys.executable, "-m", "robogym_ros.nodes.recorder"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT), str(ROOT / "test" / "harness"), os.environ.get("PYTHONPATH", "")]))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(head + argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, **popen)

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        """Tear-down after a failure: never leave a recorder running."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()

    def wait(self, timeout_s: float = 60.0) -> tuple[int, str, dict | None]:
        try:
            rc = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            finally:
                self.stop()
            raise AssertionError(f"recorder did not finish in {timeout_s} s:\n{self.log_path.read_text()}") from None
        self.log.close()
        out = self.log_path.read_text()
        verdict = json.loads(self.json_path.read_text()) if self.json_path.exists() else None
        return rc, out, verdict


def recorder(tmp_path, *args, ns=None, timeout_s=60.0) -> tuple[int, str, dict | None]:
    return RecorderRun(tmp_path, *args, ns=ns).wait(timeout_s)


def failing(verdict: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in verdict["checks"] if c["status"] != "pass"}


def codes(verdict: dict) -> list[tuple[str, str]]:
    return [(c["name"], f["code"]) for c in verdict["checks"] for f in c["findings"]]


def finding(verdict: dict, check: str, code: str) -> dict:
    hits = [f for c in verdict["checks"] if c["name"] == check for f in c["findings"] if f["code"] == code]
    assert hits, (check, code, codes(verdict))
    return hits[0]


def check(verdict: dict, name: str) -> dict:
    return next(c for c in verdict["checks"] if c["name"] == name)


def assert_no_traceback(out: str) -> None:
    assert "Traceback" not in out, out


def js_item(tick, payload=None, velocity_scale: float = 1.0):
    """A joint_states message stamped with ``tick`` carrying ``payload``'s values (a fresh message)."""
    return (tick, payload if payload is not None else tick, velocity_scale)


def events_for(names, truth_ticks, js_items, *, close_truth: bool = True):
    """Interleave: each tick's truth goes out before any joint_states of that stamp or later."""
    order = {t.stamp_ns: i for i, t in enumerate(truth_ticks)}
    sent = 0
    events = []
    for tick, payload, scale in js_items:
        while sent <= order[tick.stamp_ns]:
            events.append(("gt", lambda t=truth_ticks[sent]: tick_messages.joint_state(t, names)))
            sent += 1

        def make(tick=tick, payload=payload, scale=scale):
            msg = tick_messages.joint_state(payload, names)
            msg.header.stamp = ros_stamps.stamp_msg(tick.stamp_ns)
            if scale != 1.0:
                msg.velocity = (payload.velocity * scale).tolist()
            return msg
        events.append(("js", make))
    if close_truth:
        events.extend(("gt", lambda t=t: tick_messages.joint_state(t, names)) for t in truth_ticks[sent:])
    return events


def stream(ticks, fault: str | None):
    """The joint_states items for one run and the stamp the fault concerns."""
    base = ticks[FIRST:FIRST + N_STREAM]
    items = [js_item(t) for t in base]
    k = FAULT_AT
    if fault is None:
        return base, items, None
    if fault == "drop":
        del items[k]
    elif fault == "duplicate":
        items.insert(k + 1, js_item(base[k]))
    elif fault == "reorder":
        items[k], items[k + 1] = items[k + 1], items[k]
    elif fault == "velocity_x_decimation":
        items = [js_item(t, velocity_scale=float(DECIMATION)) for t in base]
    elif fault == "stale_payload":
        items[k] = js_item(base[k], payload=base[k - 1])
    else:
        raise ValueError(fault)
    return base, items, base[k].stamp_ns


def run_against_publisher(tmp_path, physics, events, n_js, *extra, spec=None, ns_tag="pub", module_code=None,
                          timeout_s=60.0, mid_run=None):
    ns = fresh_ns(ns_tag)
    spec = spec or make_spec(ns, physics)
    pub = FaultyPublisher(ns, spec)
    run = None
    try:
        run = RecorderRun(tmp_path, "--ticks", str(n_js), *extra, ns=ns, module_code=module_code)
        pub.wait_matched(run)
        if mid_run is None:
            pub.publish(events)
        else:
            mid_run(pub, spec)
        rc, out, verdict = run.wait(timeout_s)
    finally:
        if run is not None:
            run.stop()
        pub.close()
    assert_no_traceback(out)
    return rc, out, verdict
