"""MoveIt-ready arms: one FollowJointTrajectory action server per arm and per gripper, with
ros2_control JointTrajectoryController (JTC) semantics, where control_msgs is installed.

Each controller is a node of its own, named as ros2_control names a controller's node, in the
sim's namespace: ``<ns>/left_arm_controller`` serves ``<ns>/left_arm_controller/follow_joint_trajectory``
and publishes ``<ns>/left_arm_controller/controller_state``. The grippers are controllers of
their own (``left_gripper_controller``): MoveIt plans an arm group without its end effector's
joint and hands each controller the joints it owns, so a controller for arm + gripper would
get partial goals. Goals are checked by robogym_ros.nodes.sim_node.arm_controllers.goal, followed by the physics
with the topic's interpolation (one follower: robogym_ros.sim.trajectory_follower) and judged
tick by tick on the pump thread by robogym_ros.nodes.sim_node.arm_controllers.monitor, on sim time: a pause freezes
a goal, a reset aborts it, real_time_factor 0 runs it as fast as the sim goes.

Execute callbacks block until their goal ends, so the controllers spin in a
MultiThreadedExecutor of their own (rclpy's executors spin busily on an awaiting coroutine).
The pump thread never calls into the physics process (that could deadlock on a full tick pipe):
holds are sent from the goal's own thread.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

from robogym_ros.contract import QosSpec
from robogym_ros.nodes.sim_node.arm_controllers.goal import INVALID_GOAL, SUCCESSFUL, GoalRejected, validate_goal
from robogym_ros.nodes.sim_node.arm_controllers.monitor import ABORTED, CANCELED, SUCCEEDED, GoalMonitor, Outcome
from robogym_ros.ros.qos import profile
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.sim.physics import ctrl_columns
from robogym_ros.sim.tick import Tick
from robogym_ros.task.scene import ARM_JOINTS, SIDES

try:
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTrajectoryControllerState
    UNAVAILABLE = ""
except ImportError as exc:  # no wheel on PyPI: a pip-only install has none
    FollowJointTrajectory = JointTrajectoryControllerState = None
    UNAVAILABLE = (f"control_msgs is not installed ({exc}): no FollowJointTrajectory action servers; install "
                   "ROS 2's control_msgs (ros-<distro>-control-msgs) for MoveIt")

ACTION = "follow_joint_trajectory"  # <controller>/follow_joint_trajectory, as JTC names it
ACTION_TYPE = "control_msgs/action/FollowJointTrajectory"
STATE_TOPIC = "controller_state"
STATE_TYPE = "control_msgs/msg/JointTrajectoryControllerState"
STATE_PERIOD_NS = 20_000_000  # controller_state every 20 ms of sim time (50 Hz at real_time_factor 1)
STATE_QOS = QosSpec(depth=10)
FEEDBACK_QOS = QosSpec(depth=1000)  # a feedback per tick: 10 s of it at 100 Hz, 1,000 ticks at real_time_factor 0
CANCEL_WAIT_S = 1.0  # for rclpy to move a cancelled goal to CANCELING after the cancel callback
HOLD_WAIT_S = 1.0  # for the tick that holds the joints to be published (a slow sim: the result goes anyway)


def to_canceling(goal_handle) -> None:
    """EXECUTING -> CANCELING for a goal no client asked to cancel (a preempted one), so that it can
    end CANCELED as JTC's preempted goals do. rclpy has no public call for it (only a client's
    cancel request takes a goal there); rclcpp's ServerGoalHandle does this step itself."""
    if not goal_handle.is_cancel_requested:
        try:
            goal_handle._update_state(_rclpy.GoalEvent.CANCEL_GOAL)  # noqa: SLF001 - see the docstring
        except Exception:  # noqa: BLE001 - a client's cancel got there first: CANCELING already
            pass


def controller_joints(joint_names) -> dict[str, tuple[str, ...]]:
    """The controllers a model gets: per side, the arm (its joints but the gripper) and the gripper."""
    names = set(joint_names)
    out = {}
    for side in SIDES:
        arm = tuple(f"{side}_{j}" for j in ARM_JOINTS if j != "gripper")
        if set(arm) <= names:
            out[f"{side}_arm_controller"] = arm
        if f"{side}_gripper" in names:
            out[f"{side}_gripper_controller"] = (f"{side}_gripper",)
    return out


