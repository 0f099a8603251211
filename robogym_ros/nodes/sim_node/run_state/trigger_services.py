"""Pause, resume, reset and step as std_srvs/Trigger services (``~/pause``, ``~/resume``,
``~/reset``, ``~/step``), through the run-state machine (nodes/sim_node/run_state/machine.py): each owns
the run state for its call, and is refused (success false, the owner named, nothing changed)
while another client owns it. A granted call answers with a contract.RunAnswer as JSON (what
was done, at which tick; a reset's seed, scene and draw). A reset is also answered on ``~/step_result``
(nodes/sim_node/run_state/step_results.py) for lockstep clients.
"""
from __future__ import annotations

from std_srvs.srv import Trigger

from robogym_ros.contract import NS_PER_S, RunAnswer
from robogym_ros.nodes.sim_node.run_state.machine import RunStates
from robogym_ros.nodes.sim_node.run_state.step_results import StepResults


class RunControl:
    """The sim's Trigger services; every answer is sent once its tick, if any, is on the wire."""

    def __init__(self, node, states: RunStates, results: StepResults, control_dt_ns: int):
        self._states, self._results, self._dt_ns = states, results, control_dt_ns
        node.create_service(Trigger, "~/pause", self._pause)
        node.create_service(Trigger, "~/resume", self._resume)
        node.create_service(Trigger, "~/reset", self._reset)
        node.create_service(Trigger, "~/step", self._step)

    @staticmethod
    def _serve(response, action):
        try:
            response.message = action().to_json()
            response.success = True
        except Exception as exc:  # noqa: BLE001 - the caller gets the reason, the node lives on
            response.success, response.message = False, str(exc)
        return response

    def _answer(self, action: str, paused: bool, index: int, **reset) -> RunAnswer:
        return RunAnswer(action, paused, index, index * self._dt_ns / NS_PER_S, **reset)

    def _pause(self, _request, response):
        def pause():
            with self._states.own("a ~/pause call") as run:
                index = run.pause()
            return self._answer("pause", True, index)
        return self._serve(response, pause)

    def _resume(self, _request, response):
        def resume():
            with self._states.own("a ~/resume call") as run:
                index = run.resume()
            return self._answer("resume", False, index)
        return self._serve(response, resume)

    def _reset(self, _request, response):
        def reset():
            with self._states.own("a ~/reset call") as run:
                draw = run.reset()
                index, seed, scene = draw.pop("tick"), draw.pop("seed"), draw.pop("scene")
                self._results.publish("reset", index, seed=seed, scene=scene)  # its tick still the last
            # The tick: a client finds its reset's state by that stamp (the latched history may
            # hold older resets).
            return self._answer("reset", True, index, seed=seed, scene=scene, draw=draw)
        return self._serve(response, reset)

    def _step(self, _request, response):
        def step():
            with self._states.own("a ~/step call") as run:
                index = run.step()  # answered once the tick is published: a caller may read it right away
            return self._answer("step", True, index)
        return self._serve(response, step)
