"""``~/step_request`` (contract.STEP_REQUEST_TOPIC): lockstep in one message, on a thread of its own.

A trajectory_msgs/JointTrajectory: from the tick stamped header.stamp (refused unless it is
the sim's last tick), hold points[0].positions of joint_names from the next tick on and step
the paused sim by points[0].time_from_start, a whole number of control ticks. Targets and step
travel in one message, so nothing depends on the order of two streams. The answer, once every
tick is published and any blow-up among them reported, is a "step" run state on ``~/state``
and the last tick's record on ``~/step_result`` (contract.StepResult); or a "step_refused"
result with the reason, nothing changed (not paused, another client moved the sim, a bad
target, a bad length, another client owning the run state: nodes/sim_node/run_state/machine.py).

Served on its own thread (robogym_ros.ros.subscription_thread), past the sim node's executor,
whose rebuild of its wait set cost a quarter of the node's time per lockstep step.
"""
from __future__ import annotations

from trajectory_msgs.msg import JointTrajectory

from robogym_ros import contract
from robogym_ros.contract import TopicSpec, header_stamp_ns, join_stamp
from robogym_ros.nodes.sim_node.run_state.machine import Busy, RunStates
from robogym_ros.nodes.sim_node.run_state.step_results import StepResults
from robogym_ros.ros.qos import COMMAND_QOS
from robogym_ros.ros.subscription_thread import SubscriptionThread
from robogym_ros.sim.commands import CommandRejected, validate_command

STEP_REQUEST_TYPE = "trajectory_msgs/msg/JointTrajectory"
# One request steps this many ticks at most (100 s of sim time at the default 100 Hz): the
# thread answers nothing else meanwhile.
MAX_STEP_TICKS = 10_000


def from_index_of(msg: JointTrajectory, control_dt_ns: int) -> int:
    """The tick a request steps from, as it names it (for a refusal: which request it answers)."""
    return header_stamp_ns(msg) // control_dt_ns


class StepRequests:
    """Takes step requests, steps through the run-state machine and answers on ``~/step_result``."""

    def __init__(self, node, sim, states: RunStates, results: StepResults, control_dt_ns: int,
                 ranges: dict[str, tuple[float, float]]):
        self._sim, self._states, self._results, self._dt_ns = sim, states, results, control_dt_ns
        self._ranges = dict(ranges)
        self._log = node.get_logger()
        self._thread = SubscriptionThread(node, "step_requests", JointTrajectory, "~/step_request", COMMAND_QOS,
                                          self.on_request)
        self.topic = self._thread.topic

    def spec_topic(self) -> TopicSpec:
        return TopicSpec(self.topic, STEP_REQUEST_TYPE, None, contract.COMMAND_QOS)

    def on_request(self, msg: JointTrajectory) -> None:
        try:
            from_index, n_ticks, targets = self.parse(msg)
            with self._states.own(f"a step request (from tick {from_index}, {n_ticks} ticks)") as run:
                index = run.step(n_ticks, from_index, targets)  # published, and the "step" state
        except (CommandRejected, ValueError, RuntimeError) as exc:  # nothing was stepped (Busy included)
            if not self._sim.alive:  # the physics process is gone: the node is stopping anyway
                return
            # The last tick handled, not the physics' own count: that would wait for an owner's long step.
            # "step_busy": another client owned the run state, so the same request may be sent again.
            self._results.publish("step_busy" if isinstance(exc, Busy) else "step_refused", self._states.last_handled,
                                  from_index=from_index_of(msg, self._dt_ns), detail=str(exc))
            self._log.warning(f"step request refused: {exc}")
            return
        except TimeoutError as exc:
            self._log.error(f"step request: {exc}")
            return
        try:
            self._results.publish("step", index, from_index=from_index,
                                  blew_up=self._states.blew_up(from_index, index))
        except RuntimeError as exc:
            self._log.error(f"step request: {exc}")

    def parse(self, msg: JointTrajectory) -> tuple[int, int, dict[str, float]]:
        """(the tick to step from, ticks to step, targets) of a step request, or CommandRejected."""
        start_ns = header_stamp_ns(msg)
        if start_ns % self._dt_ns:
            raise CommandRejected(f"header.stamp {start_ns} ns is not on the tick grid "
                                  f"(a multiple of {self._dt_ns} ns): it must name the last tick")
        if len(msg.points) != 1:
            raise CommandRejected(f"a step request has exactly one point, got {len(msg.points)}")
        point = msg.points[0]
        if len(point.velocities) or len(point.accelerations) or len(point.effort):
            raise CommandRejected("a step request holds positions only (no velocities, accelerations, effort)")
        duration_ns = join_stamp(point.time_from_start.sec, point.time_from_start.nanosec)
        n_ticks, rest = divmod(duration_ns, self._dt_ns)
        if rest or not 1 <= n_ticks <= MAX_STEP_TICKS:
            raise CommandRejected(f"time_from_start {duration_ns} ns must be 1 .. {MAX_STEP_TICKS} whole "
                                  f"control ticks of {self._dt_ns} ns")
        if not len(msg.joint_names) and not len(point.positions):
            return start_ns // self._dt_ns, n_ticks, {}  # no new targets: the current ones hold
        targets = validate_command(msg.joint_names, point.positions, (), (), self._ranges)
        return start_ns // self._dt_ns, n_ticks, targets

    def close(self) -> None:
        self._thread.close()
