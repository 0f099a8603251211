"""ROS 2 node ``robogym_expert``: the scripted handover expert against a running sim, on sim time.

It reads what the env observes, from the sim's topics: ``joint_states`` (positions) and
``ground_truth/object_poses`` (block, tray), acting on the newest tick whose two messages
have both come (never a pose of another tick: the block would seem off the jaws), and every
``command_period_s`` of sim time (the stamp of the joint_states it answers) publishes the
expert's targets: by default as a ``joint_trajectory`` stamped with that sim time, holding the
next ``trajectory_horizon_s`` of the expert's moves (its targets sampled every 20 ms), so the
arms move on smoothly while the node plans or its callbacks come late on a loaded machine;
``trajectory_horizon_s:=0`` publishes ``joint_commands`` (one target per command) instead. The
script's timing follows sim time whatever the real-time factor, and it stops when the sim
pauses. Each move starts at the command after the one that planned it: the sim runs on while
the expert plans, and a move started back then would jump (a flag of the expert,
HandoverExpert(start_moves_next_percept=True), never a measure of the wall clock).

Success is the env's own (robogym_ros.task.placement): the block inside the tray, resting,
touching no arm, at rest, from MuJoCo's contacts of the observed scene and the block's motion
between two commands. An episode ends once the block has stayed placed for
``success_hold_s`` after the expert is done (or has given up: its phase and reason are
logged), else ``SETTLE_TIMEOUT_S`` after that, or after ``episode_timeout_s`` of sim time; the
node logs the result. With
``episodes`` > 1 it then resets the sim (``robogym_sim/reset``, then ``resume``) and starts
the next one; with ``results_json`` it writes every episode's result there as it ends. After
its last episode it exits: 0 when every episode succeeded, 1 otherwise (``episodes:=0`` runs
until stopped).
"""
from __future__ import annotations

import json
import math
from collections import OrderedDict
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import PoseArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robogym_ros import contract
from robogym_ros.expert.percept import Percept
from robogym_ros.expert.policy import HandoverExpert
from robogym_ros.ros.node_runner import StoppableNode, run_node
from robogym_ros.ros.qos import COMMAND_QOS
from robogym_ros.ros.stamps import stamp_msg
from robogym_ros.task import scene
from robogym_ros.task.placement import PlacementJudge, goal_of_tray
from robogym_ros.task.scene import default_model_path

