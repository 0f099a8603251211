"""``~/step_result`` (contract.STEP_RESULT_TOPIC, contract.StepResult): the answer to each lockstep
step request and each reset, the record of the last tick in one message, so a lockstep client
need not take every tick; or a refusal with the reason (no record)."""
from __future__ import annotations

import threading
from collections import OrderedDict

from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import StepResult
from robogym_ros.ros.qos import profile

RECENT_TICKS = 64  # ticks kept for the answers (an answer is about the newest)


class StepResults:
    """Publishes step results from the ticks the node has handled."""

    def __init__(self, node, control_dt_ns: int):
        self._dt_ns = control_dt_ns
        self._pub = node.create_publisher(String, "~/step_result", profile(contract.STEP_RESULT_QOS))
        self._lock = threading.Lock()
        self._recent: OrderedDict[int, object] = OrderedDict()  # the last ticks, by index

    def remember(self, tick) -> None:
        """Each tick, on the pump thread, before the run state counts it handled."""
        with self._lock:
            self._recent[tick.index] = tick
            while len(self._recent) > RECENT_TICKS:
                self._recent.popitem(last=False)

    def publish(self, reason: str, tick_index: int, *, from_index: int | None = None, blew_up: bool = False,
                seed: int | None = None, scene: int | None = None, detail: str = "") -> None:
        """The record of tick ``tick_index`` (handled already), or a refusal (``detail``, no record)."""
        fields = {}
        if not detail:
            with self._lock:
                tick = self._recent.get(tick_index)
            if tick is None:
                raise RuntimeError(f"tick {tick_index} is no longer at hand (another client stepped the sim on)")
            fields = dict(position=tick.position.tolist(), velocity=tick.velocity.tolist(),
                          effort=tick.effort.tolist(), object_poses=tick.object_poses.tolist(), blew_up=blew_up)
        dt = self._dt_ns
        result = StepResult(reason, tick_index * dt, None if from_index is None else from_index * dt,
                            seed=seed, scene=scene, detail=detail, **fields)
        self._pub.publish(String(data=result.to_json()))
