"""ROS 2 node ``robogym_recorder``: store what arrives, prove it against ground truth.

    ros2 run robogym_ros robogym_recorder [--duration S | --ticks N] [--record BAG] [--json F]
    ros2 run robogym_ros robogym_recorder --bag BAG [--json F]        # offline, no ROS graph

Live: waits for the sim's latched ``robogym_sim/spec`` (joint names, control dt, topics),
subscribes RELIABLE to joint_states, ground truth, cameras, the sim's skipped-frame reports
and run state, copies every message into preallocated rings (joint_states and ground truth
raw: their CDR bytes decoded straight into the rings, no message objects; a malformed one is
a finding), and at the end (duration,
ticks, Ctrl-C or SIGTERM) prints the verdict. ``--record`` writes the received bytes as they
came (raw CDR) into an mcap bag, finalised in every case. Exit code: 0 pass, 1 fail, 2 usage
error or no data.
"""
from __future__ import annotations

import signal

from robogym_ros.nodes import entry

if __name__ == "__main__":  # run as a module: a signal while importing rclpy is noted, as with
    entry.note_signals()  # the console script; the process then ends quietly (robogym_ros.nodes.entry)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

from robogym_ros import checks, contract  # noqa: E402
from robogym_ros.checks import clip  # noqa: E402
from robogym_ros.contract import CameraSpec, JointSpec, Spec  # noqa: E402
from robogym_ros.nodes.qos import DIAGNOSTICS_QOS, SPEC_QOS, STATE_QOS, STREAM_QOS  # noqa: E402
from robogym_ros.nodes.spin import StoppableNode, events_executor, run_node  # noqa: E402
from robogym_ros.recorder.bagio import BagError, BagWriter, UndecodableBag, align_truth, read_bag  # noqa: E402
from robogym_ros.recorder.decoding import decoding_result  # noqa: E402
from robogym_ros.recorder.recording import (  # noqa: E402
    GROUND_TRUTH,
    JOINT_STATES,
    Recording,
    offline_frame_evidence,
    silence_s,
    verdict_results,
)
from robogym_ros.recorder.ring import recording_bytes  # noqa: E402
from robogym_ros.recorder.schedules import SpecChange  # noqa: E402
from robogym_ros.recorder.verdict import EXIT_USAGE, Verdict  # noqa: E402

TITLE = "robogym_recorder verdict"
# Deep enough that a 1 kHz stream survives a 0.5 s stall of this process without a loss.
RECORD_QOS = QoSProfile(depth=1000, reliability=STREAM_QOS.reliability)
GRACE_S = 1.0  # after the end, how long to wait for the truth of the last ticks and the last frames
POLL_S = 0.05  # how often the node looks at the clock, the spec timeout and publisher counts
MEMORY_SHARE = 0.5  # the rings may take at most this share of the memory available now
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
        need = recording_bytes(self.args.capacity, len(spec.joints), self.args.keep_pixels_mb)
        if need > MEMORY_SHARE * available_memory_bytes():
            self.request_stop(EXIT_USAGE, memory_error(self.args.capacity, len(spec.joints), need))
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
            if self.bag is not None:
                self._subscribe(cam.info_topic, CameraInfo, None)
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
        from robogym_ros.recorder.report import ReportData, frames_from_ring
        rec = self.recording
        if rec is None:
            return None
        return ReportData.from_snapshots(rec.spec, rec.joints.snapshot(), rec.truth.snapshot(),
                                         grid_stamps_ns=np.frombuffer(rec.joint_stamps, np.int64),
                                         frames=frames_from_ring(rec.images))

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
        """Spin a little more: the truth of the last ticks, the last frames, a sign the stream lives."""
        executor = events_executor()
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
        """What a bag cannot show by itself: from where frames were judged, whether skips were reported."""
        rec = self.recording
        ev = rec.frame_evidence()
        return {"ended_by": rec.ended_by, "end_time_ns": rec.ended_wall_ns,
                "alive_after_end": {topic: a.after_end > 0 for topic, a in rec.activity.items()},
                "skips_reported": ev.skips_reported, "frames_judged_from_ns": dict(ev.judged_from_ns),
                "speed": ev.speed}


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


