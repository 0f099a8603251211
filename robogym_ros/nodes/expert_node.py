"""ROS 2 node ``robogym_expert``: the scripted handover expert against a running sim, on sim time.

It reads what the env observes, from the sim's topics: ``joint_states`` (positions) and
``ground_truth/object_poses`` (block, tray), and publishes ``joint_commands`` every
``command_period_s`` of sim time (the stamp of the joint_states it answers), so the script's
timing follows sim time whatever the real-time factor, and it stops when the sim pauses.

Each episode ends when the expert is done, gives up (its phase and reason are logged), or
``episode_timeout_s`` of sim time has passed; the node logs whether the block came to rest
within ``distance_threshold_m`` of the goal (the env's success test). With ``episodes`` > 1 it
then resets the sim (``robogym_sim/reset``, then ``resume``) and starts the next one; with
``results_json`` it writes every episode's result there as it ends.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
from geometry_msgs.msg import PoseArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.expert.policy import HandoverExpert, Percept, goal_of_tray
from robogym_ros.nodes.messages import stamp_msg
from robogym_ros.nodes.qos import COMMAND_QOS
from robogym_ros.nodes.spin import StoppableNode, run_node
from robogym_ros.sim import scene

# Only the newest state matters: a plan that takes a few ms skips ticks rather than queueing them.
LATEST_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
SETTLE_AFTER_DONE_S = 0.5  # sim seconds the block gets to come to rest before the verdict


class ExpertNode(StoppableNode):
    """Runs HandoverExpert on the sim's topics and publishes its joint_commands."""

    def __init__(self, **kwargs):
        super().__init__("robogym_expert", **kwargs)

        def param(name, default, text):
            return self.declare_parameter(name, default, ParameterDescriptor(description=text)).value

        self.period_ns = round(float(param("command_period_s", 0.04, "period of joint_commands [s, sim time]"))
                               * contract.NS_PER_S)
        self.episodes = int(param("episodes", 1, "episodes to run; 0 = until stopped"))
        self.timeout_ns = round(float(param("episode_timeout_s", 25.0, "an episode's limit [s, sim time]"))
                                * contract.NS_PER_S)
        self.threshold_m = float(param("distance_threshold_m", 0.03,
                                       "success: block centre this close to the goal [m]"))
        self.results_path = str(param("results_json", "", "write each episode's result here (JSON list)"))
        if self.period_ns <= 0 or self.timeout_ns <= 0 or self.threshold_m <= 0 or self.episodes < 0:
            raise ValueError("command_period_s, episode_timeout_s and distance_threshold_m must be > 0, "
                             "episodes >= 0")
        speed = float(param("speed_scale", 1.0, "the expert's pace (1 = local mode's); slower moves keep a "
                                                 "real-time run smooth when this node's callbacks come late"))
        if not 0.1 <= speed <= 2.0:
            raise ValueError(f"speed_scale must be in [0.1, 2], got {speed}")
        self.expert = HandoverExpert(speed_scale=speed)
        self.results: list[dict] = []
        self._objects = None
        self._start_ns = None
        self._next_ns = 0
        self._done_ns = None
        self._restarting = False
        self.pub = self.create_publisher(JointState, contract.JOINT_COMMANDS, COMMAND_QOS)
        self.create_subscription(JointState, contract.JOINT_STATES, self._on_joints, LATEST_QOS)
        self.create_subscription(PoseArray, contract.TRUTH_OBJECTS, self._on_objects, LATEST_QOS)
        self._reset = self.create_client(Trigger, f"{contract.SIM_NODE}/reset")
        self._resume = self.create_client(Trigger, f"{contract.SIM_NODE}/resume")

    def _on_objects(self, msg: PoseArray) -> None:
        self._objects = np.array([[p.position.x, p.position.y, p.position.z, p.orientation.w,
                                   p.orientation.x, p.orientation.y, p.orientation.z] for p in msg.poses])

    def _on_joints(self, msg: JointState) -> None:
        if self._restarting or self._objects is None or len(self._objects) < 2:
            return
        if self.episodes and len(self.results) >= self.episodes:
            return  # all episodes run: hold the last targets
        now_ns = contract.header_stamp_ns(msg)
        by_name = dict(zip(msg.name, msg.position))
        try:
            q = np.array([by_name[n] for n in scene.JOINT_NAMES])
        except KeyError:
            return  # not the dual-arm scene's joints
        if self._start_ns is None or now_ns < self._start_ns:
            self._start_ns, self._next_ns, self._done_ns = now_ns, now_ns, None
            self.expert.reset()
        if now_ns < self._next_ns:
            return
        self._next_ns = now_ns + self.period_ns
        block, tray = self._objects[0], self._objects[1]
        phase = self.expert.phase
        targets = self.expert(Percept((now_ns - self._start_ns) * 1e-9, q, block.copy(), tray.copy()))
        if self.expert.phase != phase:
            self.get_logger().debug(f"{(now_ns - self._start_ns) * 1e-9:.2f} s: {self.expert.phase}, block at "
                                    f"{np.round(block[:3], 3).tolist()}")
        out = JointState()
        out.header.stamp = stamp_msg(now_ns)
        out.name = list(scene.JOINT_NAMES)
        out.position = [float(t) for t in targets]
        self.pub.publish(out)
        ended = self.expert.failure is not None or now_ns - self._start_ns >= self.timeout_ns
        if self.expert.done and self._done_ns is None:
            self._done_ns = now_ns
        if self._done_ns is not None and now_ns - self._done_ns >= SETTLE_AFTER_DONE_S * contract.NS_PER_S:
            ended = True
        if ended:
            self._end_episode(now_ns, block, tray)

    def _end_episode(self, now_ns: int, block, tray) -> None:
        distance = math.dist(block[:3], goal_of_tray(tray))
        e = self.expert
        result = {"episode": len(self.results) + 1, "success": distance <= self.threshold_m,
                  "distance_m": distance, "sim_time_s": (now_ns - self._start_ns) * 1e-9, "phase": e.phase,
                  "failure": f"{e.failure.phase}: {e.failure.reason}" if e.failure else None,
                  "events": list(e.events)}
        self.results.append(result)
        what = "SUCCESS" if result["success"] else f"FAIL in {e.failure.phase if e.failure else e.phase}"
        self.get_logger().info(f"episode {result['episode']}: {what}: block {distance * 1e3:.0f} mm from the goal "
                               f"after {result['sim_time_s']:.2f} s sim time"
                               + (f" ({result['failure']})" if result["failure"] else "")
                               + (f"; retries: {'; '.join(e.events)}" if e.events else ""))
        if self.results_path:
            Path(self.results_path).write_text(json.dumps(self.results, indent=1))
        self._start_ns = None
        if not self.episodes or len(self.results) < self.episodes:
            self._restart()

    def _restart(self) -> None:
        """Reset the sim (it stays paused), then resume it; the next joint_states starts the episode."""
        self._restarting = True

        def resumed(_future):
            self._objects = None  # wait for the new scene's poses
            self._restarting = False

        def reset_done(_future):
            self._resume.call_async(Trigger.Request()).add_done_callback(resumed)

        if not self._reset.service_is_ready():
            self.get_logger().error("robogym_sim/reset is not available: no further episodes")
            self.episodes = len(self.results)
            self._restarting = False
            return
        self._reset.call_async(Trigger.Request()).add_done_callback(reset_done)


def main(args=None) -> int:
    return run_node(ExpertNode, args, errors=(ValueError,))


if __name__ == "__main__":
    sys.exit(main())
