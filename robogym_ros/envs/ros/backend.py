"""ROS modes: the env drives a running ``robogym_sim`` through its topics and services.

Imported only when an env is made with ``mode="ros_lockstep"`` or ``"ros_realtime"``; local
mode never imports rclpy.

lockstep: each step is one message on ``robogym_sim/step_request`` (contract.STEP_REQUEST_TOPIC,
serialized once per step by wire/step_request.py): the targets and the number of ticks
together, from the tick this env saw last. The sim refuses it, changing nothing, unless it is
paused at that very tick; otherwise it steps exactly ``n_ticks`` ticks with the targets from
the first, and answers on ``robogym_sim/step_result`` with the last tick's record once that
tick is published. The targets cannot be overtaken by the step (one message), a sim another
client moved is an error (never a silent other trajectory), and one answer per step replaces
taking two messages per tick.

real time: the sim runs on its own clock; a step publishes the targets on ``joint_commands``
and returns the newest tick once at least ``n_ticks`` ticks have passed since the previous one.

Resets go through the ``reset`` service. A seeded reset first sets the sim's live ``seed``
parameter (the next reset starts that seed's sequence), then checks the reset's answer: the
scene must be scene 1 of that seed, the one local mode's ``reset(seed=s)`` gives, or the reset
raises. A reset's answer is found by the tick the service names, so nothing of the sim's past
(the latched run states a new reader gets) can be mistaken for it.

Answers and ticks are taken by the calling thread (envs/ros/ticks.py); an executor thread
serves only the sim client (ros/sim_client.py: the spec, the services, the seed; no streams).
"""
from __future__ import annotations

import atexit
import itertools
import os
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from robogym_ros import contract
from robogym_ros.contract import RunAnswer
from robogym_ros.envs.ros.namespaces import normalize_namespace
from robogym_ros.envs.ros.ticks import TickReader
from robogym_ros.ros import qos
from robogym_ros.ros.sim_client import SimBusy, SimClient, SimUnavailable
from robogym_ros.sim.tick import Tick
from robogym_ros.wire.step_request import StepRequestEncoder

__all__ = ["RosBackend", "SimBusy", "SimUnavailable", "SeedNotHonoured"]
BUSY_RETRY_S = 0.005  # between sends of a step another client's call refused (it changed nothing)
SPIN_STOP_S = 5.0  # the most close() waits for the spin thread to see the shut-down context

_names = itertools.count()


class SeedNotHonoured(RuntimeError):
    """A seeded reset over ROS did not give that seed's first scene: the scene is not local mode's."""