def write_report_of(folder: str, verdict: Verdict, data, diagnostics=None) -> int:
    """Write report.html (matplotlib, imported only now: it costs start-up time); the exit code,
    2 if the report cannot be written. ``data`` is a ReportData or a callable that makes one."""
    from robogym_ros.recorder.report import write_report
    try:
        report = write_report(folder, verdict, data() if callable(data) else data, diagnostics=diagnostics)
    except (OSError, ValueError) as exc:
        print(f"robogym_recorder: cannot write --report {clip(folder, 200)}: {clip(exc, 300)}", file=sys.stderr,
              flush=True)
        return EXIT_USAGE
    print(f"report: {report.html}", flush=True)
    return verdict.exit_code


def write_json(verdict: Verdict, path: str | None) -> int:
    """Write the verdict JSON (if asked); the exit code, 2 if the file cannot be written."""
    if not path:
        return verdict.exit_code
    try:
        Path(path).write_text(verdict.to_json())
    except OSError as exc:
        print(f"robogym_recorder: cannot write --json {clip(path, 200)}: {exc.strerror or exc}", file=sys.stderr,
              flush=True)
        return EXIT_USAGE
    return verdict.exit_code


# ----------------------------------------------------------------------------- arguments

def available_memory_bytes() -> int:
    """Memory available to a new allocation now (MemAvailable), or the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - exotic platforms
        return 2 ** 40


def memory_error(capacity: int, n_joints: int, need: int) -> str:
    return (f"--capacity {capacity} needs {need / 2**30:.1f} GiB of rings for {n_joints} joints; this machine has "
            f"{available_memory_bytes() / 2**30:.1f} GiB available (at most {MEMORY_SHARE:.0%} is used): lower "
            f"--capacity")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, bounded: a 5 MB argument is not echoed back
        self.exit(EXIT_USAGE, f"{self.prog}: error: {clip(message, 300)}\n")


def _number(kind: str, *, integer: bool = False, minimum: float = 0.0, inclusive: bool = False):
    def parse(text: str):
        shown = clip(repr(text), 40)
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{kind}, got {shown}") from None
        if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"{kind}, got {shown}")
        if integer:
            if value != int(value):
                raise argparse.ArgumentTypeError(f"{kind}, got {shown}")
            return int(value)
        return value
    return parse


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="robogym_recorder", description=__doc__.split("\n\n")[0])
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--duration", type=_number("a finite number of seconds > 0"),
                      help="record this long after the spec arrives [s]")
    stop.add_argument("--ticks", type=_number("a whole number > 0", integer=True),
                      help="stop after this many joint_states")
    parser.add_argument("--record", metavar="BAG", help="write what is received to this mcap bag")
    parser.add_argument("--bag", metavar="BAG", help="offline: check a bag (mcap or sqlite3)")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON")
    parser.add_argument("--report", metavar="DIR", help="also write report.html with plots into this folder")
    parser.add_argument("--capacity", type=_number("a whole number > 0", integer=True), default=120_000,
                        help="ring slots for joint_states and truth each (20 min at 100 Hz)")
    parser.add_argument("--keep-pixels-mb", type=_number("a finite number >= 0", inclusive=True), default=0.0,
                        help="keep the newest image pixels up to this budget (default: digests only)")
    parser.add_argument("--spec-timeout", type=_number("a finite number of seconds > 0"), default=15.0,
                        help="give up if the sim's spec has not arrived after this long [s]")
    args = parser.parse_args(argv)
    if args.bag and (args.record or args.duration is not None or args.ticks is not None):
        parser.error("--bag checks a recording offline; it takes no --record/--duration/--ticks")
    if args.record:
        problem = _unwritable_new_path(args.record)
        if problem:
            parser.error(f"--record {clip(args.record, 200)}: {problem}")
    if args.json:
        problem = _unwritable_file(args.json)
        if problem:
            parser.error(f"--json {clip(args.json, 200)}: {problem}")
    if args.report:
        problem = _unwritable_folder(args.report)
        if problem:
            parser.error(f"--report {clip(args.report, 200)}: {problem}")
    if not args.bag:
        # The rings are allocated once the spec names the joints; one joint is the least they need.
        need = recording_bytes(args.capacity, 1, args.keep_pixels_mb)
        if need > MEMORY_SHARE * available_memory_bytes():
            parser.error(memory_error(args.capacity, 1, need))
    return args


def _unwritable_folder(path: str) -> str | None:
    """Why a report folder cannot be written (it may exist; it is created if not), or None."""
    p = Path(path)
    try:
        if p.exists():
            return None if p.is_dir() and os.access(p, os.W_OK | os.X_OK) else "is not a writable folder"
        return _unwritable_new_path(path)
    except OSError as exc:
        return exc.strerror or str(exc)


def _unwritable_new_path(path: str) -> str | None:
    p = Path(path)
    try:
        if p.exists():
            return "exists already; a bag is never overwritten"
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            return f"folder {clip(str(parent), 200)} does not exist"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"folder {clip(str(parent), 200)} is not writable"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _unwritable_file(path: str) -> str | None:
    """None if ``path`` can be written; tried for real (created and removed if it was not there)."""
    p = Path(path)
    try:
        if p.is_dir():
            return "is a folder"
        existed = p.exists()
        with open(p, "a"):
            pass
        if not existed:
            p.unlink()
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    return None


# ----------------------------------------------------------------------------- offline

def check_bag(path: str) -> Verdict:
    try:
        data = read_bag(path, recover=True)
    except UndecodableBag as exc:  # joint_states came, none decodes: a fault in the data, not a usage error
        return Verdict([decoding_result({}, exc.malformed)], title=f"{TITLE} ({clip(path)})",
                       notes=[f"{exc}: no other check could run"])
    except BagError as exc:
        return Verdict.from_usage_error(str(exc), title=TITLE)
    notes = []
    if data.recovery is not None:
        notes.append(data.recovery.describe(path))
    decoding = decoding_result(data.decoded, data.malformed)
    if data.ground_truth is None and data.malformed:
        return Verdict([decoding], title=f"{TITLE} ({clip(path)})",
                       notes=notes + ["no ground truth could be decoded: no other check could run"])
    if data.ground_truth is None:
        return Verdict.from_usage_error(
            f"{clip(path)}: no ground_truth/joint_states topic, nothing to prove the data against; "
            f"the bag has: {', '.join(sorted(clip(t, 80) for t in data.topics)[:20])}", title=TITLE, notes=notes)
    js = data.joint_states
    try:
        gt = align_truth(js, data.ground_truth)
        spec = data.spec or spec_from_stamps(js.names, js.stamp_ns, data.images)
        if data.spec is not None and sorted(data.spec.joint_names) != sorted(js.names):
            raise BagError(f"the spec names other joints than {js.topic}: "
                           f"{len(data.spec.joint_names)} vs {len(js.names)} ({clip(data.spec.joint_names, 200)} vs "
                           f"{clip(list(js.names), 200)})")
    except BagError as exc:
        return Verdict.from_usage_error(f"{clip(path)}: {exc}", title=TITLE, notes=notes)
    if tuple(spec.joint_names) != js.names:
        spec = _with_joint_order(spec, js.names)
    frames = _offline_frames(data, spec) if spec.cameras and not spec.inferred else None
    results, more = verdict_results(js.stamp_ns, js.position, js.velocity, gt.stamp_ns, gt.position,
                                    gt.velocity, spec, images=data.images, frames=frames, with_notes=True)
    results.append(_offline_stream_end(data, spec))
    results.append(decoding)
    return Verdict(results, title=f"{TITLE} ({clip(path)})", notes=notes + more)


def _with_joint_order(spec: Spec, names) -> Spec:
    from dataclasses import replace
    by_name = {j.name: j for j in spec.joints}
    return replace(spec, joints=tuple(by_name[n] for n in names))


def _offline_frames(data, spec: Spec):
    """Frame evidence from a bag: the recorder's own notes when it wrote the bag, else a settle margin."""
    evidence = offline_frame_evidence(spec, data.images, data.camera_skips)
    history = _spec_history(data)
    if data.recorder_notes is not None:
        try:
            notes = json.loads(data.recorder_notes[1])
            judged = {k: (None if v is None else int(v)) for k, v in notes.get("frames_judged_from_ns", {}).items()}
            from dataclasses import replace
            return replace(evidence, judged_from_ns={**evidence.judged_from_ns, **judged}, history=history,
                           skips_reported=bool(notes.get("skips_reported", evidence.skips_reported)),
                           speed=float(notes.get("speed", 1.0)))
        except (ValueError, TypeError, AttributeError):
            pass
    from dataclasses import replace
    return replace(evidence, history=history)


