"""Pause, resume, reset and step as std_srvs/Trigger services, and the latched run state.

Each change of run state is published on ``~/state`` (contract.RunState) with the stamp of
the last tick before it, so a reader can tell a paused sim from a dead one.
"""
from __future__ import annotations

from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros.contract import RunState
from robogym_ros.nodes.qos import STATE_QOS
from robogym_ros.nodes.tick_publisher import TickPublisher
from robogym_ros.sim.process import SimProcess


class RunControl:
    """The sim's services; every answer is sent once its tick, if any, is on the wire."""

    def __init__(self, node, sim: SimProcess, ticks: TickPublisher, control_dt_ns: int):
        self._sim, self._ticks, self._dt_ns = sim, ticks, control_dt_ns
        self._pub = node.create_publisher(String, "~/state", STATE_QOS)
        node.create_service(Trigger, "~/pause", self._pause)
        node.create_service(Trigger, "~/resume", self._resume)
        node.create_service(Trigger, "~/reset", self._reset)
        node.create_service(Trigger, "~/step", self._step)

    def publish_state(self, tick_index: int, reason: str, paused: bool) -> None:
        state = RunState(paused, int(tick_index) * self._dt_ns, reason)
        self._pub.publish(String(data=state.to_json()))

    @staticmethod
    def _serve(response, action):
        try:
            response.message = action()
            response.success = True
        except Exception as exc:  # noqa: BLE001 - the caller gets the reason, the node lives on
            response.success, response.message = False, str(exc)
        return response

    def _pause(self, _request, response):
        def pause():
            self.publish_state(self._sim.pause(), "pause", True)
            return "paused"
        return self._serve(response, pause)

    def _resume(self, _request, response):
        def resume():
            self.publish_state(self._sim.resume(), "resume", False)
            return "running"
        return self._serve(response, resume)

    def _reset(self, _request, response):
        def reset():
            draw = self._sim.reset()
            index = self._sim.status().tick_index
            self._ticks.wait_published(index)
            self.publish_state(index, "reset", True)
            return "reset, paused; " + ", ".join(f"{k}={v}" for k, v in draw.items())
        return self._serve(response, reset)

    def _step(self, _request, response):
        def step():
            index = self._sim.step()
            self._ticks.wait_published(index)  # a caller may read the tick right away
            self.publish_state(index, "step", True)
            return f"stepped to tick {index}, t = {index * self._dt_ns * 1e-9:.6f} s"
        return self._serve(response, step)
