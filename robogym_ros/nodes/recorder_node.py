"""ROS 2 node ``robogym_recorder``: store what arrives, prove it against ground truth.

    ros2 run robogym_ros robogym_recorder [--duration S | --ticks N] [--record BAG] [--json F]
    ros2 run robogym_ros robogym_recorder --bag BAG [--json F]        # offline, no ROS graph

Live: waits for the sim's latched ``robogym_sim/spec`` (joint names, control dt, topics),
subscribes RELIABLE to joint_states, ground truth and cameras, copies every message into
preallocated rings, and at the end (duration, ticks, Ctrl-C or SIGTERM) prints the verdict.
``--record`` writes the received bytes as they came (raw CDR) into an mcap bag, finalised
in every case. Exit code: 0 pass, 1 fail, 2 usage error or no data.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import CameraInfo, Image, JointState
from geometry_msgs.msg import PoseArray
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import CameraSpec, JointSpec, Spec
from robogym_ros.nodes.qos import SPEC_QOS, STREAM_QOS
from robogym_ros.recorder.bagio import BagError, BagWriter, read_bag
from robogym_ros.recorder.recording import Recording, verdict_results
from robogym_ros.recorder.verdict import EXIT_USAGE, Verdict

TITLE = "robogym_recorder verdict"
# Deep enough that a 1 kHz stream survives a 0.5 s stall of this process without a loss.
RECORD_QOS = QoSProfile(depth=1000, reliability=STREAM_QOS.reliability)
TRUTH_GRACE_S = 1.0  # after stopping, how long to wait for the truth of the last ticks


def make_executor():
    try:  # ~3x less CPU per message than the SingleThreadedExecutor (measured here)
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    except ImportError:  # pragma: no cover - ROS distros before Jazzy
        from rclpy.executors import SingleThreadedExecutor
        return SingleThreadedExecutor()


class RecorderNode(Node):
    def __init__(self, args: argparse.Namespace, **kwargs):
        super().__init__("robogym_recorder", **kwargs)
        self.args = args
        self.recording: Recording | None = None
        self.bag: BagWriter | None = None
        self.spec_at: float | None = None
        self.received = 0
        self.storing = True  # everything, bag included
        self.taking_joints = True  # cleared first at the end, so truth can catch up
        self.spec_topic = self.resolve_topic_name(contract.SPEC_TOPIC)
        self.create_subscription(String, self.spec_topic, self._on_spec, SPEC_QOS)

    def _on_spec(self, msg: String) -> None:
        spec = Spec.from_json(msg.data)
        if self.recording is not None:  # a new latched spec: the sim restarted under us
            self.recording.spec_updates += 1
            self.get_logger().warning("the sim published a new spec: it restarted mid-run")
            return
        self.recording = Recording(spec, self.args.capacity,
                                   pixel_budget_bytes=int(self.args.keep_pixels_mb * 2**20))
        if self.args.record:
            self.bag = BagWriter(self.args.record)
            self.bag.write_raw(self.spec_topic, "std_msgs/msg/String", _cdr(msg), time.time_ns(),
                               latched=True)
        rec = self.recording
        self._subscribe(spec.topic("ground_truth_joints").name, JointState, rec.store_truth)
        self._subscribe(spec.topic("joint_states").name, JointState, self._on_joint_state)
        if self.bag is not None:
            self._subscribe(spec.topic("ground_truth_objects").name, PoseArray, None)
        for cam in spec.cameras:
            self._subscribe(cam.image_topic, Image, lambda m, name=cam.name: self._on_image(m, name))
            if self.bag is not None:
                self._subscribe(cam.info_topic, CameraInfo, None)
        self.spec_at = time.monotonic()
        self.get_logger().info(
            f"spec from {spec.node}: {len(rec.names)} joints, control dt "
            f"{spec.control_dt_s * 1e3:g} ms, {len(spec.cameras)} cameras"
            + (f"; recording to {self.args.record}" if self.bag else ""))

    def _subscribe(self, topic: str, msg_type, store) -> None:
        if self.bag is None:
            self.create_subscription(msg_type, topic, store, RECORD_QOS)
            return
        type_name = _type_name(msg_type)

        def on_raw(data: bytes) -> None:
            if not self.storing:
                return
            self.bag.write_raw(topic, type_name, data, self.get_clock().now().nanoseconds)
            if store is not None:
                store(deserialize_message(data, msg_type))
        self.create_subscription(msg_type, topic, on_raw, RECORD_QOS, raw=True)

    def _on_joint_state(self, msg: JointState) -> None:
        if self.storing and self.taking_joints:
            self.recording.store_joint_state(msg)
            self.received += 1

    def _on_image(self, msg: Image, camera: str) -> None:
        if self.storing:
            self.recording.store_image(msg, camera)

    def done(self) -> bool:
        a = self.args
        if self.spec_at is None:
            return False
        return ((a.duration is not None and time.monotonic() - self.spec_at >= a.duration)
                or (a.ticks is not None and self.received >= a.ticks))

    def truth_caught_up(self) -> bool:
        rec = self.recording
        return rec.last_truth_ns >= rec.last_joint_ns


def _type_name(msg_type) -> str:
    module = msg_type.__module__.split(".")[0]
    return f"{module}/msg/{msg_type.__name__}"


def _cdr(msg) -> bytes:
    from rclpy.serialization import serialize_message
    return serialize_message(msg)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="robogym_recorder", description=__doc__.split("\n\n")[0])
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--duration", type=float, help="record this long after the spec arrives [s]")
    stop.add_argument("--ticks", type=int, help="stop after this many joint_states")
    parser.add_argument("--record", metavar="BAG", help="write what is received to this mcap bag")
    parser.add_argument("--bag", metavar="BAG", help="offline: check a bag (mcap or sqlite3)")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON")
    parser.add_argument("--capacity", type=int, default=120_000,
                        help="ring slots for joint_states and truth each (20 min at 100 Hz)")
    parser.add_argument("--keep-pixels-mb", type=float, default=0.0,
                        help="keep the newest image pixels up to this budget (default: digests only)")
    parser.add_argument("--spec-timeout", type=float, default=15.0,
                        help="give up if the sim's spec has not arrived after this long [s]")
    args = parser.parse_args(argv)
    if args.bag and (args.record or args.duration is not None or args.ticks is not None):
        parser.error("--bag checks a recording offline; it takes no --record/--duration/--ticks")
    if args.record and Path(args.record).exists():
        parser.error(f"--record {args.record}: exists already; a bag is never overwritten")
    for name in ("duration", "ticks", "capacity", "spec_timeout"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0, got {value}")
    return args


def check_bag(path: str) -> Verdict:
    try:
        data = read_bag(path)
    except BagError as exc:
        return Verdict.from_usage_error(str(exc), title=TITLE)
    if data.ground_truth is None:
        return Verdict.from_usage_error(
            f"{path}: no ground_truth/joint_states topic, nothing to prove the data against; "
            f"the bag has: {', '.join(sorted(data.topics))}", title=TITLE)
    js, gt = data.joint_states, data.ground_truth
    spec = data.spec or spec_from_stamps(js.names, js.stamp_ns, data.images)
    results = verdict_results(js.stamp_ns, js.position, js.velocity, gt.stamp_ns, gt.position,
                              gt.velocity, spec, images=data.images)
    return Verdict(results, title=f"{TITLE} ({path})")


def spec_from_stamps(names, stamps_ns, images) -> Spec:
    """A bag from ``ros2 bag record`` without the spec topic: the control dt from the stamps."""
    diffs = np.diff(np.unique(np.asarray(stamps_ns, np.int64)))
    return Spec(joints=tuple(JointSpec(n) for n in names),
                control_dt_ns=int(np.median(diffs)) if len(diffs) else 1,
                cameras=tuple(CameraSpec(c) for c in sorted({im.camera for im in images})),
                inferred=True)


def run_live(args: argparse.Namespace, ros_args: list[str]) -> Verdict:
    rclpy.init(args=ros_args, signal_handler_options=SignalHandlerOptions.NO)
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signal.Signals(signum).name

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    node = RecorderNode(args)
    executor = make_executor()
    executor.add_node(node)
    try:
        started = time.monotonic()
        while stop["signal"] is None and not node.done():
            executor.spin_once(timeout_sec=0.05)
            if node.spec_at is None and time.monotonic() - started > args.spec_timeout:
                return Verdict.from_usage_error(
                    f"no spec on {node.spec_topic} within {args.spec_timeout:g} s: is robogym_sim "
                    f"running, on this ROS_DOMAIN_ID and namespace?", title=TITLE)
        if node.recording is None:
            return Verdict.from_usage_error(f"stopped by {stop['signal']} before the spec arrived",
                                            title=TITLE)
        # Freeze joint_states; let the truth of the last ticks arrive.
        node.taking_joints = False
        deadline = time.monotonic() + TRUTH_GRACE_S
        while not node.truth_caught_up() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
        node.storing = False
        return node.recording.verdict(title=TITLE)
    finally:
        if node.bag is not None:
            node.bag.close()
            print(f"bag: {args.record} (mcap)", flush=True)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def main(argv=None) -> int:
    argv = sys.argv if argv is None else argv
    ros_args = argv
    user_args = rclpy.utilities.remove_ros_args(argv)[1:]
    try:
        args = parse_args(user_args)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else 0
    verdict = check_bag(args.bag) if args.bag else run_live(args, ros_args)
    print(verdict.table(), flush=True)
    if args.json:
        Path(args.json).write_text(verdict.to_json())
    return verdict.exit_code


if __name__ == "__main__":
    sys.exit(main())
