"""The sim's spec: what it publishes (latched JSON on ``robogym_sim/spec``), built once by the sim
node and parsed once by every reader (the recorder, the bag reader, the env over ROS)."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from robogym_ros.contract.names import NS_PER_S, POSE_LAYOUT, SPEC_FORMAT, QosSpec, int_or_none


def _qos(value: Any) -> QosSpec | None:
    return None if value is None else QosSpec(**value)


# --- the spec --------------------------------------------------------------------------------
@dataclass(frozen=True)
class JointSpec:
    """A commandable joint: its name, kind, target range and unit."""

    name: str
    kind: str = "hinge"  # "hinge" | "slide"
    lower: float = -math.inf  # target range
    upper: float = math.inf
    unit: str = "rad"


@dataclass(frozen=True)
class TopicSpec:
    """A topic the sim offers: resolved name, message type, period in sim seconds, QoS."""

    name: str
    type: str
    period_s: float | None = None  # sim seconds; None for topics without a rate
    qos: QosSpec | None = None


@dataclass(frozen=True)
class CameraSpec:
    """A camera: its topics, image size and encoding, frame period, and lens (K, D, P)."""

    name: str
    image_topic: str = ""
    info_topic: str = ""
    width: int | None = None
    height: int | None = None
    encoding: str = "rgb8"
    period_s: float | None = None
    frame_id: str = ""
    distortion_model: str = ""
    k: tuple[float, ...] = ()
    d: tuple[float, ...] = ()
    p: tuple[float, ...] = ()
    hfov_deg: float | None = None
    source_scale: float | None = None
    qos: QosSpec | None = None


@dataclass(frozen=True)
class Spec:
    """What a sim offers. Built by the sim node; parsed once by every reader.

    ``inferred`` marks a spec reconstructed from a bag's stamps (no spec topic recorded):
    then ``decimation`` and ``physics_dt_ns`` are unknown (None).
    """
    joints: tuple[JointSpec, ...]
    control_dt_ns: int
    physics_dt_ns: int | None = None
    decimation: int | None = None
    objects: tuple[str, ...] = ()
    topics: Mapping[str, TopicSpec] = field(default_factory=dict)
    cameras: tuple[CameraSpec, ...] = ()
    services: Mapping[str, str] = field(default_factory=dict)
    node: str = ""
    model: str = ""
    real_time_factor: float | None = None
    physics_scheduling: str = ""
    # Which frames the cameras render: "skip_when_busy" (real time) or "every_frame"
    # (real_time_factor 0: physics waits for the renderer); "" = cameras off or unknown.
    camera_frames: str = ""
    instance: str = ""  # unique per sim process start: tells a restart from an update
    inferred: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know

    def __post_init__(self):
        if not isinstance(self.control_dt_ns, int) or self.control_dt_ns <= 0:
            raise ValueError(f"spec control_dt_ns must be a positive integer, got {self.control_dt_ns!r}")
        if not self.joints:
            raise ValueError("spec names no joints")

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def control_dt_s(self) -> float:
        return self.control_dt_ns / NS_PER_S

    @property
    def physics_dt_s(self) -> float | None:
        return None if self.physics_dt_ns is None else self.physics_dt_ns / NS_PER_S

    def topic(self, key: str) -> TopicSpec:
        try:
            return self.topics[key]
        except KeyError:
            raise KeyError(f"the spec lists no {key!r} topic; it has {sorted(self.topics)}") from None

    def camera(self, name: str) -> CameraSpec:
        for cam in self.cameras:
            if cam.name == name:
                return cam
        raise KeyError(f"the spec has no camera {name!r}; cameras: {[c.name for c in self.cameras]}")

    # --- JSON (format robogym_ros/spec/1; keys only ever added) ---------------------------
    def to_dict(self) -> dict:
        d = {
            "format": SPEC_FORMAT,
            "node": self.node,
            "model": self.model,
            "instance": self.instance,
            "joints": [asdict(j) for j in self.joints],
            "objects": list(self.objects),
            "object_pose_layout": list(POSE_LAYOUT),
            "physics_dt_s": self.physics_dt_s,
            "physics_dt_ns": self.physics_dt_ns,
            "decimation": self.decimation,
            "control_dt_s": self.control_dt_s,
            "control_dt_ns": self.control_dt_ns,
            "real_time_factor": self.real_time_factor,
            "physics_scheduling": self.physics_scheduling,
            "camera_frames": self.camera_frames,
            "stamps": "header.stamp = sim time of the tick = tick_index * control_dt_ns",
            "topics": {k: asdict(t) for k, t in self.topics.items()},
            "cameras": [_camera_dict(c) for c in self.cameras],
            "services": dict(self.services),
        }
        if self.inferred:
            d["inferred"] = True
        return {**self.extra, **d}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Spec":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"spec is not JSON ({exc}): {text[:80]!r}") from None
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Spec":
        if not isinstance(d, Mapping):
            raise ValueError(f"spec must be a JSON object, got {type(d).__name__}")
        if d.get("format") != SPEC_FORMAT:
            raise ValueError(f"spec format is {d.get('format')!r}, expected {SPEC_FORMAT!r}")
        try:
            known = {f.name for f in fields(cls)} | {
                "format", "object_pose_layout", "physics_dt_s", "control_dt_s", "stamps"}
            return cls(
                joints=tuple(JointSpec(**j) for j in d["joints"]),
                control_dt_ns=int(d["control_dt_ns"]),
                physics_dt_ns=int_or_none(d.get("physics_dt_ns")),
                decimation=int_or_none(d.get("decimation")),
                objects=tuple(d.get("objects", ())),
                topics={k: TopicSpec(t["name"], t["type"], t.get("period_s"), _qos(t.get("qos")))
                        for k, t in d.get("topics", {}).items()},
                cameras=tuple(_camera_from_dict(c) for c in d.get("cameras", ())),
                services=dict(d.get("services", {})),
                node=d.get("node", ""),
                model=d.get("model", ""),
                real_time_factor=d.get("real_time_factor"),
                physics_scheduling=d.get("physics_scheduling", ""),
                camera_frames=d.get("camera_frames", ""),
                instance=d.get("instance", ""),
                inferred=bool(d.get("inferred", False)),
                extra={k: v for k, v in d.items() if k not in known},
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"spec is missing or mistypes a field: {type(exc).__name__}: {exc}") from None


def _camera_dict(cam: CameraSpec) -> dict:
    d = asdict(cam)
    for key in ("k", "d", "p"):
        d[key] = list(d[key])
    return d


def _camera_from_dict(d: Mapping[str, Any]) -> CameraSpec:
    d = dict(d)
    for key in ("k", "d", "p"):
        d[key] = tuple(d.get(key, ()))
    d["qos"] = _qos(d.get("qos"))
    return CameraSpec(**{k: v for k, v in d.items() if k in CameraSpec.__dataclass_fields__})
