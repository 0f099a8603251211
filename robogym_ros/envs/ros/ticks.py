"""What the env reads from a sim, taken by the env's own thread.

Lockstep needs one message per step or reset: its answer on ``robogym_sim/step_result``
(contract.StepResult), the record of the last tick in JSON, whose floats read back bit for
bit. Taking joint_states and object poses instead would cost two messages per tick, each a
wake-up of this process and of the sim's publisher (bench/bench_env.py). Real time takes the
ticks themselves: joint_states and object poses raw (serialized CDR, decoded only for the tick
returned, by robogym_ros.wire.cdr, proven equal to rclpy's deserialisation) and the run
states (blow-ups).

No executor sits in between: the caller waits on an rcl wait set of the subscriptions and
takes what arrived. An executor would run a Python callback per message on another thread,
then hand over to the caller (a lock and the GIL each time). The subscriptions belong to a
node that is never added to an executor, so nothing else takes their messages.
"""
from __future__ import annotations

import struct
import time
from collections import OrderedDict, deque
from typing import Callable, TypeVar

import numpy as np
from geometry_msgs.msg import PoseArray
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import RunState, StepResult
from robogym_ros.ros import qos
from robogym_ros.ros.sim_client import SimUnavailable
from robogym_ros.sim.tick import Tick
from robogym_ros.wire.decode import decode_joint_state, decode_pose_array

FRAMES_KEPT = 512  # stamps kept per stream while waiting for their partner; older are dropped
STATES_KEPT = 1024  # run states kept
_STAMP = struct.Struct("<iI")  # header.stamp, right after the 4-byte CDR encapsulation
T = TypeVar("T")


def _ignore(_msg) -> None:  # never called: nothing spins this node
    pass


