"""ROS modes: the env drives a running ``robogym_sim`` through its topics and services.

Imported only when an env is made with ``mode="ros_lockstep"`` or ``"ros_realtime"``; local
mode never imports rclpy.

lockstep: reset and every step go through the node's services, so the sim advances exactly
``n_ticks`` control ticks per step and the observation is the record of the last of them.
The targets travel on ``joint_commands`` (a DDS topic) and ``step`` is a service: two DDS
streams, whose relative order DDS does not promise. Here the order holds, for reasons
checked one by one: rmw_fastrtps writes synchronously and turns data sharing off, so the
command and then the step request leave this process in program order, to the same locator
of the node's participant, where one receive thread per locator hands them to their
readers in arrival order; the node's executor serves ready subscriptions before ready
services, so the command callback runs first; it forwards the targets to the physics
process over the same ordered socket the step request then takes. test/test_env_ros.py
steps with new random targets every tick and compares with local mode bit for bit: a
target applied one tick late changes the trajectory at once. (Waiting for the command's
DDS acknowledgement instead would cost Fast DDS's heartbeat period, 3 s, per step.)

real time: the sim runs on its own clock; a step publishes the targets and returns the
newest tick once at least ``n_ticks`` ticks have passed since the previous observation.

A frame is the node's ``joint_states`` and ``ground_truth/object_poses`` of one stamp, turned
back into a :class:`~robogym_ros.sim.tick.Tick` (the node publishes float64 values exactly,
so a frame equals the physics record bit for bit).
"""
from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections import OrderedDict, deque

import numpy as np
import rclpy
from geometry_msgs.msg import PoseArray
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.contract import RunState, Spec
from robogym_ros.envs.namespaces import normalize_namespace
from robogym_ros.nodes import qos
from robogym_ros.sim.tick import Tick

FRAMES_KEPT = 512  # stamps kept while waiting for their partner message; older ones are dropped
STATES_KEPT = 1024  # run states kept (lockstep adds one per tick stepped)
_STEPPED_TO = re.compile(r"stepped to tick (\d+)")
_names = itertools.count()


class SimUnavailable(RuntimeError):
    """No sim answered in the namespace given, or it stopped answering."""