class _Running:
    """An accepted goal, from its acceptance on: its joints, its monitor once the sim has taken it
    up, the ticks that came before that, and how it ended (set once, from any thread)."""

    def __init__(self, goal_handle, names: tuple[str, ...], columns: np.ndarray):
        self.goal_handle = goal_handle
        self.names = names  # the joints it moves (a cancel or a preemption holds or frees these)
        self.columns = columns  # those joints in the sim's joint order
        self.monitor: GoalMonitor | None = None
        # Ticks published while the sim took the goal up but before its monitor existed: at
        # real_time_factor 0 physics runs on meanwhile, and each of them needs its feedback.
        self.backlog: list[tuple[Tick, np.ndarray]] = []
        self.outcome: Outcome | None = None
        self.event = threading.Event()
        self._lock = threading.Lock()

    def finish(self, outcome: Outcome) -> bool:
        with self._lock:
            if self.outcome is not None:
                return False
            self.outcome = outcome
        self.event.set()
        return True


class ArmController:
    """One controller: its node, action server and controller_state publisher."""

    def __init__(self, name: str, sim_node, joints: tuple[str, ...], owner: "ArmControllers"):
        self.name, self.joints, self.owner = name, joints, owner
        self.columns = np.array([owner.joint_names.index(j) for j in joints], dtype=np.int64)
        # Global arguments (a launch file's __node remap) must not rename this node to the sim's name.
        self.node = rclpy.create_node(name, namespace=sim_node.get_namespace(), context=sim_node.context,
                                      use_global_arguments=False, start_parameter_services=False)
        self.server = ActionServer(
            self.node, FollowJointTrajectory, f"{name}/{ACTION}", execute_callback=self._execute,
            goal_callback=lambda _request: GoalResponse.ACCEPT, cancel_callback=self._on_cancel,
            callback_group=ReentrantCallbackGroup(), feedback_pub_qos_profile=profile(FEEDBACK_QOS))
        self.pub_state = self.node.create_publisher(JointTrajectoryControllerState, f"{name}/{STATE_TOPIC}",
                                                    profile(STATE_QOS))
        self._active: _Running | None = None
        self._goals: dict[bytes, _Running] = {}  # accepted and not yet ended, by goal id
        self._goals_lock = threading.Lock()
        self._ticks_lock = threading.Lock()  # the pump's judging of a tick against the goal's start
        self._submit = threading.Lock()  # one goal at a time takes over the controller
        self._next_state_ns = 0

    # --- executor threads ------------------------------------------------------------------
    def _running(self, goal_handle) -> _Running:
        """The goal's record, made by whichever comes first: its execution or a cancel of it."""
        key = bytes(goal_handle.goal_id.uuid)
        with self._goals_lock:
            running = self._goals.get(key)
            if running is None:
                names = tuple(n for n in goal_handle.request.trajectory.joint_names if n in self.joints)
                columns = np.array([self.owner.joint_names.index(j) for j in names], dtype=np.int64)
                running = self._goals[key] = _Running(goal_handle, names, columns)
            return running

    def _execute(self, goal_handle):
        o = self.owner
        running = self._running(goal_handle)
        try:
            goal = validate_goal(goal_handle.request, self.name, self.joints, o.ranges, o.now_ns())
        except GoalRejected as exc:
            self._forget(running)
            self.node.get_logger().warning(f"goal rejected: {exc}")
            goal_handle.abort()
            return FollowJointTrajectory.Result(error_code=exc.code, error_string=str(exc))
        running.names = tuple(goal.joint_names)  # before the goal is active: the pump reads them then
        running.columns = np.array([o.joint_names.index(j) for j in goal.joint_names], dtype=np.int64)
        with self._submit:
            if running.outcome is None:  # not cancelled while it was validated
                self.preempt(f"preempted by a new goal for {self.name}")  # JTC: the old goal ends at once
                self._active = running  # from here on its ticks are kept until the monitor exists
                take_up_ns, episode = o.sim.set_trajectory(goal.command, wait=True)
                units = tuple(o.units[j] for j in goal.joint_names)
                self._begin(running, GoalMonitor(goal, take_up_ns, episode, units))
        while not running.event.wait(0.05):
            if o.closing:
                running.finish(Outcome(ABORTED, INVALID_GOAL, "the sim is shutting down"))
        return self._end(running)

    def _begin(self, running: _Running, monitor: GoalMonitor) -> None:
        """The goal's monitor takes over, first judging the ticks that came while it was made."""
        with self._ticks_lock:
            running.monitor = monitor
            backlog, running.backlog = running.backlog, []
            for tick, desired in backlog:
                self._judge(running, tick, desired)

    def _forget(self, running: _Running) -> None:
        with self._goals_lock:
            self._goals.pop(bytes(running.goal_handle.goal_id.uuid), None)

    def _end(self, running: _Running):
        outcome = running.outcome
        with self._submit:
            if self._active is running:
                self._active = None
        self._forget(running)
        if outcome.hold and not self.owner.closing and running.names:
            self.owner.hold(running.names)
        gh = running.goal_handle
        if outcome.status == CANCELED:
            if outcome.cancel_requested:  # rclpy moves it to CANCELING after _on_cancel
                deadline = time.monotonic() + CANCEL_WAIT_S
                while not gh.is_cancel_requested and time.monotonic() < deadline:
                    time.sleep(0.005)
            else:
                to_canceling(gh)
            gh.canceled()
        elif outcome.status == SUCCEEDED:
            gh.succeed()
        else:
            gh.abort()
        if outcome.status == SUCCEEDED:  # two call sites: rclpy fixes a call site's severity
            self.node.get_logger().info(f"goal succeeded: {outcome.message}")
        else:
            self.node.get_logger().warning(f"goal {outcome.status}: {outcome.message}")
        return FollowJointTrajectory.Result(error_code=outcome.code, error_string=outcome.message)

    def _on_cancel(self, goal_handle):
        """JTC accepts a cancel of any goal it accepted, at every moment until the goal ends: one
        cancelled while it was validated or handed to the sim ends CANCELED too, held where it is."""
        running = self._running(goal_handle)
        if running.finish(Outcome(CANCELED, SUCCESSFUL,  # JTC's cancelled result carries code 0 too
                                  "cancelled: holding the current position", hold=True, cancel_requested=True)):
            return CancelResponse.ACCEPT
        return CancelResponse.REJECT  # it had ended already

    def preempt(self, reason: str, names=None) -> None:
        """End the running goal (if it moves any of ``names``; None: any) without a hold: something
        newer drives its joints. CANCELED with INVALID_GOAL and the reason, as JTC's
        preempt_active_goal() ends a goal a new one replaces: MoveIt tells a preempted goal
        (canceled) from a failed one (aborted)."""
        running = self._active
        if running is not None and (names is None or set(names) & set(running.names)):
            running.finish(Outcome(CANCELED, INVALID_GOAL, reason))

    def moves_any_of(self, names) -> tuple[str, ...]:
        """Which of ``names`` the running goal moves (none without a goal)."""
        running = self._active
        return () if running is None else tuple(n for n in running.names if n in set(names))

    def shut_down(self) -> None:
        """End the running goal, aborted: the sim is shutting down."""
        running = self._active
        if running is not None:
            running.finish(Outcome(ABORTED, INVALID_GOAL, "the sim is shutting down"))

    # --- pump thread ---------------------------------------------------------------------
    def on_tick(self, tick: Tick, desired: np.ndarray) -> None:
        running = self._active
        if running is not None and running.outcome is None:
            with self._ticks_lock:
                if running.monitor is None:
                    running.backlog.append((tick, desired))
                else:
                    self._judge(running, tick, desired)
        if tick.stamp_ns >= self._next_state_ns:
            self._next_state_ns = tick.stamp_ns - tick.stamp_ns % STATE_PERIOD_NS + STATE_PERIOD_NS
            if self.pub_state.get_subscription_count():
                self._publish_state(tick, desired)

    def _judge(self, running: _Running, tick: Tick, desired: np.ndarray) -> None:
        """One tick of the goal: feedback, and its end where the monitor says so."""
        if running.outcome is not None or not running.monitor.owns(tick.stamp_ns):
            return
        c = running.columns
        outcome = running.monitor.update(tick.stamp_ns, tick.episode, desired[c], tick.position[c],
                                         tick.velocity[c])
        if outcome is None or outcome.status == SUCCEEDED:  # JTC: feedback on the last tick too
            self._feedback(running, tick, desired)
        if outcome is not None:
            running.finish(outcome)

    def _feedback(self, running: _Running, tick: Tick, desired: np.ndarray) -> None:
        c = running.columns
        fb = FollowJointTrajectory.Feedback()
        fb.header.stamp = stamp_msg(tick.stamp_ns)
        fb.joint_names = list(running.monitor.names)
        fb.desired.positions = desired[c].tolist()
        fb.actual.positions = tick.position[c].tolist()
        fb.actual.velocities = tick.velocity[c].tolist()
        fb.error.positions = (desired[c] - tick.position[c]).tolist()
        fb.index = running.monitor.index(tick.stamp_ns)
        running.goal_handle.publish_feedback(fb)

    def _publish_state(self, tick: Tick, desired: np.ndarray) -> None:
        c = self.columns
        msg = JointTrajectoryControllerState()
        msg.header.stamp = stamp_msg(tick.stamp_ns)
        msg.joint_names = list(self.joints)
        msg.reference.positions = desired[c].tolist()  # the servo target in force, whoever set it
        msg.output.positions = desired[c].tolist()  # a position interface: the command is the reference
        msg.feedback.positions = tick.position[c].tolist()
        msg.feedback.velocities = tick.velocity[c].tolist()
        msg.error.positions = (desired[c] - tick.position[c]).tolist()
        msg.speed_scaling_factor = 1.0
        self.pub_state.publish(msg)

    def spec(self) -> dict:
        return {"action": self.node.resolve_topic_name(f"{self.name}/{ACTION}"), "type": ACTION_TYPE,
                "joints": list(self.joints),
                "controller_state": self.pub_state.topic_name, "controller_state_type": STATE_TYPE,
                "controller_state_period_s": STATE_PERIOD_NS * 1e-9}


