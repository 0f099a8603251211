"""Test harness: the sim node as a real separate process, and an observer node talking to it
over real DDS, spun by its own executor thread."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from spinning import Spinning
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.processes import stop_processes
from robogym_ros.ros import qos

MODELS = Path(__file__).parent / "models"
_counter = itertools.count()


def new_namespace(prefix: str = "sim") -> str:
    """Unique per test run and per call: tests of one run never see each other's sims."""
    return f"{prefix}{next(_counter)}_{os.getpid()}"


def wait_for(predicate, timeout_s: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` every 10 ms until it holds; TimeoutError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


def stop_process(proc: subprocess.Popen, timeout_s: float = 15.0) -> int:
    """SIGINT (a node's clean stop), SIGKILL if it has not ended within ``timeout_s``; the exit code.
    Never leaves a process behind to talk to the next test."""
    return stop_processes([proc], timeout_s)[0]


class SimProcessUnderTest:
    """``python -m robogym_ros.nodes.sim_node`` with parameters, under a unique namespace."""

    def __init__(self, namespace: str, log_dir=None, **params):
        args = [sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r", f"__ns:=/{namespace}"]
        for k, v in params.items():
            text = json.dumps(v) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else v
            args += ["-p", f"{k}:={text}"]
        log_dir = log_dir or tempfile.gettempdir()
        self.log = open(os.path.join(log_dir, f"sim_{namespace}.log"), "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.namespace = namespace

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return Path(self.log.name).read_text()

    def stop(self) -> int:
        code = stop_process(self.proc)
        self.log.close()
        return code


class Observer:
    """Subscribes to everything the sim publishes and keeps every message object it got."""

    def __init__(self, namespace: str):
        self.namespace = namespace
        self.node = rclpy.create_node(f"observer_{namespace}", namespace=f"/{namespace}")
        n = self.node
        self.joint_states: list[JointState] = []
        self.truth: list[JointState] = []
        self.objects: list[PoseArray] = []
        self.clock: list[Clock] = []
        self.diagnostics: list[DiagnosticArray] = []
        self.spec: dict | None = None
        self._lock = threading.Lock()
        n.create_subscription(JointState, contract.JOINT_STATES, self._keep(self.joint_states), qos.STREAM_QOS)
        n.create_subscription(JointState, contract.TRUTH_JOINTS, self._keep(self.truth), qos.STREAM_QOS)
        n.create_subscription(PoseArray, contract.TRUTH_OBJECTS, self._keep(self.objects), qos.STREAM_QOS)
        n.create_subscription(Clock, contract.CLOCK, self._keep(self.clock), qos.CLOCK_QOS)
        n.create_subscription(DiagnosticArray, contract.DIAGNOSTICS, self._keep(self.diagnostics), 10)
        n.create_subscription(String, f"/{namespace}/{contract.SIM_NODE}/spec", self._on_spec, qos.SPEC_QOS)
        self.commands = n.create_publisher(JointState, contract.JOINT_COMMANDS, qos.COMMAND_QOS)
        self.services = {s: n.create_client(Trigger, f"/{namespace}/{contract.SIM_NODE}/{s}")
                         for s in ("pause", "resume", "reset", "step")}
        self._spinning = Spinning(n)

    def _keep(self, store: list):
        def callback(msg):
            with self._lock:
                store.append(msg)
        return callback

    def _on_spec(self, msg: String):
        spec = json.loads(msg.data)  # the wire format, as any reader sees it
        assert spec["format"] == contract.SPEC_FORMAT, spec.get("format")
        self.spec = spec

    def wait_for(self, predicate, timeout_s: float = 20.0, what: str = "condition"):
        """``wait_for``; at once a RuntimeError if this node is no longer spun."""
        def done() -> bool:
            self._spinning.check()
            return predicate()
        wait_for(done, timeout_s, what)

    def action_client(self, action_type, name: str, **kwargs):
        """An rclpy ActionClient on this node, made while it is not spun (spinning.py says why)."""
        from rclpy.action import ActionClient
        with self._spinning.paused():
            return ActionClient(self.node, action_type, name, **kwargs)

    def destroy_action_client(self, client) -> None:
        with self._spinning.paused():
            client.destroy()

    def call(self, service: str, timeout_s: float = 10.0) -> Trigger.Response:
        client = self.services[service]
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f"service {service} not available")
        future = client.call_async(Trigger.Request())
        self.wait_for(future.done, timeout_s, f"{service} response")
        return future.result()

    def send(self, names, positions, velocity=(), effort=()):
        msg = JointState()
        msg.name = list(names)
        msg.position = [float(p) for p in positions]
        msg.velocity = [float(v) for v in velocity]
        msg.effort = [float(e) for e in effort]
        self.commands.publish(msg)

    def diag_values(self) -> dict:
        """This sim's status only: /diagnostics is global, and every sim's node is robogym_sim."""
        me = f"/{self.namespace}/{contract.SIM_NODE}"
        with self._lock:
            for arr in reversed(self.diagnostics):
                for status in arr.status:
                    if status.hardware_id == me and status.name.endswith(": simulation"):
                        return {kv.key: kv.value for kv in status.values}
        return {}

    def snapshot(self, store: list) -> list:
        with self._lock:
            return list(store)

    def clear(self):
        with self._lock:
            for store in (self.joint_states, self.truth, self.objects, self.clock):
                store.clear()

    def close(self):
        self._spinning.close()


def start_sim(namespace: str, log_dir, observer_cls=Observer, observer_args=(), **params):
    """A sim process and its observer, once the sim's latched spec has arrived."""
    sim = SimProcessUnderTest(namespace, log_dir, **params)
    obs = observer_cls(namespace, *observer_args)
    try:
        obs.wait_for(lambda: obs.spec is not None, 30, "the latched spec")
    except TimeoutError:
        obs.close()
        sim.stop()
        raise AssertionError("sim did not come up:\n" + sim.output()) from None
    return sim, obs
