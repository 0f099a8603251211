"""Pause, resume, reset and step as std_srvs/Trigger services, lockstep requests, and the latched
run state.

Each change of run state is published on ``~/state`` (contract.RunState) with the stamp of
the last tick before it, so a reader can tell a paused sim from a dead one. A reset's state
also says which seed's sequence its scene comes from and its place in it.

``~/step_request`` (contract.STEP_REQUEST_TOPIC, nodes/step_requests.py) is lockstep in one
message. It, and every reset, is answered on ``~/step_result`` (contract.StepResult): the
record of the last tick in one message, so a lockstep client need not take every tick.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.contract import RunState, StepResult
from robogym_ros.nodes.qos import STATE_QOS, profile
from robogym_ros.nodes.step_requests import StepRequests
from robogym_ros.nodes.tick_publisher import TickPublisher
from robogym_ros.sim.process import SimProcess

RECENT_TICKS = 64  # ticks kept for the step results (a step result is about the newest)


class RunControl:
    """The sim's services; every answer is sent once its tick, if any, is on the wire."""

    def __init__(self, node, sim: SimProcess, ticks: TickPublisher, control_dt_ns: int,
                 ranges: dict[str, tuple[float, float]] | None = None):
        self._sim, self._ticks, self._dt_ns = sim, ticks, control_dt_ns
        self._log = node.get_logger()
        self._pub = node.create_publisher(String, "~/state", STATE_QOS)
        self._results = node.create_publisher(String, "~/step_result", profile(contract.STEP_RESULT_QOS))
        node.create_service(Trigger, "~/pause", self._pause)
        node.create_service(Trigger, "~/resume", self._resume)
        node.create_service(Trigger, "~/reset", self._reset)
        node.create_service(Trigger, "~/step", self._step)
        # The last tick the node has handled whole (published, blow-up reported): a state
        # published after it comes after the blow-up state of any of its ticks.
        self._handled_index = -1
        self._handled = threading.Condition()
        self._recent: OrderedDict[int, object] = OrderedDict()  # the last ticks handled, by index
        self._blow_ups: list[int] = []  # indices of recent blow-ups
        self.step_requests = None if ranges is None else StepRequests(node, sim, self, control_dt_ns, ranges)

    def close(self) -> None:
        if self.step_requests is not None:
            self.step_requests.close()

    def publish_state(self, tick_index: int, reason: str, paused: bool, *, seed: int | None = None,
                      scene: int | None = None) -> None:
        state = RunState(paused, int(tick_index) * self._dt_ns, reason, seed=seed, scene=scene)
        self._pub.publish(String(data=state.to_json()))

    # --- the tick path (the node's pump thread) -------------------------------------------
    def on_tick(self, tick) -> None:
        """After a tick is published: its blow-up reported, then waiters released."""
        if tick.blew_up:  # the loop reset the scene and paused itself
            self.publish_state(tick.index, "blow_up", True)
        with self._handled:
            if tick.blew_up:
                self._blow_ups = [*self._blow_ups[-RECENT_TICKS:], tick.index]
            self._recent[tick.index] = tick
            while len(self._recent) > RECENT_TICKS:
                self._recent.popitem(last=False)
            self._handled_index = tick.index
            self._handled.notify_all()

    def publish_result(self, reason: str, tick_index: int, *, from_index: int | None = None,
                       seed: int | None = None, scene: int | None = None, detail: str = "") -> None:
        """The answer to a step request or a reset: the record of tick ``tick_index`` (handled
        already), or a refusal (``detail``, no record)."""
        fields = {}
        if not detail:
            with self._handled:
                tick = self._recent.get(tick_index)
                blew_up = any(from_index < i <= tick_index for i in self._blow_ups) if from_index is not None else False
            if tick is None:
                raise RuntimeError(f"tick {tick_index} is no longer at hand (another client stepped the sim on)")
            fields = dict(position=tick.position.tolist(), velocity=tick.velocity.tolist(),
                          effort=tick.effort.tolist(), object_poses=tick.object_poses.tolist(), blew_up=blew_up)
        dt = self._dt_ns
        result = StepResult(reason, tick_index * dt, None if from_index is None else from_index * dt,
                            seed=seed, scene=scene, detail=detail, **fields)
        self._results.publish(String(data=result.to_json()))

    def wait_handled(self, index: int, timeout_s: float = 5.0) -> None:
        """Return once tick ``index`` is published and its blow-up, if any, reported."""
        with self._handled:
            if not self._handled.wait_for(lambda: self._handled_index >= index, timeout_s):
                raise TimeoutError(f"tick {index} was not published within {timeout_s:g} s")

    # --- services ---------------------------------------------------------------------------
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
            index, seed, scene = draw.pop("tick"), draw.pop("seed"), draw.pop("scene")
            self.wait_handled(index)
            self.publish_state(index, "reset", True, seed=seed, scene=scene)
            self.publish_result("reset", index, seed=seed, scene=scene)
            # "tick N" first: a client finds its reset's state by that stamp (the latched
            # history may hold older resets).
            return (f"reset, paused; tick {index}; seed {seed}, scene {scene}; "
                    + ", ".join(f"{k}={v}" for k, v in draw.items()))
        return self._serve(response, reset)

    def _step(self, _request, response):
        def step():
            index = self._sim.step()
            self.wait_handled(index)  # a caller may read the tick right away
            self.publish_state(index, "step", True)
            return f"stepped to tick {index}, t = {index * self._dt_ns * 1e-9:.6f} s"
        return self._serve(response, step)