class TickReader:
    """The sim's ticks and run states, taken when the caller waits for them."""

    def __init__(self, node, namespace: str, joint_names: list[str], control_dt_ns: int, *, ticks: bool):
        """``ticks``: take every tick and the run states too (real time), not only the answers."""
        ns = namespace
        self.joint_names = tuple(joint_names)
        self.control_dt_ns = control_dt_ns
        self._context = node.context
        self._results = node.create_subscription(String, f"{ns}/{contract.STEP_RESULT_TOPIC}", _ignore,
                                                 qos.profile(contract.STEP_RESULT_QOS))
        self._ticks = ()
        if ticks:
            self._ticks = (
                node.create_subscription(JointState, f"{ns}/{contract.JOINT_STATES}", _ignore, qos.STREAM_QOS,
                                         raw=True),
                node.create_subscription(PoseArray, f"{ns}/{contract.TRUTH_OBJECTS}", _ignore, qos.STREAM_QOS,
                                         raw=True),
                node.create_subscription(String, f"{ns}/{contract.STATE_TOPIC}", _ignore, qos.STATE_QOS),
            )
        self._subs = (self._results, *self._ticks)
        self.results: deque[StepResult] = deque(maxlen=STATES_KEPT)
        self.joints: OrderedDict[int, bytes] = OrderedDict()
        self.poses: OrderedDict[int, bytes] = OrderedDict()
        self.states: deque[RunState] = deque(maxlen=STATES_KEPT)
        self.error = ""  # the last message that could not be read, for timeout messages
        self._wait_set = _rclpy.WaitSet(len(self._subs), 0, 0, 0, 0, 0, self._context.handle)

    def matched(self) -> bool:
        """The sim's publishers are matched: from now on nothing is missed."""
        return all(sub.get_publisher_count() > 0 for sub in self._subs)

    # --- taking -------------------------------------------------------------------------------
    def _drain(self) -> None:
        self._take_json(self._results, StepResult, self.results)
        if not self._ticks:
            return
        joints, poses, states = self._ticks
        for sub, store in ((joints, self.joints), (poses, self.poses)):
            while (taken := sub.handle.take_message(sub.msg_type, True)) is not None:
                data = taken[0]
                sec, nanosec = _STAMP.unpack_from(data, 4)
                store[sec * contract.NS_PER_S + nanosec] = data
            while len(store) > FRAMES_KEPT:
                store.popitem(last=False)
        self._take_json(states, RunState, self.states)

    def _take_json(self, sub, cls, store: deque) -> None:
        while (taken := sub.handle.take_message(String, False)) is not None:
            try:
                store.append(cls.from_json(taken[0].data))
            except ValueError as exc:
                self.error = str(exc)

    def result(self, reasons: tuple[str, ...], **match) -> StepResult | None:
        """The first answer with one of ``reasons`` whose fields equal ``match`` (e.g. the
        ``stamp_ns`` a reset named, the ``from_stamp_ns`` of a step request); it is dropped,
        with every answer before it."""
        for i, r in enumerate(self.results):
            if r.reason in reasons and all(getattr(r, k) == v for k, v in match.items()):
                for _ in range(i + 1):
                    self.results.popleft()
                return r
        return None

    def result_tick(self, r: StepResult, *, episode: int) -> Tick:
        if len(r.position) != len(self.joint_names):
            raise RuntimeError(f"the sim's step result has {len(r.position)} joint positions for "
                               f"{len(self.joint_names)} joints")
        return Tick(index=r.stamp_ns // self.control_dt_ns, stamp_ns=r.stamp_ns, episode=episode,
                    position=np.array(r.position, dtype=np.float64), velocity=np.array(r.velocity, dtype=np.float64),
                    effort=np.array(r.effort, dtype=np.float64),
                    object_poses=np.array(r.object_poses, dtype=np.float64).reshape(-1, contract.POSE_SIZE),
                    state=np.empty(0), blew_up=r.blew_up)

    def wait(self, ready: Callable[[], T | None], timeout_s: float, what: Callable[[], str]) -> T:
        """``ready()`` once it is not None, checked after each batch of messages taken;
        SimUnavailable with ``what()`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        ws = self._wait_set
        while True:
            self._drain()
            result = ready()
            if result is not None:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                error = f" (last unreadable message: {self.error})" if self.error else ""
                raise SimUnavailable(what() + error)
            ws.clear_entities()
            for sub in self._subs:
                ws.add_subscription(sub.handle)
            ws.wait(int(remaining * 1e9))

    # --- frames -------------------------------------------------------------------------------
    def newest_frame(self) -> int | None:
        """Index of the newest tick with both of its messages here."""
        for stamp in reversed(self.joints):
            if stamp in self.poses:
                return stamp // self.control_dt_ns
        return None

    def frame(self, index: int, *, episode: int, blew_up: bool) -> Tick:
        """The tick ``index`` (both of its messages here), decoded; older frames are dropped."""
        stamp = index * self.control_dt_ns
        joints = decode_joint_state(self.joints[stamp])
        _, _, poses = decode_pose_array(self.poses[stamp])
        if joints.name != self.joint_names:
            raise RuntimeError(f"joint_states names {list(joints.name)} differ from the spec's "
                               f"{list(self.joint_names)}")
        return Tick(index=index, stamp_ns=stamp, episode=episode, position=joints.position,
                    velocity=joints.velocity, effort=joints.effort,
                    object_poses=np.ascontiguousarray(poses), state=np.empty(0), blew_up=blew_up)

    # --- run states ---------------------------------------------------------------------------
    def state(self, reasons: tuple[str, ...], after_ns: int, up_to_ns: int | None = None) -> RunState | None:
        """The first run state with one of ``reasons`` stamped after ``after_ns`` (and at most
        ``up_to_ns``); states arrive in the order the sim published them."""
        for s in self.states:
            if s.reason in reasons and s.stamp_ns > after_ns and (up_to_ns is None or s.stamp_ns <= up_to_ns):
                return s
        return None

    def forget_before(self, stamp_ns: int) -> None:
        """Drop the ticks and run states older than ``stamp_ns`` (a lookup scans what is kept)."""
        states = self.states
        while states and states[0].stamp_ns < stamp_ns:
            states.popleft()
        for store in (self.joints, self.poses):
            while store and next(iter(store)) < stamp_ns:
                store.popitem(last=False)

    def close(self) -> None:
        self._wait_set = None