# A short queue: only the newest pair matters (a plan that takes long skips ticks, never queues them).
TICK_QOS = QoSProfile(depth=8, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
TICKS_KEPT = 16  # joint_states and object poses kept by stamp, to pair each tick's two messages
TRAJECTORY_STEP_NS = 20_000_000  # the trajectory's points: the expert's targets every 20 ms of sim time
SETTLE_TIMEOUT_S = 2.0  # after the expert is done, how long the block gets to come to rest placed
EXIT_ALL_SUCCEEDED = 0
EXIT_SOME_FAILED = 1


class ExpertNode(StoppableNode):
    """Runs HandoverExpert on the sim's topics and publishes its joint_commands."""

    def __init__(self, **kwargs):
        super().__init__("robogym_expert", **kwargs)

        def param(name, default, text):
            return self.declare_parameter(name, default, ParameterDescriptor(description=text)).value

        self.period_ns = round(float(param("command_period_s", 0.04, "period of joint_commands [s, sim time]"))
                               * contract.NS_PER_S)
        self.episodes = int(param("episodes", 1, "episodes to run, then exit (0 if all succeeded); 0 = until stopped"))
        # Over ROS in real time the sim runs on while the expert plans: on a loaded machine a plan
        # can take a second or two of sim time, so the limit is looser than local mode's 10 s.
        self.timeout_ns = round(float(param("episode_timeout_s", 40.0, "an episode's limit [s, sim time]"))
                                * contract.NS_PER_S)
        self.hold_ns = round(float(param("success_hold_s", 1.0, "success: the block placed this long after the "
                                                                 "expert is done [s, sim time]")) * contract.NS_PER_S)
        self.results_path = str(param("results_json", "", "write each episode's result here (JSON list)"))
        horizon_s = float(param("trajectory_horizon_s", 1.0, "send the next this much of the moves as a "
                                                             "joint_trajectory [s, sim time]; 0 = joint_commands"))
        if not 0.0 <= horizon_s <= 5.0:
            raise ValueError(f"trajectory_horizon_s must be in [0, 5] s, got {horizon_s}")
        self.horizon_points = int(round(horizon_s * contract.NS_PER_S / TRAJECTORY_STEP_NS))
        if self.period_ns <= 0 or self.timeout_ns <= 0 or self.hold_ns < 0 or self.episodes < 0:
            raise ValueError("command_period_s and episode_timeout_s must be > 0, success_hold_s >= 0, episodes >= 0")
        speed = float(param("speed_scale", 1.0, "the expert's pace (1 = local mode's); slower moves keep a "
                                                 "real-time run smooth when this node's callbacks come late"))
        if not 0.1 <= speed <= 2.0:
            raise ValueError(f"speed_scale must be in [0.1, 2], got {speed}")
        self.expert = HandoverExpert(speed_scale=speed, start_moves_next_percept=True)
        self.judge = PlacementJudge(default_model_path(), scene.JOINT_NAMES, scene.OBJECT_BODIES)
        self.results: list[dict] = []
        self._poses: OrderedDict[int, np.ndarray] = OrderedDict()  # stamp -> (objects, 7)
        self._joints: OrderedDict[int, np.ndarray] = OrderedDict()  # stamp -> 12 positions
        self._last_ns = None  # the tick acted on last
        self._start_ns = None
        self._next_ns = 0
        self._goal = None
        self._before = None  # (stamp, block pose) at the previous command
        self._done_ns = None
        self._placed_ns = None  # since when the block has been placed
        self._last = None  # the latest placement judged
        self._restarting = False
        self.pub = self.create_publisher(JointState, contract.JOINT_COMMANDS, COMMAND_QOS)
        self.trajectory_pub = self.create_publisher(JointTrajectory, contract.JOINT_TRAJECTORY, COMMAND_QOS)
        self.create_subscription(JointState, contract.JOINT_STATES, self._on_joints, TICK_QOS)
        self.create_subscription(PoseArray, contract.TRUTH_OBJECTS, self._on_objects, TICK_QOS)
        self._reset = self.create_client(Trigger, f"{contract.SIM_NODE}/reset")
        self._resume = self.create_client(Trigger, f"{contract.SIM_NODE}/resume")

    def _on_objects(self, msg: PoseArray) -> None:
        if self._restarting:
            return
        self._keep(self._poses, contract.header_stamp_ns(msg), np.array(
            [[p.position.x, p.position.y, p.position.z, p.orientation.w, p.orientation.x, p.orientation.y,
              p.orientation.z] for p in msg.poses]))
        self._act()

    def _on_joints(self, msg: JointState) -> None:
        if self._restarting:
            return
        by_name = dict(zip(msg.name, msg.position))
        try:
            q = np.array([by_name[n] for n in scene.JOINT_NAMES])
        except KeyError:
            return  # not the dual-arm scene's joints
        self._keep(self._joints, contract.header_stamp_ns(msg), q)
        self._act()

    @staticmethod
    def _keep(kept: OrderedDict, stamp_ns: int, value) -> None:
        kept[stamp_ns] = value
        while len(kept) > TICKS_KEPT:
            kept.popitem(last=False)

    def _act(self) -> None:
        """On the newest tick whose joint_states and object poses have both come (exactly that
        tick's pair: a pose from another tick would put the block off the jaws that hold it)."""
        if self._restarting or self.exit_code is not None:
            return
        both = [s for s in self._joints if s in self._poses]
        if not both:
            return
        now_ns = max(both)
        q, objects = self._joints[now_ns], self._poses[now_ns]
        if len(objects) < 2 or (self._last_ns is not None and now_ns <= self._last_ns):
            return
        self._last_ns = now_ns
        if self._start_ns is None or now_ns < self._start_ns:
            self._start_ns, self._next_ns, self._done_ns, self._placed_ns = now_ns, now_ns, None, None
            self._goal, self._before = goal_of_tray(objects[1]), None
            self.expert.reset()
        if now_ns < self._next_ns:
            return
        self._next_ns = now_ns + self.period_ns
        block, tray = objects[0], objects[1]
        phase = self.expert.phase
        targets = self.expert(Percept((now_ns - self._start_ns) * 1e-9, q, block.copy(), tray.copy()))
        if self.expert.phase != phase:
            self.get_logger().debug(f"{(now_ns - self._start_ns) * 1e-9:.2f} s: {self.expert.phase}, block at "
                                    f"{np.round(block[:3], 3).tolist()}")
        self._publish(now_ns, targets)
        self._judge(now_ns, q, objects)
        ended = now_ns - self._start_ns >= self.timeout_ns
        if (self.expert.done or self.expert.failure is not None) and self._done_ns is None:
            self._done_ns = now_ns  # done, or given up: the block gets to come to rest, then is judged
        if self._done_ns is not None:
            held = self._placed_ns is not None and now_ns - max(self._placed_ns, self._done_ns) >= self.hold_ns
            ended |= held or now_ns - self._done_ns >= SETTLE_TIMEOUT_S * contract.NS_PER_S
        if ended:
            self._end_episode(now_ns, block, tray)

    def _publish(self, now_ns: int, targets) -> None:
        """The targets now, and (trajectory mode) the expert's next ones, stamped in sim time: a
        trajectory that reaches the sim late is joined where it then is, never from its start."""
        if not self.horizon_points:
            out = JointState()
            out.header.stamp = stamp_msg(now_ns)
            out.name = list(scene.JOINT_NAMES)
            out.position = [float(t) for t in targets]
            self.pub.publish(out)
            return
        ahead_ns = [k * TRAJECTORY_STEP_NS for k in range(1, self.horizon_points + 1)]
        rows = [targets, *self.expert.preview([(now_ns - self._start_ns + a) * 1e-9 for a in ahead_ns])]
        msg = JointTrajectory()
        msg.header.stamp = stamp_msg(now_ns)
        msg.joint_names = list(scene.JOINT_NAMES)
        for a, row in zip([0, *ahead_ns], rows):
            msg.points.append(JointTrajectoryPoint(positions=[float(v) for v in row],
                                                   time_from_start=Duration(sec=a // contract.NS_PER_S,
                                                                            nanosec=a % contract.NS_PER_S)))
        self.trajectory_pub.publish(msg)

    def _judge(self, now_ns: int, q, objects) -> None:
        """The env's success test on this tick (motion since the previous command's tick)."""
        before = self._before
        self._last = self.judge.judge(q, objects, None if before is None else before[1],
                                      0.0 if before is None else (now_ns - before[0]) * 1e-9)
        self._before = (now_ns, objects[0].copy())
        placed = self._last.placed_at_goal(objects[0][:3], self._goal, objects[1])
        if not placed:
            self._placed_ns = None
        elif self._placed_ns is None:
            self._placed_ns = now_ns

    def _end_episode(self, now_ns: int, block, tray) -> None:
        e = self.expert
        placed = self._placed_ns is not None
        result = {"episode": len(self.results) + 1, "success": placed,
                  "placement": self._last.describe() if self._last else "",
                  "distance_m": math.dist(block[:3], self._goal), "sim_time_s": (now_ns - self._start_ns) * 1e-9,
                  "phase": e.phase, "failure": f"{e.failure.phase}: {e.failure.reason}" if e.failure else None,
                  "events": list(e.events)}
        self.results.append(result)
        what = "SUCCESS" if placed else f"FAIL in {e.failure.phase if e.failure else e.phase}"
        self.get_logger().info(f"episode {result['episode']}: {what}: block {result['placement']}, "
                               f"{result['distance_m'] * 1e3:.0f} mm from the goal after {result['sim_time_s']:.2f} s "
                               f"sim time" + (f" ({result['failure']})" if result["failure"] else "")
                               + (f"; retries: {'; '.join(e.events)}" if e.events else ""))
        if self.results_path:
            Path(self.results_path).write_text(json.dumps(self.results, indent=1))
        self._start_ns = None
        if self.episodes and len(self.results) >= self.episodes:
            ok = all(r["success"] for r in self.results)
            self.request_stop(EXIT_ALL_SUCCEEDED if ok else EXIT_SOME_FAILED,
                              f"{sum(r['success'] for r in self.results)} of {len(self.results)} episodes succeeded")
            return
        self._restart()

    def finish(self, signal_name: str | None) -> int:
        if self.exit_code is not None:
            self.get_logger().info(f"done: {self.stop_reason}")
        return super().finish(signal_name)

    def _restart(self) -> None:
        """Reset the sim (it stays paused), then resume it; the next joint_states starts the episode."""
        self._restarting = True

        def resumed(_future):
            self._poses.clear()  # wait for the new scene's messages
            self._joints.clear()
            self._restarting = False

        def reset_done(_future):
            self._resume.call_async(Trigger.Request()).add_done_callback(resumed)

        if not self._reset.service_is_ready():
            self.get_logger().error("robogym_sim/reset is not available: no further episodes")
            self.episodes = len(self.results)
            self._restarting = False
            self.request_stop(EXIT_SOME_FAILED, "the sim cannot be reset for the next episode")
            return
        self._reset.call_async(Trigger.Request()).add_done_callback(reset_done)


def main(args=None) -> int:
    return run_node(ExpertNode, args, errors=(ValueError,))