def _spec_history(data) -> list[SpecChange]:
    """The specs in force in the bag's last sim run: live changes noticed at the newest joint stamp logged."""
    history: list[SpecChange] = []
    js = data.joint_states
    for log_ns, spec in data.specs:
        if history and spec.instance and spec.instance == history[-1].spec.instance:
            if spec != history[-1].spec:
                before = js.stamp_ns[js.log_time_ns <= log_ns]
                history.append(SpecChange(int(before.max()) if len(before) else None, spec))
        else:
            history = [SpecChange(None, spec)]
    return history or [SpecChange(None, data.spec)]


def _offline_stream_end(data, spec: Spec) -> checks.CheckResult:
    """Stream stops seen in a bag: the end is the recorder's end note, else the bag's newest message."""
    notes = {}
    if data.recorder_notes is not None:
        try:
            notes = json.loads(data.recorder_notes[1])
        except ValueError:
            notes = {}
    end_ns = notes.get("end_time_ns") or data.end_log_time_ns
    alive = notes.get("alive_after_end", {})
    start_ns = int(data.joint_states.log_time_ns.min())
    streams = []
    for topic, series in (("joint_states", data.joint_states), ("ground_truth/joint_states", data.ground_truth)):
        last_s = (int(series.log_time_ns.max()) - start_ns) / 1e9
        streams.append(checks.StreamActivity(topic, len(series), int(series.stamp_ns[-1]), last_s,
                                             max(last_s, (int(end_ns) - start_ns) / 1e9),
                                             bool(alive.get(topic, False))))
    states = []
    for _, text in data.run_states:
        try:
            s = contract.RunState.from_json(text)
        except ValueError:
            continue
        states.append(checks.RunStateReport(s.paused, s.stamp_ns, s.reason))
    return checks.check_stream_end(streams, states, silence_s=silence_s(spec))


