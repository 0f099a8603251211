"""The sim's answers to its clients: the run state (latched), a lockstep step's result, and the
answer of a granted Trigger service; each one encoding (``to_json``) and one decoder (``from_json``)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from robogym_ros.contract.names import int_or_none

# A refusal (a Trigger's success false, a refused parameter, a step result's detail) whose reason
# starts so: refused only because another client owned the run state; nothing changed, worth again.
BUSY_PREFIX = "busy: "


# --- the run state (latched on STATE_TOPIC, one message per change) ---------------------------
@dataclass(frozen=True)
class RunState:
    """The sim paused or running, from which tick on: a paused sim is not a dead one.

    ``stamp_ns`` is the stamp of the last tick published before the change: a stream that
    goes quiet after it while ``paused`` is true was paused, not lost.
    """
    paused: bool
    stamp_ns: int
    reason: str  # "start" | "pause" | "resume" | "reset" | "step" | "blow_up"
    # A reset's scene: the seed of its sequence and its place in it (1 = the scene the first
    # reset of a sim started with that seed draws, = the env's local reset(seed=seed)).
    seed: int | None = None
    scene: int | None = None

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RunState":
        try:
            d = json.loads(text)
            return cls(paused=bool(d["paused"]), stamp_ns=int(d["stamp_ns"]), reason=str(d["reason"]),
                       seed=int_or_none(d.get("seed")), scene=int_or_none(d.get("scene")))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"run state is not valid ({type(exc).__name__}: {exc}): {text[:80]!r}") from None


# --- lockstep answers (STEP_RESULT_TOPIC, one message per step request and per reset) ---------
@dataclass(frozen=True)
class StepResult:
    """What a lockstep client needs of a step request or a reset, in one message: the record of
    its last tick (float64 values; JSON writes the shortest text that reads back to the same
    double, so they arrive bit for bit), or why the request was refused.
    """
    # "step" | "reset" | "step_refused" (nothing changed; ``detail`` says why) | "step_busy"
    # (refused, nothing changed, because another client owned the run state: worth sending again)
    reason: str
    stamp_ns: int  # the tick of the record (refused: the sim's last tick)
    from_stamp_ns: int | None = None  # a step request's header.stamp: which request this answers
    blew_up: bool = False  # a blow-up ended the step early, at ``stamp_ns`` (the scene was reset)
    seed: int | None = None  # a reset's seed and scene, as in its RunState
    scene: int | None = None
    detail: str = ""
    position: tuple[float, ...] = ()
    velocity: tuple[float, ...] = ()
    effort: tuple[float, ...] = ()
    object_poses: tuple[tuple[float, ...], ...] = ()  # one row per object, POSE_LAYOUT

    def to_json(self) -> str:
        # Not asdict: its deep copy of the numbers costs more than the encoding (once per step).
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "StepResult":
        try:
            d = json.loads(text)
            return cls(reason=str(d["reason"]), stamp_ns=int(d["stamp_ns"]),
                       from_stamp_ns=int_or_none(d.get("from_stamp_ns")), blew_up=bool(d.get("blew_up")),
                       seed=int_or_none(d.get("seed")), scene=int_or_none(d.get("scene")),
                       detail=str(d.get("detail", "")), position=tuple(d["position"]),
                       velocity=tuple(d["velocity"]), effort=tuple(d["effort"]),
                       object_poses=tuple(tuple(p) for p in d["object_poses"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"step result is not valid ({type(exc).__name__}: {exc}): {text[:80]!r}") from None


# --- the answers of the Trigger services (~/pause, ~/resume, ~/reset, ~/step: message = to_json()) --
@dataclass(frozen=True)
class RunAnswer:
    """What a granted ``~/pause``, ``~/resume``, ``~/reset`` or ``~/step`` did, at which tick
    (pause, resume: the last tick before; reset: its own tick; step: the tick stepped to), and a
    reset's seed, scene and draw. A refusal (success false) carries prose, never this."""
    action: str  # "pause" | "resume" | "reset" | "step"
    paused: bool
    tick: int
    t_s: float  # the tick's sim time
    seed: int | None = None
    scene: int | None = None
    draw: Mapping[str, Any] = field(default_factory=dict)  # a reset's draw (block_side, ...)

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None and v != {}}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RunAnswer":
        try:
            d = json.loads(text)
            return cls(action=str(d["action"]), paused=bool(d["paused"]), tick=int(d["tick"]),
                       t_s=float(d["t_s"]), seed=int_or_none(d.get("seed")), scene=int_or_none(d.get("scene")),
                       draw=dict(d.get("draw", {})))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"run answer is not valid ({type(exc).__name__}: {exc}): {text[:80]!r}") from None

