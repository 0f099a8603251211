"""The standard ``SimulateSteps`` action (simulation_interfaces): n control ticks while paused,
feedback after each tick is on the wire, cancel between ticks.

A goal runs for as long as it has steps, so it cannot run on the sim node's executor (a
SingleThreadedExecutor: a goal would hold every service, and its own cancel request, until
it ended). The action server lives on a small node of its own, ``<sim node>_simulate_steps``
in the same namespace, spun by a two-thread executor on a thread of its own: one thread runs
the goal, the other takes cancel and result requests. The action keeps the sim node's name,
``<namespace>/robogym_sim/simulate_steps``.
"""
from __future__ import annotations

import threading

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result

from robogym_ros.nodes.sim_node.run_state.machine import RunStates
from robogym_ros.nodes.sim_node.simulation_interfaces.common import (
    Refused,
    blew_up,
    check_steps,
    owning,
    paused_at,
    result,
)
from robogym_ros.sim.process import SimProcess

SPIN_POLL_S = 0.1  # how soon close() is seen by the spin thread
# A feedback per tick comes in bursts (a tick takes ~1 ms): rclpy's default depth of 10 would let
# a busy client lose some. A client should ask for as much (feedback_sub_qos_profile).
FEEDBACK_QOS = QoSProfile(depth=1000)


class SimulateStepsServer:
    """``~/simulate_steps`` of ``node``, served on a node and thread of its own."""

    def __init__(self, node, sim: SimProcess, states: RunStates, name: str):
        self._sim, self._states = sim, states
        self._stop = threading.Event()
        # Not the process's global arguments: a launch file's ``-r __node:=robogym_sim`` would
        # give this node the sim node's name too.
        self._node = Node(f"{node.get_name()}_simulate_steps", namespace=node.get_namespace(),
                          context=node.context, use_global_arguments=False, start_parameter_services=False)
        self.name = node.resolve_service_name(name)
        self._server = ActionServer(self._node, SimulateSteps, self.name, execute_callback=self._execute,
                                    cancel_callback=lambda _request: CancelResponse.ACCEPT,
                                    feedback_pub_qos_profile=FEEDBACK_QOS,
                                    callback_group=ReentrantCallbackGroup())
        self._executor = MultiThreadedExecutor(num_threads=2, context=node.context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._spin, name="simulate_steps", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            while not self._stop.is_set() and self._node.context.ok():
                self._executor.spin_once(timeout_sec=SPIN_POLL_S)
        except ExternalShutdownException:
            pass

    def _execute(self, goal):
        steps, done, index = int(goal.request.steps), 0, None
        response = SimulateSteps.Result()
        try:
            check_steps(steps)
            # The goal owns the run state from its first step to its last: every other client is
            # refused meanwhile (nodes/sim_node/run_state/machine.py), so n steps are n consecutive ticks.
            with owning(self._states, f"a simulate_steps goal ({steps} steps)") as run:
                index = start = paused_at(self._sim)
                try:
                    while done < steps and not goal.is_cancel_requested and not self._stop.is_set():
                        index = run.step(1, index, publish=False)
                        done += 1
                        goal.publish_feedback(SimulateSteps.Feedback(completed_steps=done,
                                                                     remaining_steps=steps - done))
                        blew_up(self._states, start, index, steps)
                finally:
                    if done:  # where the paused sim stands: one run state for the goal
                        run.publish_step(index)
        except Refused as exc:
            goal.abort()
            response.result = result(exc.code, str(exc))
            return response
        except Exception as exc:  # noqa: BLE001 - the client gets the reason, the sim lives on
            goal.abort()
            response.result = result(Result.RESULT_OPERATION_FAILED,
                                     f"{type(exc).__name__} after {done} of {steps} steps: {exc}")
            return response
        response.result = result(Result.RESULT_OK)
        if done == steps:
            goal.succeed()
        elif goal.is_cancel_requested:  # the last feedback says how far it got
            goal.canceled()
        else:
            goal.abort()
            response.result = result(Result.RESULT_OPERATION_FAILED,
                                     f"the sim is shutting down: stopped after {done} of {steps} steps")
        return response

    def close(self, timeout_s: float = 1.0) -> None:
        """End a running goal after its current tick, stop the thread, destroy the node."""
        self._stop.set()
        self._thread.join(timeout_s)
        self._executor.shutdown(timeout_sec=timeout_s)
        self._server.destroy()
        self._node.destroy_node()