class ArmControllers:
    """The sim's arm controllers, or none (``status`` says why) without control_msgs.

    Also the sim node's way to the physics for joint_commands and the joint_trajectory topic
    (:meth:`set_targets`, :meth:`set_trajectory`): a message for a goal's joints preempts it.
    """

    def __init__(self, sim_node, sim, joints, model_path: str):
        """``joints``: the physics' Joint descriptions (name, range, unit), in tick order."""
        self.sim = sim
        self.joint_names = [j.name for j in joints]
        self.ranges = {j.name: (j.lower, j.upper) for j in joints}
        self.units = {j.name: j.unit for j in joints}
        self.controllers: dict[str, ArmController] = {}
        self.closing = False
        self._latest: Tick | None = None
        self._ticked = threading.Condition()  # a hold waits for the tick that holds
        self._hold_waiters = 0
        # Held by the pump thread while it hands a tick to the controllers, and by close() while
        # it destroys them: a tick never reaches a controller whose publisher is gone.
        self._ticking = threading.Lock()
        self._thread = None
        table = controller_joints(self.joint_names)
        if UNAVAILABLE or not table:
            self.status = "unavailable: " + (UNAVAILABLE or "the model has no SO-101 arm joints")
            sim_node.get_logger().warning(f"arm controllers {self.status}")
            return
        self.status = ""
        self._desired_columns = ctrl_columns(model_path, self.joint_names)
        # a blocked execute per goal
        self.executor = MultiThreadedExecutor(num_threads=2 * len(table) + 2, context=sim_node.context)
        for name, names in table.items():
            self.controllers[name] = ArmController(name, sim_node, names, self)
            self.executor.add_node(self.controllers[name].node)
        self._thread = threading.Thread(target=self._spin, name="arm_controllers", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self.closing and self.executor.context.ok():
            self.executor.spin_once(timeout_sec=0.1)

    def now_ns(self) -> int:
        """The sim's time: the stamp of the latest tick."""
        tick = self._latest
        return tick.stamp_ns if tick is not None else 0

    def spec(self):
        """The spec's ``controllers``: name -> action, joints, state topic; or why there are none."""
        return self.status or {name: c.spec() for name, c in self.controllers.items()}

    def on_tick(self, tick: Tick) -> None:
        """Every tick, on the pump thread."""
        self._latest = tick
        if self._hold_waiters:
            with self._ticked:
                self._ticked.notify_all()
        with self._ticking:
            if self.controllers:
                desired = tick.state[self._desired_columns]
                for c in self.controllers.values():
                    c.on_tick(tick, desired)

    def hold(self, names) -> None:
        """Hold these joints where they are when the next tick starts (JTC's set_hold_position),
        and return once that tick is on the wire (or at once while paused: the next step holds),
        so that a client told the goal ended sees the hold from then on.

        The physics takes the positions (SimProcess.hold): the latest tick here is a tick or two
        behind a moving arm, and a hold there pulled the arm back by that much."""
        first = self.sim.hold(names, wait=True)
        if first is None:
            return
        with self._ticked:
            self._hold_waiters += 1  # set before the index is tested under the lock: none is missed
            try:
                self._ticked.wait_for(lambda: self._latest is not None and self._latest.index >= first, HOLD_WAIT_S)
            finally:
                self._hold_waiters -= 1

    # --- the node's commands, routed past the controllers -----------------------------------
    def set_targets(self, targets: dict[str, float]) -> None:
        self._preempt(targets, "joint_commands message")
        self.sim.set_targets(targets)

    def set_trajectory(self, command) -> None:
        self._preempt(command.joint_names, "joint_trajectory topic message")
        self.sim.set_trajectory(command)

    def _preempt(self, names, source: str) -> None:
        names = list(names)
        for c in self.controllers.values():
            shared = c.moves_any_of(names)
            if shared:
                c.preempt(f"preempted by a {source} for {', '.join(repr(n) for n in shared)}", names)

    def close(self) -> None:
        """End every goal (aborted: the sim is shutting down), stop spinning, destroy the nodes."""
        self.closing = True
        for c in self.controllers.values():
            c.shut_down()
        if self._thread is not None:
            self._thread.join(1.0)
            self.executor.shutdown(timeout_sec=1.0)
        with self._ticking:
            for c in self.controllers.values():
                c.server.destroy()
                c.node.destroy_node()
            self.controllers.clear()
