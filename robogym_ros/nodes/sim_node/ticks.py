"""The tick path of the sim node: a pump thread takes each tick from the physics process and
publishes it at once (joint_states, ground truth, the servo targets, /clock), then offers it to
the cameras.

The executor thread (commands, services, diagnostics) never sits between physics and topics.
Every message is built new for its tick (robogym_ros.nodes.sim_node.tick_messages): joint_states, ground
truth, targets, object poses and /clock as serialized bytes built from names and frame ids
encoded once.
"""
from __future__ import annotations

import threading
from typing import Callable

from geometry_msgs.msg import PoseArray
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from robogym_ros import contract
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.ros.qos import CLOCK_QOS, STREAM_QOS
from robogym_ros.sim.physics import ctrl_columns
from robogym_ros.sim.process import SimProcess
from robogym_ros.sim.tick import Tick

try:
    from rclpy._rclpy_pybind11 import RCLError
except ImportError:  # pragma: no cover - older rclpy
    RCLError = RuntimeError


class TickPublisher:
    """Publishes every tick; counts what it published and what the transport refused."""

    def __init__(self, node, sim: SimProcess, joint_names: list[str], model_path: str):
        self.joint_names = list(joint_names)
        # The targets come out of the tick's state vector, which holds MjData.ctrl as the tick
        # was published: no extra field crosses the process boundary.
        self._messages = tick_messages.TickMessages(self.joint_names, ctrl_columns(model_path, self.joint_names))
        self.pub_joints = node.create_publisher(JointState, contract.JOINT_STATES, STREAM_QOS)
        self.pub_truth = node.create_publisher(JointState, contract.TRUTH_JOINTS, STREAM_QOS)
        self.pub_targets = node.create_publisher(JointState, contract.TRUTH_TARGETS, STREAM_QOS)
        self.pub_objects = node.create_publisher(PoseArray, contract.TRUTH_OBJECTS, STREAM_QOS)
        self.pub_clock = node.create_publisher(Clock, contract.CLOCK, CLOCK_QOS)
        self.published = 0
        self.publish_errors = 0
        self._sim = sim
        self._published_index = -1
        self._cv = threading.Condition()
        self._waiters = 0  # wait_published callers; the pump takes the lock only for them
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, on_tick: Callable[[Tick], None], on_death: Callable[[], None]) -> None:
        """Pump ticks until close(); ``on_tick`` after each is published, ``on_death`` once if
        the physics process goes away."""
        self._thread = threading.Thread(target=self._pump, args=(on_tick, on_death),
                                        name="tick_pump", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def _pump(self, on_tick, on_death) -> None:
        # Blocks until the next tick: a wait with a timeout costs a poll per tick, ~1 % of a
        # core at 100 Hz. The pump ends when the physics process does (EOF), which is also
        # why it drains until then: a process blocked on a full tick pipe could not read its
        # stop request otherwise.
        while True:
            try:
                tick = self._sim.recv_tick(None)
            except (EOFError, OSError):
                if not self._stopping.is_set():
                    on_death()
                return
            self.publish(tick)
            on_tick(tick)

    def publish(self, tick: Tick) -> None:
        m = self._messages
        # joint_states and ground truth carry the same record of the tick: encoded once (new
        # bytes every tick); each publish hands DDS its own copy.
        joints = m.joint_states(tick)
        for pub, data in ((self.pub_joints, joints), (self.pub_truth, joints), (self.pub_targets, m.targets(tick)),
                          (self.pub_objects, m.object_poses(tick)), (self.pub_clock, m.clock(tick))):
            try:
                pub.publish(data)
            except RCLError:  # a full or closing transport: count it, keep the sim going
                self.publish_errors += 1
        self.published += 1
        self._published_index = tick.index
        if self._waiters:  # set before the index is tested under the lock: none is missed
            with self._cv:
                self._cv.notify_all()

    def wait_published(self, index: int, timeout_s: float = 5.0) -> None:
        """Return once tick ``index`` is on the wire (a caller may read it right away)."""
        with self._cv:
            self._waiters += 1
            try:
                if not self._cv.wait_for(lambda: self._published_index >= index, timeout_s):
                    raise TimeoutError(f"tick {index} was not published within {timeout_s:g} s")
            finally:
                self._waiters -= 1

    def stopping(self) -> None:
        """From now on the end of the tick stream is expected, not a death."""
        self._stopping.set()

    def close(self, timeout_s: float = 0.5) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout_s)
