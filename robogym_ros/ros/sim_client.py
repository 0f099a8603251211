"""A client of one running sim through its public interface only (README "The sim node"): the
latched spec and run state, its /diagnostics status, joint_states, the camera images, and
optionally ground-truth object poses; the pause/resume/step/reset Trigger services, the live
``seed`` parameter, ``joint_commands``, ``joint_trajectory`` and the lockstep ``step_request``
(answered on ``step_result``). The one client of a running sim:
robogym_mcp, robogym_viewer and the Gymnasium env over ROS (envs/ros/backend.py, which takes its
ticks and step results itself, envs/ros/ticks.py) build on it.

Everything it receives is taken on the node's executor thread; readers on other threads (tool
calls, HTTP handlers) read and wait through the ObservationBuffer and the ``changed`` counter.
Every wait is bounded: a sim that is absent or gone is a :class:`SimUnavailable` naming what
was waited for, never a hang. Subscriptions outlive the sim, so a sim that comes back (a new
process: a new spec ``instance``) is picked up by itself, and the buffer starts over.

Streams are taken RELIABLE with a short keep-last history: an image lost on the way is resent
from the sim's own history (taken BEST_EFFORT on a loaded 2-core machine, a quarter of the frame
sets lacked a camera's image). What a client costs the sim's pacing is measured, not assumed:
bench/bench_viewer.py (the physics runs in a process of its own, which no reader touches).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robogym_ros import contract
from robogym_ros.contract import QosSpec, RunAnswer, RunState, Spec, StepResult
from robogym_ros.live.frames import Frame, FrameSet
from robogym_ros.live.observation import ObservationBuffer
from robogym_ros.ros.qos import COMMAND_QOS, DIAGNOSTICS_QOS, SPEC_QOS, STATE_QOS, STREAM_QOS, profile
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.wire.cdr import CdrError
from robogym_ros.wire.decode import decode_image, decode_joint_state, decode_pose_array
from robogym_ros.wire.step_request import StepRequestEncoder

TICKS_QOS = profile(QosSpec(depth=100))  # 1 s of ticks at 100 Hz: a frame's tick is still at hand
FRAMES_QOS = profile(QosSpec(depth=5))
GONE_GRACE_S = 0.5  # a sim that left the graph: how long a call looks for it to be back before answering
BUSY_RETRY_S = 0.02  # a step request refused as busy (another client's call owns the run state) is sent again


class SimUnavailable(RuntimeError):
    """The sim did not answer in time; the message says what was waited for, and how long."""


class SimRefused(RuntimeError):
    """The sim answered a call with a refusal; nothing changed. The message has the sim's reason."""


class SimBusy(SimRefused):
    """The sim refused because another client owned its run state at that moment; nothing
    changed, so the same request may be sent again (``retryable``)."""

    retryable = True


