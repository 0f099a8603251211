"""ROS 2 node ``robogym_recorder``: store what arrives, prove it against ground truth.

Waits for the sim's latched ``robogym_sim/spec`` (joint names, control dt, topics), subscribes
RELIABLE to joint_states, ground truth, cameras, the sim's skipped-frame reports and run state,
copies every message into preallocated rings (joint_states and ground truth raw: their CDR bytes
decoded straight into the rings, no message objects; a malformed one is a finding), and at the
end (duration, ticks, Ctrl-C or SIGTERM) gives the verdict. ``--record`` writes the received
bytes as they came (raw CDR) into an mcap bag, finalised in every case.

The command line is robogym_ros.nodes.recorder.cli (``python -m robogym_ros.nodes.recorder``
runs it too); checking a bag offline is robogym_ros.recorder.offline.
"""
from __future__ import annotations

import argparse
import json
import signal
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Header, String

from robogym_ros import contract
from robogym_ros.checks import clip
from robogym_ros.contract import Spec
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.writer import BagWriter
from robogym_ros.recorder.recording import GROUND_TRUTH, JOINT_STATES, Recording
from robogym_ros.recorder.ring_memory import memory_problem
from robogym_ros.recorder.verdict import EXIT_USAGE, TITLE, Verdict
from robogym_ros.recorder.verdict_files import write_json, write_report_of
from robogym_ros.ros.node_runner import StoppableNode
from robogym_ros.ros.qos import DIAGNOSTICS_QOS, SPEC_QOS, STATE_QOS, STREAM_QOS

# Deep enough that a 1 kHz stream survives a 0.5 s stall of this process without a loss.
RECORD_QOS = QoSProfile(depth=1000, reliability=STREAM_QOS.reliability)
GRACE_S = 1.0  # after the end, how long to wait for the truth of the last ticks and the last frames
POLL_S = 0.05  # how often the node looks at the clock, the spec timeout and publisher counts
NOTES_TOPIC = "~/recording"  # what the recorder knew that a bag does not show (written at the end)


