"""The contract every tier shares: names, stamps, the pose layout, QoS and the sim's spec.

Standard library only, so the physics process, the checks, the recorder, the nodes and the
Gymnasium env all read one definition of each fact. The spec is what the sim publishes
(latched JSON on ``robogym_sim/spec``); :class:`Spec` is built once by the sim node and
parsed once by every reader (the recorder, the bag reader, the env over ROS).

Topic names are relative (they follow the namespace) except ``/clock`` and
``/diagnostics``, whose absolute names are the conventions ``use_sim_time`` and the
diagnostic aggregator rely on.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

# --- names ---------------------------------------------------------------------------------
SIM_NODE = "robogym_sim"
JOINT_STATES = "joint_states"
JOINT_COMMANDS = "joint_commands"
JOINT_TRAJECTORY = "joint_trajectory"
ROBOT_DESCRIPTION = "robot_description"
TRUTH_JOINTS = "ground_truth/joint_states"
TRUTH_OBJECTS = "ground_truth/object_poses"
# sensor_msgs/JointState, every tick, stamped with the tick, joints in ground truth's order, only
# ``position`` filled: the servo targets (MjData.ctrl) the physics held during the control tick
# that ended at the stamp, whoever set them (joint_commands, a trajectory, an arm controller).
# The tick's state is the result of exactly these targets (zero-order hold over the tick's
# physics steps); a command that arrives during tick k shows from tick k + 1 on. A reset tick (and
# a blow-up's tick, whose state is the new scene) has no step: it carries the targets the reset
# set, the new pose held, which are in force from the next tick on until a command changes them.
TRUTH_TARGETS = "ground_truth/joint_targets"
CLOCK = "/clock"
DIAGNOSTICS = "/diagnostics"
SPEC_TOPIC = f"{SIM_NODE}/spec"  # relative to the namespace: the sim node's private "~/spec"
STATE_TOPIC = f"{SIM_NODE}/state"  # latched: paused / running, and from which tick
# Lockstep in one message (trajectory_msgs/JointTrajectory, RELIABLE): from the tick stamped
# header.stamp (refused unless that is the sim's last tick), hold points[0].positions of
# joint_names from the next tick on and step a paused sim by points[0].time_from_start (a whole
# number of control ticks). Targets and step travel together: no order between two streams
# is assumed. Answered on STEP_RESULT_TOPIC (std_msgs/String, StepResult JSON), as is every reset.
STEP_REQUEST_TOPIC = f"{SIM_NODE}/step_request"
STEP_RESULT_TOPIC = f"{SIM_NODE}/step_result"
# A frame the sim skipped (due while the renderer was busy): std_msgs/Header, stamp = the tick the
# frame was due at, frame_id = the cameras, comma-separated (they render together). Lets a
# recorder tell frames the sim skipped from frames lost on the way.
CAMERA_SKIPS_TOPIC = "cameras/skipped"
SERVICES = ("pause", "resume", "reset", "step")
SPEC_FORMAT = "robogym_ros/spec/1"
WORLD_FRAME = "world"

# Object poses (ground truth, ticks, bags): one row per object.
POSE_LAYOUT = ("x", "y", "z", "qw", "qx", "qy", "qz")
POSE_SIZE = len(POSE_LAYOUT)


def optical_frame(camera: str) -> str:
    """The REP 103 optical frame of a camera: z forward, x right, y down."""
    return f"{camera}_optical_frame"


def image_topic(camera: str) -> str:
    return f"cameras/{camera}/image_raw"


def info_topic(camera: str) -> str:
    return f"cameras/{camera}/camera_info"


# --- stamps: integer nanoseconds on the tick grid --------------------------------------------
NS_PER_S = 1_000_000_000
# Tick 0 is the initial state and is never published: a sim's first tick (after start or a
# restart) is tick 1, stamped one control dt. Its camera clock's first frame falls on it.
FIRST_TICK_INDEX = 1


def split_stamp(stamp_ns: int) -> tuple[int, int]:
    """(sec, nanosec) of a builtin_interfaces/Time."""
    return divmod(int(stamp_ns), NS_PER_S)


def join_stamp(sec: int, nanosec: int) -> int:
    return int(sec) * NS_PER_S + int(nanosec)


def header_stamp_ns(msg: Any) -> int:
    """``msg.header.stamp`` in ns, for any message type (rclpy, rosbags) that has a header."""
    stamp = msg.header.stamp
    return join_stamp(stamp.sec, stamp.nanosec)


# --- QoS, described without rclpy (ros/qos.py turns these into QoSProfiles) ---------------
@dataclass(frozen=True)
class QosSpec:
    """A QoS profile described without rclpy (ros/qos.py makes the QoSProfile)."""

    depth: int
    reliability: str = "reliable"
    durability: str = "volatile"
    history: str = "keep_last"

    def to_dict(self) -> dict:
        return asdict(self)


# RELIABLE everywhere the recorder must lose nothing. The writer's history is what a slow
# reader can still recover: 1000 samples cover a 10 s stall at 100 Hz, 1 s at 1 kHz.
STREAM_QOS = QosSpec(depth=1000)
COMMAND_QOS = QosSpec(depth=10)
CLOCK_QOS = QosSpec(depth=10)
IMAGE_QOS = QosSpec(depth=5)
DIAGNOSTICS_QOS = QosSpec(depth=10)
# Latched: a recorder or agent that starts later still gets it at once.
SPEC_QOS = QosSpec(depth=1, durability="transient_local")
# Every pause/resume transition of a run, for a reader that joins late (depth, not 1).
STATE_QOS = QosSpec(depth=100, durability="transient_local")
# Answers to the requests of a client that is there: no history for late joiners.
STEP_RESULT_QOS = QosSpec(depth=10)


def _qos(value: Any) -> QosSpec | None:
    return None if value is None else QosSpec(**value)


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
                       seed=_int_or_none(d.get("seed")), scene=_int_or_none(d.get("scene")))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"run state is not valid ({type(exc).__name__}: {exc}): {text[:80]!r}") from None


# --- lockstep answers (STEP_RESULT_TOPIC, one message per step request and per reset) ---------
@dataclass(frozen=True)
class StepResult:
    """What a lockstep client needs of a step request or a reset, in one message: the record of
    its last tick (float64 values; JSON writes the shortest text that reads back to the same
    double, so they arrive bit for bit), or why the request was refused.
    """
    reason: str  # "step" | "reset" | "step_refused" (nothing changed; ``detail`` says why)
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
                       from_stamp_ns=_int_or_none(d.get("from_stamp_ns")), blew_up=bool(d.get("blew_up")),
                       seed=_int_or_none(d.get("seed")), scene=_int_or_none(d.get("scene")),
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
                       t_s=float(d["t_s"]), seed=_int_or_none(d.get("seed")), scene=_int_or_none(d.get("scene")),
                       draw=dict(d.get("draw", {})))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"run answer is not valid ({type(exc).__name__}: {exc}): {text[:80]!r}") from None


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
                physics_dt_ns=_int_or_none(d.get("physics_dt_ns")),
                decimation=_int_or_none(d.get("decimation")),
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


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


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