class RosBackend:
    """One env's link to one sim node: its own rclpy context, nodes and executor thread."""

    def __init__(self, namespace: str, *, realtime: bool, timeout_s: float = 15.0):
        self.realtime = bool(realtime)
        self.namespace = normalize_namespace(namespace)
        self.timeout_s = float(timeout_s)
        self._where = f"the sim in {self.namespace or '/'}"
        self._cv = threading.Condition()
        self._callback_error = ""  # the last exception a callback raised, for timeout messages
        self._resets = 0
        self._last_index: int | None = None
        self._encoder: StepRequestEncoder | None = None  # for the joint names targets come with
        self._closed = False
        self._context = rclpy.Context()
        # Never take the user's Ctrl-C: the training script decides what a signal means.
        rclpy.init(args=[], context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        # A script that never calls close(): tear down before the interpreter does, or the
        # DDS threads abort the process at exit ("terminate called without an active exception").
        atexit.register(self.close)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # --- set-up ----------------------------------------------------------------------------
    def _start(self) -> None:
        ns = self.namespace
        node_name = f"robogym_env_{os.getpid()}_{next(_names)}"
        kwargs = dict(context=self._context, start_parameter_services=False, enable_rosout=False)
        self._node = n = rclpy.create_node(node_name, namespace=ns or "/", **kwargs)
        # the env reads its own ticks, run states and step results (TickReader): no second copy of them
        self._client = SimClient(n, joints=False, cameras=False, watch=False)
        if self.realtime:
            self._commands = n.create_publisher(JointState, f"{ns}/{contract.JOINT_COMMANDS}", qos.COMMAND_QOS)
        else:
            self._commands = n.create_publisher(JointTrajectory, f"{ns}/{contract.STEP_REQUEST_TOPIC}",
                                                qos.COMMAND_QOS)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(n)
        self._thread = threading.Thread(target=self._spin, name=f"{node_name}_spin", daemon=True)
        self._thread.start()

        where = f"no robogym_sim answers in namespace {ns or '/'!r}"
        try:
            spec = self._client.wait_spec(self.timeout_s)
        except SimUnavailable:
            raise SimUnavailable(f"{where} (no latched spec within {self.timeout_s:g} s; start one: python -m "
                                 f"robogym_ros.nodes.sim_node --ros-args -r __ns:={ns or '/'} "
                                 "-p start_paused:=true)") from None
        self.joint_names = spec.joint_names
        self.joint_ranges = [(j.lower, j.upper) for j in spec.joints]
        self.object_names = list(spec.objects)
        self.control_dt_ns = spec.control_dt_ns
        self.model_path = spec.model
        # Never spun: the caller takes ticks and run states itself (envs/ros/ticks.py).
        self._tick_node = rclpy.create_node(f"{node_name}_ticks", namespace=ns or "/", **kwargs)
        self._reader = TickReader(self._tick_node, ns, self.joint_names, self.control_dt_ns,
                                  ticks=self.realtime)
        self._wait(lambda: self._commands.get_subscription_count() > 0,
                   f"{where}: nothing subscribes to {self._commands.topic_name} within {{t}} s"
                   + ("" if self.realtime else " (a robogym_sim older than lockstep step requests?)"))
        self._wait(self._reader.matched, f"{where}: its step results{' and ticks' if self.realtime else ''} "
                   "did not match within {t} s")
        self._client.wait_services(self.timeout_s)

    def _spin(self) -> None:
        while self._context.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception as exc:  # noqa: BLE001 - kept for the caller's error; spinning goes on
                if not self._context.ok():
                    return  # shut down under the spin: nothing left to serve
                self._callback_error = f"{type(exc).__name__}: {exc}"

    # --- waiting and calling ---------------------------------------------------------------
    def _wait(self, predicate, what: str) -> None:
        """Until ``predicate()``; SimUnavailable after the timeout. Polled every 20 ms (a match
        is announced by no message)."""
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    error = f" (last error in a callback: {self._callback_error})" if self._callback_error else ""
                    raise SimUnavailable(what.format(t=f"{self.timeout_s:g}") + error)
                self._cv.wait(min(remaining, 0.02))

    def _trigger(self, name: str) -> RunAnswer:
        """The sim's answer; SimRefused (a RuntimeError) if it refused, SimUnavailable after the timeout."""
        return self._client.trigger(name, self.timeout_s)

    # --- the backend interface ------------------------------------------------------------
    def reset(self, seed: int | None) -> Tick:
        if seed is not None:
            self._set_seed(int(seed))
        try:
            answer = self._trigger("reset")
        except ValueError as exc:
            raise RuntimeError(f"{self._where} answered reset with no run answer "
                               f"(a robogym_sim older than this env?): {exc}") from None
        stamp = answer.tick * self.control_dt_ns
        r = self._reader
        result = r.wait(lambda: r.result(("reset",), stamp_ns=stamp), self.timeout_s,
                        lambda: f"the answer to the reset at tick {answer.tick} did not arrive from {self._where} "
                                f"within {self.timeout_s:g} s (is the sim still running?)")
        if seed is not None and (result.seed, result.scene) != (seed, 1):
            raise SeedNotHonoured(
                f"reset(seed={seed}): {self._where} drew scene {result.scene} of seed {result.seed}, not "
                f"scene 1 of seed {seed} (the scene local reset(seed={seed}) gives); did another client "
                "reset it meanwhile? Nothing was returned")
        self._resets += 1
        tick = r.result_tick(result, episode=self._resets)
        self._last_index = tick.index
        if self.realtime:
            r.forget_before(stamp)
            self._trigger("resume")
        return tick

    def _set_seed(self, seed: int) -> None:
        ok, reason = self._client.set_seed(seed, self.timeout_s)
        if not ok:
            error = SimBusy if contract.BUSY_PREFIX in reason else ValueError
            raise error(f"reset(seed={seed}): {self._where} did not take the seed: {reason}")

    def step(self, targets: dict[str, float], n_ticks: int) -> Tick:
        if self._last_index is None:
            raise RuntimeError("step() before reset()")
        if self.realtime:
            return self._step_realtime(targets, n_ticks)
        last = self._last_index
        start_ns, dt = last * self.control_dt_ns, self.control_dt_ns
        names = tuple(targets)
        if self._encoder is None or self._encoder.joint_names != names:
            self._encoder = StepRequestEncoder(names)
        request = self._encoder.encode(start_ns, list(targets.values()), n_ticks * dt)
        r = self._reader
        deadline = time.monotonic() + self.timeout_s
        while True:  # sent again while another client's call owns the run state, up to the timeout
            self._commands.publish(request)
            result = r.wait(lambda: r.result(("step", "step_refused", "step_busy"), from_stamp_ns=start_ns),
                            self.timeout_s, lambda: f"the answer to the step request from tick {last} ({n_ticks} "
                            f"ticks) did not arrive from {self._where} within {self.timeout_s:g} s (is the sim "
                            "still running?)")
            if result.reason != "step_busy":
                break
            if time.monotonic() >= deadline:
                raise SimBusy(f"{self._where} stayed busy for {self.timeout_s:g} s; the step from tick {last} "
                              f"was refused, nothing changed: {result.detail}")
            time.sleep(BUSY_RETRY_S)
        if result.reason == "step_refused":
            raise RuntimeError(f"{self._where} refused the step from tick {last}: {result.detail}")
        index = result.stamp_ns // dt
        if index != last + n_ticks and not result.blew_up:
            raise RuntimeError(f"lockstep broken: {self._where} stepped from tick {last} to {index}, "
                               f"not {last + n_ticks}")
        tick = r.result_tick(result, episode=self._resets)
        self._last_index = index
        return tick

    def _step_realtime(self, targets: dict[str, float], n_ticks: int) -> Tick:
        msg = JointState()
        msg.name = list(targets)
        msg.position = [float(v) for v in targets.values()]
        self._commands.publish(msg)
        last = self._last_index
        wanted = last + n_ticks
        r = self._reader

        def newest():
            index = r.newest_frame()
            return index if index is not None and index >= wanted else None

        index = r.wait(newest, self.timeout_s,
                       lambda: f"{self._where} did not reach tick {wanted} within {self.timeout_s:g} s (is it paused?)")
        dt = self.control_dt_ns
        blew_up = r.state(("blow_up",), last * dt, index * dt) is not None
        r.forget_before(index * dt)
        tick = r.frame(index, episode=self._resets, blew_up=blew_up)
        self._last_index = index
        return tick

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        executor = getattr(self, "_executor", None)
        nodes = [x for x in (getattr(self, "_node", None), getattr(self, "_tick_node", None)) if x is not None]
        if executor is not None and nodes:
            executor.remove_node(nodes[0])
        rclpy.try_shutdown(context=self._context)
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(SPIN_STOP_S)
            if thread.is_alive():  # destroying nodes under a wait in progress crashes the process
                return
        if executor is not None:
            executor.shutdown(timeout_sec=0)
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()
        for node in nodes:
            node.destroy_node()