class RecorderNode(StoppableNode):
    """Records one sim's streams into rings (and a bag); its verdict is given in :meth:`finish`."""

    def __init__(self, args: argparse.Namespace, **kwargs):
        super().__init__("robogym_recorder", **kwargs)
        self.args = args
        self.recording: Recording | None = None
        self.bag: BagWriter | None = None
        self.spec_at: float | None = None
        self.received = 0
        self.storing = True  # everything, bag included; cleared once the verdict is taken
        self.verdict: Verdict | None = None
        self.diagnostics: dict | None = None  # the sim's latest /diagnostics values (for --report)
        self._started = time.monotonic()
        self._watched: dict[str, list] = {}  # key -> [subscription, publisher count seen]
        self.spec_topic = self.resolve_topic_name(contract.SPEC_TOPIC)
        self.create_subscription(String, self.spec_topic, self._on_spec, SPEC_QOS)
        self.create_timer(POLL_S, self._on_timer)

    # --- the spec ----------------------------------------------------------------------------------
    def _on_spec(self, msg: String) -> None:
        try:
            spec = Spec.from_json(msg.data)
        except ValueError as exc:
            self.request_stop(EXIT_USAGE, f"the sim's spec on {self.spec_topic} is not valid: {clip(exc, 300)}")
            return
        if self.recording is not None:
            self._on_later_spec(spec, msg)
            return
        problem = memory_problem(self.args.capacity, self.args.keep_pixels_mb, len(spec.joints))
        if problem:
            self.request_stop(EXIT_USAGE, problem)
            return
        if self.args.record:
            try:
                self.bag = BagWriter(self.args.record)
            except BagError as exc:
                self.request_stop(EXIT_USAGE, str(exc))
                return
            self.bag.write_raw(self.spec_topic, "std_msgs/msg/String", serialize_message(msg), time.time_ns(),
                               latched=True)
        self.recording = rec = Recording(spec, self.args.capacity,
                                         pixel_budget_bytes=int(self.args.keep_pixels_mb * 2**20))
        # Joint streams always raw: decoded straight into the rings (no message object per tick).
        self._subscribe(spec.topic("ground_truth_joints").name, JointState, self._on_truth, raw=True)
        self._subscribe(spec.topic("joint_states").name, JointState, self._on_joint_state, raw=True)
        if self.bag is not None and "ground_truth_objects" in spec.topics:
            self._subscribe(spec.topic("ground_truth_objects").name, PoseArray, None)
        if self.bag is not None and "ground_truth_targets" in spec.topics:  # bag only: a LeRobot export's actions
            self._subscribe(spec.topic("ground_truth_targets").name, JointState, None)
        self._subscribe(self._sim_topic(spec, "state", "robogym_sim/state"), String, rec.store_run_state,
                        qos=STATE_QOS)
        if spec.cameras:
            skips = self._subscribe(self._sim_topic(spec, "camera_skips", contract.CAMERA_SKIPS_TOPIC), Header,
                                    rec.store_skip)
            self._watched["skips"] = [skips, 0]
        for cam in spec.cameras:
            sub = self._subscribe(cam.image_topic, Image, lambda d, name=cam.name: rec.store_image_cdr(d, name),
                                  raw=True)
            self._watched[cam.name] = [sub, 0]
            if self.bag is not None:  # its stamps too: the end waits for the camera_info of the last image
                self._subscribe(cam.info_topic, CameraInfo,
                                lambda d, name=cam.name: rec.store_camera_info_cdr(d, name), raw=True)
        if self.args.report:  # the sim's lateness for the report
            self.create_subscription(DiagnosticArray, contract.DIAGNOSTICS, self._on_diagnostics, DIAGNOSTICS_QOS)
        self.spec_at = time.monotonic()
        self.get_logger().info(
            f"spec from {clip(spec.node, 100)}: {len(rec.names)} joints, control dt "
            f"{spec.control_dt_s * 1e3:g} ms, {len(spec.cameras)} cameras"
            + (f"; recording to {self.args.record}" if self.bag else ""))

    def _on_later_spec(self, spec: Spec, msg: String) -> None:
        change = self.recording.on_spec(spec)
        if change == "same":
            return
        if self.bag is not None and self.storing:
            self.bag.write_raw(self.spec_topic, "std_msgs/msg/String", serialize_message(msg), time.time_ns(),
                               latched=True)
        if change == "restart":
            self.get_logger().warning("the sim published a new spec: it restarted mid-run")
        else:
            self.get_logger().info("the sim's spec changed live (same sim instance): each stretch is judged by "
                                   "its own spec")

    def _sim_topic(self, spec: Spec, key: str, relative: str) -> str:
        """A topic of the sim: from its spec, else beside its node (the spec's node name)."""
        if key in spec.topics:
            return spec.topics[key].name
        if spec.node.startswith("/") and spec.node.count("/") >= 1:
            namespace = spec.node.rsplit("/", 1)[0]
            return f"{namespace}/{relative}"
        return self.resolve_topic_name(relative)

    def _subscribe(self, topic: str, msg_type, store, qos: QoSProfile = RECORD_QOS, *, raw: bool = False):
        """Subscribe ``store`` (None: bag only) to ``topic``; it takes the serialized bytes if ``raw``,
        else a message object. With ``--record`` every subscription is raw: the bag gets the bytes
        as they came, and a typed ``store`` the message deserialized from them."""
        if self.bag is None:
            return self.create_subscription(msg_type, topic, store, qos, raw=raw)
        type_name = _type_name(msg_type)
        bag = self.bag
        joints = store == self._on_joint_state

        def on_raw(data: bytes) -> None:
            if not self.storing:
                return
            if not (joints and self.recording.ended):  # after the end, joint_states only show the stream alive
                bag.write_raw(topic, type_name, data, self.get_clock().now().nanoseconds,
                              latched=qos is STATE_QOS)
            if store is not None:
                store(data if raw else deserialize_message(data, msg_type))
        return self.create_subscription(msg_type, topic, on_raw, qos, raw=True)

    # --- streams -----------------------------------------------------------------------------------
    def _on_joint_state(self, data: bytes) -> None:
        """A serialized JointState; malformed ones are counted by the recording, for the verdict."""
        if not self.storing:
            return
        ended = self.recording.ended
        if not self.recording.store_joint_state_cdr(data):
            self._warn_malformed(JOINT_STATES)
        if not ended:
            self.received += 1  # malformed ones too: --ticks counts what arrived
            if self.args.ticks is not None and self.received >= self.args.ticks:
                self.recording.end("ticks reached")  # exactly --ticks, not what arrives until the next poll
                self.request_stop(0, "ticks reached")

    def _on_truth(self, data: bytes) -> None:
        if not self.recording.store_truth_cdr(data):
            self._warn_malformed(GROUND_TRUTH)

    def _warn_malformed(self, stream: str) -> None:
        bad = self.recording.malformed[stream]
        if bad.n == 1:  # once per stream; the verdict counts them all
            self.get_logger().error(f"a {stream} message is malformed and is lost (the verdict counts them): "
                                    f"{clip(bad.first_error, 300)}")

    def _on_timer(self) -> None:
        if self.spec_at is None:
            if time.monotonic() - self._started > self.args.spec_timeout:
                self.request_stop(EXIT_USAGE, f"no spec on {self.spec_topic} within {self.args.spec_timeout:g} s: "
                                              f"is robogym_sim running, on this ROS_DOMAIN_ID and namespace?")
            return
        self._watch_publishers()
        if self.recording is not None and not self.recording.ended:
            if self.done():
                self.request_stop(0, "duration reached" if self.args.duration is not None else "ticks reached")

    def _watch_publishers(self) -> None:
        for key, watched in self._watched.items():
            sub, seen = watched
            count = sub.get_publisher_count()
            if count != seen:
                self.recording.note_publishers(key, count, seen)
                watched[1] = count
                if key == "skips" and count > seen and self.bag is not None:
                    self.bag.declare(sub.topic_name, "std_msgs/msg/Header")

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        node = self.recording.spec.node
        for status in msg.status:
            if status.hardware_id == node and status.name.endswith(": simulation"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}

    def done(self) -> bool:
        a = self.args
        if self.spec_at is None:
            return False
        return ((a.duration is not None and time.monotonic() - self.spec_at >= a.duration)
                or (a.ticks is not None and self.received >= a.ticks))

    # --- the end -----------------------------------------------------------------------------------
    def finish(self, signal_name: str | None) -> int:
        """The end of the recording: wait briefly for the truth of the last ticks, give the verdict,
        finalise the bag. Exit code by verdict: 0 pass, 1 fail, 2 usage error or no data."""
        try:
            self.verdict = self._conclude(signal_name)
        finally:
            self.storing = False
            self._close_bag()
        print(self.verdict.table(), flush=True)
        code = write_json(self.verdict, self.args.json)
        if self.args.report:
            code = max(code, write_report_of(self.args.report, self.verdict, self._report_data,
                                             self.diagnostics))
        _ignore_further_signals()
        return code

    def _report_data(self):
        from robogym_ros.recorder.report.data import ReportData
        from robogym_ros.recorder.report.inputs import frames_from_ring, judged_window_ns
        rec = self.recording
        if rec is None:
            return None
        window = judged_window_ns(self.verdict) if self.verdict is not None else None
        return ReportData.from_snapshots(rec.spec, rec.joints.snapshot(), rec.truth.snapshot(),
                                         grid_stamps_ns=np.frombuffer(rec.joint_stamps, np.int64),
                                         frames=frames_from_ring(rec.images, window_ns=window))

    def _conclude(self, signal_name: str | None) -> Verdict:
        rec = self.recording
        if rec is None:
            reason = (self.stop_reason if self.exit_code == EXIT_USAGE else
                      f"stopped by {signal_name} before the sim's spec arrived on {self.spec_topic}")
            return Verdict.from_usage_error(reason, title=TITLE)
        if self.exit_code == EXIT_USAGE:
            return Verdict.from_usage_error(self.stop_reason, title=TITLE)
        rec.end(signal_name or self.stop_reason)
        self._grace(GRACE_S)
        self.storing = False
        verdict = rec.verdict(title=TITLE)
        if signal_name:
            verdict.notes.append(f"stopped by {signal_name} {time.monotonic() - self.spec_at:.2f} s after the spec "
                                 f"arrived")
        return verdict

    def _grace(self, seconds: float) -> None:
        """Spin a little more: the truth of the last ticks, the last frames, a sign the stream lives.

        A wait-set executor, never a second EventsExecutor: a message whose arrival event the
        run's executor had queued but not served when it was shut down stays in its reader,
        announced to no one, and only a wait set still sees it (the last tick's truth, lost
        that way, was reported as a slot without ground truth)."""
        executor = SingleThreadedExecutor()
        executor.add_node(self)
        try:
            deadline = time.monotonic() + seconds
            while not self.recording.caught_up() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.02)
        finally:
            executor.remove_node(self)
            executor.shutdown(timeout_sec=0)

    def _close_bag(self) -> None:
        if self.bag is None:
            return
        try:
            if self.recording is not None:
                self.bag.write_string(self.resolve_topic_name(NOTES_TOPIC), json.dumps(self._notes()),
                                      log_time_ns=time.time_ns())
        finally:
            self.bag.close()
            print(f"bag: {self.args.record} (mcap)", flush=True)

    def _notes(self) -> dict:
        """What a bag cannot show by itself: from where frames were judged, whether skips were reported,
        which cameras started late (wall times of matches are in no message)."""
        rec = self.recording
        ev = rec.frame_evidence()
        return {"ended_by": rec.ended_by, "end_time_ns": rec.ended_wall_ns,
                "alive_after_end": {topic: a.after_end > 0 for topic, a in rec.activity.items()},
                "skips_reported": ev.skips_reported, "frames_judged_from_ns": dict(ev.judged_from_ns),
                "speed": ev.speed, "cameras_started_late": dict(ev.late_starts)}


def _ignore_further_signals() -> None:
    """The work is done: a late Ctrl-C must not turn a clean exit into "killed by SIGINT".

    Python restores the default handlers while it finalises (which takes a while with rclpy
    loaded), so a second SIGINT then would kill the process; ignored signals stay ignored.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _type_name(msg_type) -> str:
    module = msg_type.__module__.split(".")[0]
    return f"{module}/msg/{msg_type.__name__}"