class RosBackend:
    """One env's link to one sim node: its own rclpy context, node and executor thread."""

    def __init__(self, namespace: str, *, realtime: bool, timeout_s: float = 15.0):
        self.realtime = bool(realtime)
        self.namespace = normalize_namespace(namespace)
        self.timeout_s = float(timeout_s)
        self._cv = threading.Condition()
        self._joints: OrderedDict[int, JointState] = OrderedDict()
        self._poses: OrderedDict[int, PoseArray] = OrderedDict()
        # (sequence number, state): the latest run states, numbered so a reset can find the
        # first one after its request however many were dropped from the front since.
        self._states: deque[tuple[int, RunState]] = deque(maxlen=STATES_KEPT)
        self._state_seq = 0
        self._spec: Spec | None = None
        self._callback_error = ""  # the last exception a callback raised, for timeout messages
        self._resets = 0
        self._last_index: int | None = None
        self._context = rclpy.Context()
        # Never take the user's Ctrl-C: the training script decides what a signal means.
        rclpy.init(args=[], context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # --- set-up ----------------------------------------------------------------------------
    def _start(self) -> None:
        ns = self.namespace
        node_name = f"robogym_env_{os.getpid()}_{next(_names)}"
        self._node = n = rclpy.create_node(node_name, namespace=ns or "/", context=self._context,
                                           start_parameter_services=False, enable_rosout=False)
        n.create_subscription(JointState, f"{ns}/{contract.JOINT_STATES}", self._on_joints, qos.STREAM_QOS)
        n.create_subscription(PoseArray, f"{ns}/{contract.TRUTH_OBJECTS}", self._on_poses, qos.STREAM_QOS)
        n.create_subscription(String, f"{ns}/{contract.SPEC_TOPIC}", self._on_spec, qos.SPEC_QOS)
        n.create_subscription(String, f"{ns}/{contract.STATE_TOPIC}", self._on_state, qos.STATE_QOS)
        self._commands = n.create_publisher(JointState, f"{ns}/{contract.JOINT_COMMANDS}", qos.COMMAND_QOS)
        self._services = {s: n.create_client(Trigger, f"{ns}/{contract.SIM_NODE}/{s}")
                          for s in ("reset", "step", "resume", "pause")}
        self._params = n.create_client(GetParameters, f"{ns}/{contract.SIM_NODE}/get_parameters")
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(n)
        self._thread = threading.Thread(target=self._spin, name=f"{node_name}_spin", daemon=True)
        self._thread.start()

        where = f"no robogym_sim answers in namespace {ns or '/'!r}"
        self._wait(lambda: self._spec is not None, f"{where} (no latched spec within {{t}} s; "
                   f"start one: python -m robogym_ros.nodes.sim_node --ros-args -r __ns:={ns or '/'} "
                   "-p start_paused:=true)")
        self._wait(lambda: self._commands.get_subscription_count() > 0,
                   f"{where}: nothing subscribes to {ns}/{contract.JOINT_COMMANDS} within {{t}} s")
        for name, client in [*self._services.items(), ("get_parameters", self._params)]:
            if not client.wait_for_service(timeout_sec=self.timeout_s):
                raise SimUnavailable(f"{where}: service {name} did not appear within {self.timeout_s:g} s")
        spec = self._spec
        self.joint_names = spec.joint_names
        self.joint_ranges = [(j.lower, j.upper) for j in spec.joints]
        self.object_names = list(spec.objects)
        self.control_dt_ns = spec.control_dt_ns
        self.model_path = spec.model
        self.node_seed = self._node_seed()

    def _spin(self) -> None:
        while self._context.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001 - kept for the caller's error; spinning goes on
                if not self._context.ok():
                    return  # shut down under the spin: nothing left to serve
                self._callback_error = f"{type(exc).__name__}: {exc}"

    def _node_seed(self) -> int:
        request = GetParameters.Request(names=["seed"])
        response, = self._call(self._params, request, "get_parameters")
        return int(response.values[0].integer_value)

    # --- callbacks (executor thread) -------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        self._keep(self._joints, msg)

    def _on_poses(self, msg: PoseArray) -> None:
        self._keep(self._poses, msg)

    def _keep(self, store: OrderedDict, msg) -> None:
        with self._cv:
            store[contract.header_stamp_ns(msg)] = msg
            while len(store) > FRAMES_KEPT:
                store.popitem(last=False)
            self._cv.notify_all()

    def _on_spec(self, msg: String) -> None:
        try:
            spec = Spec.from_json(msg.data)
        except ValueError as exc:
            self._callback_error = f"the sim's spec is not valid: {exc}"
            return
        with self._cv:
            self._spec = spec
            self._cv.notify_all()

    def _on_state(self, msg: String) -> None:
        try:
            state = RunState.from_json(msg.data)
        except ValueError as exc:
            self._callback_error = str(exc)
            return
        with self._cv:
            self._state_seq += 1
            self._states.append((self._state_seq, state))
            self._cv.notify_all()

    # --- waiting and calling ---------------------------------------------------------------
    def _wait(self, predicate, what: str, timeout_s: float | None = None):
        """Until ``predicate()`` (evaluated under the lock); SimUnavailable after the timeout.

        Woken by every message, and every 20 ms for what no message announces (a match).
        """
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    error = f" (last error in a callback: {self._callback_error})" if self._callback_error else ""
                    raise SimUnavailable(what.format(t=f"{timeout_s:g}") + error)
                self._cv.wait(min(remaining, 0.02))

    def _call(self, client, request, name: str, count: int = 1) -> list:
        """``count`` requests sent at once (one client: the node serves them in order); their answers."""
        futures = [client.call_async(request) for _ in range(count)]
        done = threading.Semaphore(0)
        for future in futures:
            future.add_done_callback(lambda _f: done.release())
        deadline = time.monotonic() + self.timeout_s * count
        for _ in futures:
            if not done.acquire(timeout=max(0.0, deadline - time.monotonic())):
                for future in futures:
                    client.remove_pending_request(future)
                raise SimUnavailable(f"service {name} of the sim in {self.namespace or '/'} "
                                     f"did not answer within {self.timeout_s * count:g} s")
        return [future.result() for future in futures]

    def _trigger(self, name: str, count: int = 1) -> list[str]:
        messages = []
        for response in self._call(self._services[name], Trigger.Request(), name, count):
            if not response.success:
                raise RuntimeError(f"the sim refused {name}: {response.message}")
            messages.append(response.message)
        return messages

    def _frame(self, index: int) -> Tick:
        """The frame of tick ``index``, once both of its messages are here."""
        stamp = index * self.control_dt_ns
        self._wait(lambda: stamp in self._joints and stamp in self._poses,
                   f"tick {index} (stamp {stamp} ns) did not arrive from the sim within {{t}} s")
        with self._cv:
            return self._tick(stamp, self._joints[stamp], self._poses[stamp])

    def _newest_complete(self) -> int | None:
        """Index of the newest stamp with both messages here (caller holds the lock)."""
        for stamp in reversed(self._joints):
            if stamp in self._poses:
                return stamp // self.control_dt_ns
        return None

    def _tick(self, stamp: int, joints: JointState, poses: PoseArray) -> Tick:
        if list(joints.name) != self.joint_names:
            raise RuntimeError(f"joint_states names {list(joints.name)} differ from the spec's {self.joint_names}")
        object_poses = np.array([[p.position.x, p.position.y, p.position.z, p.orientation.w,
                                  p.orientation.x, p.orientation.y, p.orientation.z]
                                 for p in poses.poses], dtype=np.float64).reshape(-1, contract.POSE_SIZE)
        return Tick(index=stamp // self.control_dt_ns, stamp_ns=stamp, episode=self._resets,
                    position=np.array(joints.position, dtype=np.float64),
                    velocity=np.array(joints.velocity, dtype=np.float64),
                    effort=np.array(joints.effort, dtype=np.float64),
                    object_poses=object_poses, state=np.empty(0), blew_up=self._blew_up_since(stamp))

    def _blew_up_since(self, stamp: int) -> bool:
        """A blow-up the node reported after the previous frame, up to ``stamp``."""
        previous = -1 if self._last_index is None else self._last_index * self.control_dt_ns
        for _, s in reversed(self._states):  # newest first; states come in stamp order
            if s.stamp_ns <= previous:
                return False
            if s.reason == "blow_up" and s.stamp_ns <= stamp:
                return True
        return False

    # --- the backend interface ------------------------------------------------------------
    def reset(self, seed: int | None) -> Tick:
        if seed is not None:
            self._check_seed(int(seed))
        with self._cv:
            seq = self._state_seq
        self._trigger("reset")
        # The node publishes the reset's run state (with the reset tick's stamp) before it answers.
        self._wait(lambda: any(n > seq and s.reason == "reset" for n, s in self._states),
                   "the sim did not report its reset within {t} s")
        with self._cv:
            state = next(s for n, s in self._states if n > seq and s.reason == "reset")
        self._resets += 1
        self._last_index = None
        tick = self._frame(state.stamp_ns // self.control_dt_ns)
        self._last_index = tick.index
        if self.realtime:
            self._trigger("resume")
        return tick

    def _check_seed(self, seed: int) -> None:
        # A running node's generator cannot be re-seeded: its seed is read-only and drawn from
        # once per reset. A seeded reset is honoured where it means what it means locally.
        if seed != self.node_seed:
            raise ValueError(
                f"reset(seed={seed}): the sim in {self.namespace or '/'} was started with seed "
                f"{self.node_seed} and cannot be re-seeded while it runs; start it with -p seed:={seed}, "
                "or reset without a seed")
        if self._resets:
            raise ValueError(
                f"reset(seed={seed}): this env has already reset the sim in {self.namespace or '/'} "
                f"{self._resets} time(s); its generator cannot be rewound. Reset without a seed "
                "(the next scene of the same sequence), or start a fresh sim to replay the sequence")

    def step(self, targets: dict[str, float], n_ticks: int) -> Tick:
        if self._last_index is None:
            raise RuntimeError("step() before reset()")
        msg = JointState()
        msg.name = list(targets)
        msg.position = [float(v) for v in targets.values()]
        self._commands.publish(msg)
        if self.realtime:
            return self._step_realtime(n_ticks)
        # All n step requests at once: one client's requests reach the node in order and it
        # serves them one by one, so pipelining saves n - 1 round trips and changes nothing else.
        expected = self._last_index
        for message in self._trigger("step", n_ticks):
            expected += 1
            m = _STEPPED_TO.search(message)
            if m is None or int(m.group(1)) != expected:
                raise RuntimeError(f"lockstep broken: expected the sim to step to tick {expected}, it "
                                   f"answered {message!r} (is another client stepping or resetting it?)")
        tick = self._frame(expected)
        self._last_index = tick.index
        return tick

    def _step_realtime(self, n_ticks: int) -> Tick:
        wanted = self._last_index + n_ticks
        self._wait(lambda: (self._newest_complete() or -1) >= wanted,
                   f"the sim in {self.namespace or '/'} did not reach tick {wanted} within {{t}} s "
                   "(is it paused?)")
        with self._cv:
            index = self._newest_complete()
            stamp = index * self.control_dt_ns
            tick = self._tick(stamp, self._joints[stamp], self._poses[stamp])
        self._last_index = tick.index
        return tick

    def close(self) -> None:
        executor = getattr(self, "_executor", None)
        node = getattr(self, "_node", None)
        if executor is not None and node is not None:
            executor.remove_node(node)
        rclpy.try_shutdown(context=self._context)
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(1.0)
        if executor is not None:
            executor.shutdown(timeout_sec=0)
        if node is not None:
            node.destroy_node()