def spec_from_stamps(names, stamps_ns, images) -> Spec:
    """A bag from ``ros2 bag record`` without the spec topic: the control dt from the stamps."""
    diffs = np.diff(np.unique(np.asarray(stamps_ns, np.int64)))
    return Spec(joints=tuple(JointSpec(n) for n in names),
                control_dt_ns=int(np.median(diffs)) if len(diffs) and np.median(diffs) > 0 else 1,
                cameras=tuple(CameraSpec(c) for c in sorted({im.camera for im in images})),
                inferred=True)


def run_offline(args: argparse.Namespace) -> int:
    try:
        verdict = check_bag(args.bag)
    except KeyboardInterrupt:
        print("robogym_recorder: interrupted while reading the bag; no verdict", file=sys.stderr, flush=True)
        return EXIT_USAGE
    print(verdict.table(), flush=True)
    code = write_json(verdict, args.json)
    if args.report:
        code = max(code, write_report_of(args.report, verdict, lambda: _bag_report_data(args.bag)))
    return code


def _bag_report_data(path: str):
    """The arrays a report draws, from a bag (None when the bag has no ground truth to draw)."""
    from robogym_ros.recorder.report import ReportData, frames_from_bag
    try:
        data = read_bag(path, recover=True)
        js = data.joint_states
        spec = data.spec or spec_from_stamps(js.names, js.stamp_ns, data.images)
        if data.ground_truth is None:
            return None
        data = dataclasses.replace(data, ground_truth=align_truth(js, data.ground_truth))
        return ReportData.from_bag(data, spec, frames=frames_from_bag(path, data.images))
    except (BagError, ValueError):
        return None  # the verdict already says what is wrong with the bag


def main(argv=None) -> int:
    argv = sys.argv if argv is None else argv
    user_args = rclpy.utilities.remove_ros_args(argv)[1:]
    try:
        args = parse_args(user_args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.bag:
        return run_offline(args)
    return run_node(lambda: RecorderNode(args), argv, errors=(ValueError, OSError, BagError),
                    executor_factory=events_executor)


if __name__ == "__main__":
    sys.exit(EXIT_USAGE if entry.received() else main())