class SimClient:
    """The sim in the namespace of ``node``, as its public topics and services show it.
    ``joints`` (with their servo targets), ``objects``, ``cameras``: which streams to take (the env
    takes its own). ``watch``: the run state, diagnostics, camera skips and step results, what an
    agent or a viewer watches; a client that reads its own answers (the ROS env's TickReader)
    leaves them out, as each is a callback on this client's thread at every lockstep step."""

    def __init__(self, node, *, joints: bool = True, objects: bool = False, cameras: bool = True,
                 watch: bool = True, on_frame_set: Callable[[FrameSet], None] | None = None,
                 on_change: Callable[[], None] | None = None):
        self.node = node
        self._take_cameras = cameras
        self._log = node.get_logger()
        self._on_frame_set, self._on_change = on_frame_set, on_change
        self._cv = threading.Condition()
        self.namespace = node.get_namespace()
        self.sim_node = f"{self.namespace.rstrip('/')}/{contract.SIM_NODE}"  # its fully qualified name
        self.spec_topic = node.resolve_topic_name(contract.SPEC_TOPIC)
        self.spec: Spec | None = None
        self.run_state: RunState | None = None  # the newest run state received
        self.last_reset: RunState | None = None  # the newest reset (or blow-up: the loop reset itself)
        self.diagnostics: dict[str, str] | None = None  # the newest status values of this sim
        self.diagnostics_message = ""
        self.changed = 0  # bumped on every new spec, run state or diagnostics
        self.instances = 0  # sims seen (a new spec instance: a sim started, or came back)
        self.bad_messages = 0
        self.buffer = ObservationBuffer(())
        self._cameras: dict[str, object] = {}  # image topic -> subscription
        self.skipped_frames: deque[int] = deque(maxlen=100)  # stamps of frames the sim reported skipped
        self.watching = watch
        node.create_subscription(String, contract.SPEC_TOPIC, self._on_spec, SPEC_QOS)
        if watch:
            node.create_subscription(String, contract.STATE_TOPIC, self._on_state, STATE_QOS)
            node.create_subscription(DiagnosticArray, contract.DIAGNOSTICS, self._on_diagnostics, DIAGNOSTICS_QOS)
            node.create_subscription(Header, contract.CAMERA_SKIPS_TOPIC, self._on_skipped, STREAM_QOS)
        if joints:
            node.create_subscription(JointState, contract.JOINT_STATES, self._on_joints, TICKS_QOS, raw=True)
            # the servos' goal positions, as a real servo reports its goal register (not ground truth of the scene)
            node.create_subscription(JointState, contract.TRUTH_TARGETS, self._on_targets, TICKS_QOS, raw=True)
        if objects:
            node.create_subscription(PoseArray, contract.TRUTH_OBJECTS, self._on_objects, TICKS_QOS, raw=True)
        self._services = {name: node.create_client(Trigger, f"{contract.SIM_NODE}/{name}")
                          for name in contract.SERVICES}
        self._parameters = node.create_client(SetParameters, f"{contract.SIM_NODE}/set_parameters")
        self._commands = node.create_publisher(JointState, contract.JOINT_COMMANDS, COMMAND_QOS)
        self._trajectories = node.create_publisher(JointTrajectory, contract.JOINT_TRAJECTORY, COMMAND_QOS)
        self._step_requests = node.create_publisher(JointTrajectory, contract.STEP_REQUEST_TOPIC, COMMAND_QOS)
        self._step_results: deque[tuple[int, StepResult]] = deque(maxlen=32)  # (arrival seq, result)
        self._step_seq = 0
        if watch:
            node.create_subscription(String, contract.STEP_RESULT_TOPIC, self._on_step_result,
                                     profile(contract.STEP_RESULT_QOS))

    # --- what arrives (the executor thread) ---------------------------------------------------
    def _bump(self) -> None:
        with self._cv:
            self.changed += 1
            self._cv.notify_all()
        if self._on_change is not None:
            self._on_change()

    def _on_spec(self, msg: String) -> None:
        try:
            spec = Spec.from_json(msg.data)
        except ValueError as exc:
            self.bad_messages += 1
            self._log.error(f"the sim's spec is not understood, ignored: {exc}")
            return
        new_sim = self.spec is None or spec.instance != self.spec.instance
        cameras_changed = self.spec is None or [c.image_topic for c in spec.cameras] != \
            [c.image_topic for c in self.spec.cameras]
        if new_sim or cameras_changed or spec.joint_names != self.spec.joint_names:
            self.buffer.reconfigure(spec.joint_names, [c.name for c in spec.cameras])
            self._subscribe_cameras(spec)
        with self._cv:
            if new_sim:  # its ticks start over; an older sim's reset says nothing of this one
                self.instances += 1
                self.last_reset = None
            self.spec = spec
        self._bump()

    def _subscribe_cameras(self, spec: Spec) -> None:
        wanted = {c.image_topic: c.name for c in spec.cameras} if self._take_cameras else {}
        for topic in [t for t in self._cameras if t not in wanted]:
            self.node.destroy_subscription(self._cameras.pop(topic))
        for topic, camera in wanted.items():
            if topic not in self._cameras:
                self._cameras[topic] = self.node.create_subscription(
                    Image, topic, self._image_callback(camera), FRAMES_QOS, raw=True)

    def _image_callback(self, camera: str):
        def on_image(data: bytes) -> None:
            try:
                f = decode_image(data)
            except CdrError as exc:
                self._bad(f"{camera} image", exc)
                return
            frame = Frame(camera, f.stamp_ns, f.width, f.height, f.encoding, f.step, f.data_len, f.pixels(data))
            done = self.buffer.add_frame(frame)
            if done is not None and self._on_frame_set is not None:
                self._on_frame_set(done)
        return on_image

    def _on_state(self, msg: String) -> None:
        try:
            state = RunState.from_json(msg.data)
        except ValueError as exc:
            self._bad("run state", exc)
            return
        with self._cv:
            self.run_state = state
            if state.reason in ("reset", "blow_up"):
                self.last_reset = state
        self._bump()

    def _on_step_result(self, msg: String) -> None:
        try:
            result = StepResult.from_json(msg.data)
        except ValueError as exc:
            self._bad("step result", exc)
            return
        with self._cv:
            self._step_seq += 1
            self._step_results.append((self._step_seq, result))
            self._cv.notify_all()

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.hardware_id == self.sim_node and status.name.endswith(": simulation"):
                values = {kv.key: kv.value for kv in status.values}
                with self._cv:
                    self.diagnostics, self.diagnostics_message = values, status.message
                self._bump()

    def _on_skipped(self, msg: Header) -> None:
        """A frame the sim did not render (its renderer was busy): it will never come."""
        with self._cv:
            self.skipped_frames.append(contract.join_stamp(msg.stamp.sec, msg.stamp.nanosec))
            self._cv.notify_all()

    def _on_joints(self, data: bytes) -> None:
        try:
            js = decode_joint_state(data)
        except CdrError as exc:
            self._bad("joint_states", exc)
            return
        self.buffer.add_joints(js.stamp_ns, js.name, js.position, js.velocity, js.effort)

    def _on_targets(self, data: bytes) -> None:
        try:
            js = decode_joint_state(data)
        except CdrError as exc:
            self._bad("joint targets", exc)
            return
        self.buffer.add_targets(js.stamp_ns, js.name, js.position)

    def _on_objects(self, data: bytes) -> None:
        try:
            stamp_ns, _frame, poses = decode_pose_array(data)
        except CdrError as exc:
            self._bad("object poses", exc)
            return
        self.buffer.add_objects(stamp_ns, poses)

    def _bad(self, what: str, exc: Exception) -> None:
        self.bad_messages += 1
        if self.bad_messages == 1:
            self._log.error(f"a {what} message is not understood, ignored: {exc}")

    # --- readers (any thread) -----------------------------------------------------------------
    def sim_present(self) -> bool:
        """Whether a sim publishes its spec here now (the ROS graph's view: a sim killed
        without a chance to say goodbye stays in it until DDS notices, some seconds)."""
        return self.node.count_publishers(self.spec_topic) > 0

    def gone(self, within_s: float = 0.0) -> bool:
        """A sim was here (its spec came) and has left the ROS graph: no publisher of its spec,
        still none after ``within_s``. A call against it then answers at once instead of
        waiting its whole timeout for a service that will not appear."""
        deadline = time.monotonic() + within_s
        while self.spec is not None and not self.sim_present():
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.05)
        return False

    def gone_message(self) -> str:
        return (f"the sim in {self.namespace} is gone: no publisher of {self.spec_topic}; the last spec came "
                f"from sim instance {self.spec.instance}")

    def wait_spec(self, timeout_s: float) -> Spec:
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self.spec is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SimUnavailable(
                        f"no sim in {self.namespace}: waited {timeout_s:g} s for its latched spec on "
                        f"{self.spec_topic} ({self.node.count_publishers(self.spec_topic)} publishers)")
                self._cv.wait(min(left, 0.2))
            return self.spec

    def wait_state(self, predicate: Callable[[RunState], bool], timeout_s: float) -> RunState | None:
        """The newest run state once ``predicate`` holds for it (None after ``timeout_s``): the
        sim publishes its state before a service answers, but on another topic, which may
        arrive a little later."""
        self._needs_watch("wait_state")
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self.run_state is None or not predicate(self.run_state):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cv.wait(left)
            return self.run_state

    def _needs_watch(self, what: str) -> None:
        if not self.watching:
            raise RuntimeError(f"SimClient.{what} reads the run state and step results, which this client "
                               "(watch=False) does not take")

    def wait_changed(self, seq: int, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self.changed <= seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            return self.changed

    # --- the sim's services and inputs ----------------------------------------------------------
    def call(self, service: str, timeout_s: float) -> tuple[bool, str]:
        """(success, message) of the sim's ``service`` Trigger, or SimUnavailable after ``timeout_s``."""
        client = self._services[service]
        return self._call(client, Trigger.Request(), timeout_s, lambda r: (r.success, r.message))

    def trigger(self, service: str, timeout_s: float) -> RunAnswer:
        """What the sim's granted ``service`` Trigger did; SimRefused with the sim's reason if it
        refused, SimUnavailable after ``timeout_s``."""
        ok, message = self.call(service, timeout_s)
        if not ok:
            raise (SimBusy if message.startswith(contract.BUSY_PREFIX) else SimRefused)(
                f"the sim refused {service}: {message}")
        return RunAnswer.from_json(message)

    def wait_services(self, timeout_s: float) -> None:
        """Until every service of the sim is there; SimUnavailable naming the first missing."""
        deadline = time.monotonic() + timeout_s
        for name, client in [*self._services.items(), ("set_parameters", self._parameters)]:
            if not client.wait_for_service(timeout_sec=max(deadline - time.monotonic(), 0.0)):
                raise SimUnavailable(f"the sim's service {name} did not appear in {self.namespace} "
                                     f"within {timeout_s:g} s")

    def set_seed(self, seed: int, timeout_s: float) -> tuple[bool, str]:
        """Set the sim's live ``seed`` parameter (the next reset draws that seed's first scene)."""
        request = SetParameters.Request(parameters=[Parameter(
            name="seed", value=ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=int(seed)))])
        return self._call(self._parameters, request, timeout_s,
                          lambda r: (r.results[0].successful, r.results[0].reason))

    def _call(self, client, request, timeout_s: float, answer):
        started = time.monotonic()
        name = self.node.resolve_service_name(client.srv_name)
        if self.gone(min(timeout_s, GONE_GRACE_S)):
            raise SimUnavailable(f"{self.gone_message()}: {name} not called")
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise SimUnavailable(f"the sim's {name} service did not appear within {timeout_s:g} s "
                                 f"(is a sim running in {self.namespace}?)")
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        left = timeout_s - (time.monotonic() - started)
        if not done.wait(max(left, 0.0)):
            client.remove_pending_request(future)
            raise SimUnavailable(f"no answer from {name} within {timeout_s:g} s")
        return answer(future.result())

    def wait_listener(self, inputs: str, timeout_s: float) -> None:
        """Wait, up to ``timeout_s``, until the sim's subscription has matched our publisher of
        ``inputs`` (``contract.JOINT_COMMANDS`` or ``contract.JOINT_TRAJECTORY``).

        A RELIABLE, volatile message published before the match is lost without a word, and a
        server that has just started (or a sim that has just come back) may have seen the sim's
        ticks before discovery has matched this writer to the sim's reader: so wait for the
        writer's own matched count, and say so if it stays 0."""
        publisher = {contract.JOINT_COMMANDS: self._commands,
                     contract.JOINT_TRAJECTORY: self._trajectories}[inputs]
        deadline = time.monotonic() + timeout_s
        while publisher.get_subscription_count() == 0:
            if time.monotonic() >= deadline:
                raise SimUnavailable(f"no sim in {self.namespace} subscribes {publisher.topic_name} "
                                     f"(waited {timeout_s:g} s): nothing sent")
            time.sleep(0.02)

    def step_request(self, from_index: int, targets: dict[str, float], n_ticks: int, timeout_s: float) -> StepResult:
        """Lockstep in one message: from tick ``from_index`` (the paused sim's last), hold ``targets``
        and step ``n_ticks``; the sim's StepResult (reason "step", or "step_refused" with why). A
        busy refusal (another client's call owns the run state) is sent again until ``timeout_s``;
        no answer in time is SimUnavailable."""
        self._needs_watch("step_request")
        spec = self.wait_spec(timeout_s)
        dt = spec.control_dt_ns
        request = StepRequestEncoder(tuple(targets)).encode(from_index * dt, list(targets.values()), n_ticks * dt)
        deadline = time.monotonic() + timeout_s
        while self._step_requests.get_subscription_count() == 0:
            if time.monotonic() >= deadline:
                raise SimUnavailable(f"no sim in {self.namespace} subscribes {self._step_requests.topic_name} "
                                     f"(waited {timeout_s:g} s): nothing sent")
            time.sleep(0.02)
        while True:
            with self._cv:
                sent_after = self._step_seq
            self._step_requests.publish(request)
            result = self._wait_step_result(sent_after, from_index * dt, deadline)
            if result is None:
                raise SimUnavailable(f"no answer to the step request from tick {from_index} ({n_ticks} ticks) "
                                     f"from the sim in {self.namespace} within {timeout_s:g} s")
            if result.reason != "step_busy" or time.monotonic() >= deadline:
                return result
            time.sleep(BUSY_RETRY_S)

    def _wait_step_result(self, after_seq: int, from_stamp_ns: int, deadline: float) -> StepResult | None:
        with self._cv:
            while True:
                for seq, result in self._step_results:
                    if seq > after_seq and result.from_stamp_ns == from_stamp_ns and \
                            result.reason in ("step", "step_refused", "step_busy"):
                        return result
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cv.wait(left)

    def send_targets(self, targets: dict[str, float]) -> None:
        """joint_commands (validated by the caller): stamped with the newest sim time seen, as
        a command's stamp schedules nothing but is checked against the sim's clock."""
        msg = JointState()
        msg.header.stamp = stamp_msg(self.buffer.newest_stamp_ns() or 0)
        msg.name = list(targets)
        msg.position = [float(v) for v in targets.values()]
        self._commands.publish(msg)

    def send_move(self, targets: dict[str, float], duration_ns: int) -> None:
        """A one-point joint_trajectory from now (stamp 0): linear from where the servos are."""
        sec, nanosec = contract.split_stamp(duration_ns)
        point = JointTrajectoryPoint(positions=[float(v) for v in targets.values()])
        point.time_from_start.sec, point.time_from_start.nanosec = sec, nanosec
        self._trajectories.publish(JointTrajectory(joint_names=list(targets), points=[point]))

