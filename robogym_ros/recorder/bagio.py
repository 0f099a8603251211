"""rosbag2 I/O with ``rosbags`` (pure Python: no ROS install needed to write or check a bag).

Writes CDR with the message definitions and RIHS01 hashes of the ROS 2 Kilted typestore
(the same hashes as Jazzy and as the installed Kilted wheels for these types), so that
``ros2 bag info`` / ``ros2 bag play`` read our bags. Reads bags from ``ros2 bag record``
of the sim's topics or from :class:`BagWriter`, in mcap or sqlite3 storage.

Bad input raises :class:`BagError` with a message that says what is wrong; the
underlying exception is kept as ``.cause`` rather than chained, so a command line shows
one clear line instead of a traceback from deep inside a reader.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robogym_ros.checks import BYTES_PER_PIXEL, ImageMeta, clip, digest
from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE, SPEC_QOS, STREAM_QOS, Spec, join_stamp, split_stamp
from robogym_ros.recorder.decoding import Malformed

JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_ARRAY = "geometry_msgs/msg/PoseArray"
IMAGE = "sensor_msgs/msg/Image"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
STRING = "std_msgs/msg/String"
HEADER = "std_msgs/msg/Header"
TYPESTORE = Stores.ROS2_KILTED

_STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
_UNSPECIFIED = QosTime(0, 0)  # rmw: "use the default", i.e. infinite deadline/lifespan/lease


def _qos(latched: bool) -> Qos:
    # Latched topics (the spec) must replay as transient local, or a late subscriber misses them;
    # others with the sim's stream depth, so a replay survives what the live stream survives.
    return Qos(QosHistory.KEEP_LAST, SPEC_QOS.depth if latched else STREAM_QOS.depth, QosReliability.RELIABLE,
               QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
               _UNSPECIFIED, _UNSPECIFIED, QosLiveliness.AUTOMATIC, _UNSPECIFIED, False)


class BagError(Exception):
    """A bag that cannot be written or read as asked; the message says why."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.cause = cause


class UndecodableBag(BagError):
    """The bag holds joint_states, but not one of them deserializes: a fault in the data."""

    def __init__(self, message: str, malformed: dict[str, Malformed]):
        super().__init__(message)
        self.malformed = malformed


# ----------------------------------------------------------------------------- writing

class BagWriter:
    """rosbag2 writer for the sim's message types; ``close()`` finalises and is idempotent.

    ``log_time_ns`` (when the message was "received") defaults to the header stamp: a bag
    written from sim ticks then plays back at sim pace.
    """

    def __init__(self, path: str | Path, storage: str = "mcap"):
        if storage not in _STORAGES:
            raise BagError(f"unknown storage {storage!r}: use one of {sorted(_STORAGES)}")
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"{self.path} exists already; a bag is never overwritten")
        self.storage = storage
        self.typestore = get_typestore(TYPESTORE)
        self._types = self.typestore.types
        self._writer: Writer | None = Writer(self.path, version=Writer.VERSION_LATEST,
                                             storage_plugin=_STORAGES[storage])
        try:
            self._writer.open()
        except Exception as err:
            self._writer = None
            raise BagError(f"cannot create bag {self.path}: {err}", err) from None
        self._connections: dict[str, Any] = {}

    @property
    def closed(self) -> bool:
        return self._writer is None

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        # Finalise even on error: what was recorded up to the error is worth keeping.
        self.close()

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception as err:
                raise BagError(f"cannot finalise bag {self.path}: {err}", err) from None

    def write(self, topic: str, msg: Any, log_time_ns: int, *, latched: bool = False) -> None:
        """Write any typestore message; the first write on a topic fixes its type and QoS."""
        self.write_raw(topic, msg.__msgtype__, self.typestore.serialize_cdr(msg, msg.__msgtype__),
                       log_time_ns, latched=latched)

    def declare(self, topic: str, msgtype: str, *, latched: bool = False) -> Any:
        """The topic's connection, added now if new: a topic recorded with no message still shows
        in the bag (e.g. the sim's skipped-frame reports: none is news too)."""
        if self._writer is None:
            raise BagError(f"bag {self.path} is closed")
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=self.typestore,
                                               offered_qos_profiles=[_qos(latched)])
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise BagError(f"topic {topic} carries {conn.msgtype}, cannot write {msgtype} to it")
        return conn

    def write_raw(self, topic: str, msgtype: str, cdr: bytes, log_time_ns: int, *,
                  latched: bool = False) -> None:
        """Write serialized CDR as received (rclpy ``raw=True``): the bag holds the exact bytes."""
        conn = self.declare(topic, msgtype, latched=latched)
        self._writer.write(conn, int(log_time_ns), cdr)

    def _header(self, stamp_ns: int, frame_id: str) -> Any:
        sec, nanosec = split_stamp(stamp_ns)
        return self._types["std_msgs/msg/Header"](self._types["builtin_interfaces/msg/Time"](sec, nanosec), frame_id)

    def write_joint_state(self, topic: str, stamp_ns: int, names: Sequence[str], position: Sequence[float],
                          velocity: Sequence[float] = (), effort: Sequence[float] = (), *, frame_id: str = "",
                          log_time_ns: int | None = None) -> None:
        msg = self._types[JOINT_STATE](self._header(stamp_ns, frame_id), list(names),
                                       np.array(position, np.float64), np.array(velocity, np.float64),
                                       np.array(effort, np.float64))
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_pose_array(self, topic: str, stamp_ns: int, poses: Any, *, frame_id: str = "world",
                         log_time_ns: int | None = None) -> None:
        """``poses`` rows in contract.POSE_LAYOUT order (x y z qw qx qy qz)."""
        t = self._types
        rows = np.asarray(poses, np.float64).reshape(-1, POSE_SIZE)
        msg = t[POSE_ARRAY](self._header(stamp_ns, frame_id), [
            t["geometry_msgs/msg/Pose"](t["geometry_msgs/msg/Point"](x, y, z),
                                        t["geometry_msgs/msg/Quaternion"](qx, qy, qz, qw))
            for x, y, z, qw, qx, qy, qz in rows.tolist()])
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_image(self, topic: str, stamp_ns: int, width: int, height: int, data: Any, *,
                    encoding: str = "rgb8", step: int | None = None, frame_id: str = "",
                    log_time_ns: int | None = None) -> None:
        """Writes what it is given, inconsistent sizes included: a recorder does not fix data."""
        pixels = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else \
            np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        step = width * BYTES_PER_PIXEL.get(encoding, 3) if step is None else step
        msg = self._types[IMAGE](self._header(stamp_ns, frame_id), int(height), int(width), encoding, 0,
                                 int(step), pixels)
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_camera_info(self, topic: str, stamp_ns: int, width: int, height: int, k: Sequence[float], *,
                          d: Sequence[float] = (), distortion_model: str = "equidistant",
                          r: Sequence[float] | None = None, p: Sequence[float] | None = None,
                          frame_id: str = "", log_time_ns: int | None = None) -> None:
        t = self._types
        k_arr = np.asarray(k, np.float64).reshape(9)
        r_arr = np.eye(3).reshape(9) if r is None else np.asarray(r, np.float64).reshape(9)
        p_arr = (np.hstack([k_arr.reshape(3, 3), np.zeros((3, 1))]).reshape(12) if p is None
                 else np.asarray(p, np.float64).reshape(12))
        roi = t["sensor_msgs/msg/RegionOfInterest"](0, 0, 0, 0, False)
        msg = t[CAMERA_INFO](self._header(stamp_ns, frame_id), int(height), int(width), distortion_model,
                             np.asarray(d, np.float64), k_arr, r_arr, p_arr, 0, 0, roi)
        self.write(topic, msg, stamp_ns if log_time_ns is None else log_time_ns)

    def write_string(self, topic: str, text: str, *, log_time_ns: int = 0, latched: bool = False) -> None:
        self.write(topic, self._types[STRING](text), log_time_ns, latched=latched)

    def write_spec(self, topic: str, spec: Spec, *, log_time_ns: int = 0) -> None:
        """The sim's spec as latched JSON, as the sim publishes it."""
        self.write_string(topic, spec.to_json(), log_time_ns=log_time_ns, latched=True)


# ----------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class JointSeries:
    """One JointState topic in bag (arrival) order; NaN where a message had no values."""
    topic: str
    names: tuple[str, ...]
    stamp_ns: np.ndarray  # header stamps, int64
    log_time_ns: np.ndarray  # when recorded
    position: np.ndarray  # (n, n_joints)
    velocity: np.ndarray
    effort: np.ndarray

    def __len__(self) -> int:
        return len(self.stamp_ns)


@dataclass(frozen=True)
class PoseSeries:
    """One PoseArray topic in bag order."""

    topic: str
    stamp_ns: np.ndarray
    log_time_ns: np.ndarray
    poses: np.ndarray  # (n, n_objects, 7) in contract.POSE_LAYOUT order

    def __len__(self) -> int:
        return len(self.stamp_ns)


@dataclass(frozen=True)
class CameraInfoSeries:
    """One camera's CameraInfo topic: stamps, and the intrinsics of its first message."""

    topic: str
    camera: str
    stamp_ns: np.ndarray
    width: int  # from the first message
    height: int
    distortion_model: str
    k: tuple[float, ...]
    d: tuple[float, ...]


@dataclass(frozen=True)
class BagData:
    """What read_bag found: the sim's topics as arrays, the spec, and what was recovered."""

    path: Path
    storage: str  # "mcap" or "sqlite3"
    topics: dict[str, str]  # name -> type
    message_counts: dict[str, int]
    joint_states: JointSeries
    ground_truth: JointSeries | None = None  # columns in joint_states' name order when the names agree
    object_poses: PoseSeries | None = None
    images: tuple[ImageMeta, ...] = ()  # all cameras, bag order
    camera_info: dict[str, CameraInfoSeries] = field(default_factory=dict)
    spec: Spec | None = None  # the newest spec in the bag
    specs: tuple[tuple[int, Spec], ...] = ()  # (log time, spec): every spec, live changes included
    run_states: tuple[tuple[int, str], ...] = ()  # (log time, RunState JSON) from robogym_sim/state
    camera_skips: tuple[tuple[int, str], ...] | list | None = None  # (stamp, cameras); None: topic not recorded
    recorder_notes: tuple[int, str] | None = None  # (log time, JSON) the recorder wrote at its end
    end_log_time_ns: int | None = None  # the newest log time of any message read
    recovery: Recovery | None = None  # set when the bag was truncated and read up to the cut
    malformed: dict[str, Malformed] = field(default_factory=dict)  # topic -> messages that did not deserialize
    decoded: dict[str, int] = field(default_factory=dict)  # joint_states and ground truth topics -> messages read


def _parts(topic: str) -> list[str]:
    return [p for p in topic.split("/") if p]


def _ends_with(topic: str, suffix: Sequence[str]) -> bool:
    parts = _parts(topic)
    return parts[-len(suffix):] == list(suffix)


def _describe(topics: dict[str, str], limit: int = 20) -> str:
    items = sorted(topics.items())
    text = ", ".join(f"{_clip(name, 80)} [{_clip(typ, 60)}]" for name, typ in items[:limit]) or "none"
    return text + (f", ... ({len(items)} topics)" if len(items) > limit else "")


def _pick(topics: dict[str, str], suffix: Sequence[str], msgtype: str, *, exclude: Sequence[str] = (),
          required: bool, path: Path, everything: dict[str, str] | None = None) -> str | None:
    hits = [t for t, ty in topics.items() if ty == msgtype and _ends_with(t, suffix)
            and not (exclude and _ends_with(t, exclude))]
    if len(hits) == 1:
        return hits[0]
    want = "/".join(suffix)
    if len(hits) > 1:
        raise BagError(f"{path}: {len(hits)} topics end in {want!r} ({', '.join(sorted(hits))}); "
                       f"pass namespace= to choose one")
    if required:
        wrong = [f"{t} is {ty}" for t, ty in topics.items() if _ends_with(t, suffix) and ty != msgtype
                 and not (exclude and _ends_with(t, exclude))]
        raise BagError(f"{path}: no {want} topic of type {msgtype}" + (f" ({'; '.join(wrong)})" if wrong else "")
                       + f"; the bag has: {_describe(everything if everything is not None else topics)}")
    return None


def _stamp(header: Any) -> int:
    return join_stamp(header.stamp.sec, header.stamp.nanosec)


def _storage_target(path: Path) -> Path:
    if not path.exists():
        raise BagError(f"bag not found: {_clip(path)}")
    if path.is_dir():
        if (path / "metadata.yaml").exists():
            return path
        # A recording killed before it finalised leaves no metadata.yaml; one storage file
        # is still readable on its own (mcap and db3 are self-describing).
        files = sorted(path.glob("*.mcap")) + sorted(path.glob("*.db3"))
        if len(files) == 1:
            return files[0]
        raise BagError(f"{_clip(path)} is not a rosbag2 bag: no metadata.yaml and "
                       f"{len(files)} .mcap/.db3 files (need exactly one)")
    if path.suffix not in (".mcap", ".db3"):
        raise BagError(f"{_clip(path)}: unrecognised file type {path.suffix[:20]!r}; give a bag directory, "
                       f".mcap or .db3 file")
    if path.stat().st_size == 0:
        raise BagError(f"{_clip(path)}: file is empty")
    return path


def _clip(value: Any, limit: int = 200) -> str:
    return clip(str(value), limit)


def _names(names: Sequence[str]) -> str:
    """A list of joint names for a message, bounded in count and length."""
    shown = ", ".join(_clip(n, 40) for n in list(names)[:8])
    return f"[{shown}{', ...' if len(names) > 8 else ''}] ({len(names)})"


def _joint_series(topic: str, msgs: list[tuple[int, Any]], path: Path) -> JointSeries:
    names = tuple(msgs[0][1].name)
    n = len(names)
    order_of = {name: k for k, name in enumerate(names)}
    stamps = np.empty(len(msgs), np.int64)
    logs = np.empty(len(msgs), np.int64)
    data = np.full((3, len(msgs), n), np.nan)
    for i, (log_ns, m) in enumerate(msgs):
        stamps[i] = _stamp(m.header)
        logs[i] = log_ns
        cols = None
        if tuple(m.name) != names:
            # Same joints in another order is legal JointState; other joints are not one series.
            if sorted(m.name) != sorted(names):
                raise BagError(f"{_clip(path)}: {topic} message {i} names joints {_names(m.name)}, "
                               f"the first message named {_names(names)}")
            cols = [order_of[name] for name in m.name]
        for k, values in enumerate((m.position, m.velocity, m.effort)):
            if len(values) == 0:
                continue
            if len(values) != n:
                raise BagError(f"{_clip(path)}: {topic} message {i} has {len(values)} values in a field for {n} "
                               f"joints")
            if cols is None:
                data[k, i] = values
            else:
                data[k, i, cols] = values
    return JointSeries(topic, names, stamps, logs, data[0], data[1], data[2])


def _reorder(series: JointSeries, names: tuple[str, ...]) -> JointSeries:
    if series.names == names or sorted(series.names) != sorted(names):
        return series
    cols = [series.names.index(n) for n in names]
    return JointSeries(series.topic, names, series.stamp_ns, series.log_time_ns, series.position[:, cols],
                       series.velocity[:, cols], series.effort[:, cols])


def align_truth(joint_states: JointSeries, ground_truth: JointSeries) -> JointSeries:
    """Ground truth with its columns in joint_states' joint order, matched by name.

    Other joints, or another count, is not something to compare column by column: a
    BagError says which names disagree.
    """
    if ground_truth.names == joint_states.names:
        return ground_truth
    if sorted(ground_truth.names) != sorted(joint_states.names):
        only_js = [n for n in joint_states.names if n not in ground_truth.names]
        only_gt = [n for n in ground_truth.names if n not in joint_states.names]
        raise BagError(
            f"ground truth ({ground_truth.topic}) names other joints than {joint_states.topic}: "
            f"{len(joint_states.names)} joints vs {len(ground_truth.names)}; only in joint_states "
            f"{_names(only_js)}, only in ground truth {_names(only_gt)}. Joints are matched by name, never by "
            f"column: record both topics from the same sim")
    return _reorder(ground_truth, joint_states.names)


def _camera_name(topic: str) -> str:
    parts = _parts(topic)
    return parts[-2] if len(parts) >= 2 and parts[-1] in ("image_raw", "camera_info") else parts[-1]


@dataclass(frozen=True)
class Recovery:
    """What a truncated bag gave up: read from its complete chunks, the rest unseen."""
    n_messages: int
    message_counts: dict[str, int]
    last_log_time_ns: int | None
    reason: str  # why the normal reader refused the file
    stopped_at: str  # why reading stopped (the cut)

    def describe(self, path: Any) -> str:
        return (f"{_clip(path)} is truncated ({_clip(self.reason, 120)}): recovered {self.n_messages} messages "
                f"from its complete chunks ({', '.join(f'{t} {n}' for t, n in sorted(self.message_counts.items()))})"
                f"; whatever was written after them (the chunk being written when the recording was cut, and "
                f"its summary) could not be read, so the checks cannot see the end of the recording")


class _Source:
    """Topics, counts and messages of one storage file or bag, however it is read."""
    storage: str
    topics: dict[str, str]
    counts: dict[str, int]

    def messages(self, wanted: set[str]) -> Iterable[tuple[str, str, int, bytes]]:
        raise NotImplementedError


class _RosbagsSource(_Source):
    def __init__(self, target: Path, reader: Reader):
        self.reader = reader
        self.storage = "sqlite3" if any(p.suffix == ".db3" for p in _files(target)) else "mcap"
        self.topics = {c.topic: c.msgtype for c in reader.connections}
        self.counts = {}
        for c in reader.connections:
            self.counts[c.topic] = self.counts.get(c.topic, 0) + int(c.msgcount)

    def messages(self, wanted):
        conns = [c for c in self.reader.connections if c.topic in wanted]
        for conn, log_ns, raw in self.reader.messages(connections=conns):
            yield conn.topic, conn.msgtype, log_ns, raw


class _RecoveredMcap(_Source):
    """The readable part of an mcap cut short (e.g. kill -9 while recording), read as a stream."""

    def __init__(self, file: Path, reason: str):
        global McapChannel, McapMessage, McapSchema, McapStreamReader
        # Only a recovery needs the mcap package (a recording needs rosbags alone).
        from mcap.records import Channel as McapChannel
        from mcap.records import Message as McapMessage
        from mcap.records import Schema as McapSchema
        from mcap.stream_reader import StreamReader as McapStreamReader
        self.file = file
        self.storage = "mcap"
        self.reason = reason
        self.topics, self.counts = {}, {}
        self.stopped_at = ""
        self.last_log_ns: int | None = None
        for topic, msgtype, rec in self._messages():
            self.topics[topic] = msgtype
            self.counts[topic] = self.counts.get(topic, 0) + 1
            self.last_log_ns = rec.log_time if self.last_log_ns is None else max(self.last_log_ns, rec.log_time)

    def _records(self):
        self._schemas: dict[int, str] = {}
        size = self.file.stat().st_size
        with open(self.file, "rb") as f:
            reader = McapStreamReader(f, record_size_limit=size)
            try:
                for rec in reader.records:
                    if isinstance(rec, McapSchema):
                        self._schemas[rec.id] = rec.name
                    yield rec
            except Exception as err:  # noqa: BLE001 - the cut: EndOfFile, a short chunk, a bad length
                self.stopped_at = f"{type(err).__name__}: {_clip(err, 120)}"

    def _messages(self):
        """(topic, type, message record) of every message up to the cut, in file order."""
        channels: dict[int, tuple[str, str]] = {}
        for rec in self._records():
            if isinstance(rec, McapChannel):
                channels[rec.id] = (rec.topic, self._schemas.get(rec.schema_id, ""))
            elif isinstance(rec, McapMessage) and rec.channel_id in channels:
                yield (*channels[rec.channel_id], rec)

    def messages(self, wanted):
        for topic, msgtype, rec in self._messages():
            if topic in wanted:
                yield topic, msgtype, rec.log_time, rec.data

    def recovery(self) -> Recovery:
        return Recovery(sum(self.counts.values()), dict(self.counts), self.last_log_ns, self.reason,
                        self.stopped_at)


def _read_failed(path: Path, err: BaseException) -> BagError:
    return BagError(f"cannot read bag {_clip(path)}: {type(err).__name__}: {_clip(err, 200)} -- the file is "
                    f"truncated or corrupt (an interrupted recording can often be repaired with `ros2 bag "
                    f"reindex` or `mcap recover`)", err)


def read_bag(path: str | Path, *, namespace: str | None = None, image_digests: bool = False,
             recover: bool = False) -> BagData:
    """Read the sim's topics from a rosbag2 bag (directory, .mcap or .db3).

    Topics are matched by name suffix and type, so namespaced recordings work; with
    several candidates, ``namespace`` (a topic prefix) chooses. Image pixels are not
    kept; ``image_digests`` hashes them (about 1 ms per 640x480 frame, off by default).
    ``recover``: an mcap file that the normal reader refuses (cut short by a kill -9 while
    recording) is read as a stream up to the cut; ``BagData.recovery`` then says what was read.
    """
    path = Path(path)
    target = _storage_target(path)
    try:
        with Reader(target) as reader:
            return _read(path, _RosbagsSource(target, reader), namespace, image_digests)
    except BagError:
        raise
    except Exception as err:  # rosbags, sqlite (apsw), zstd/lz4, struct: all mean the same to a user
        failure = err
    mcap = target if target.suffix == ".mcap" else next(iter(sorted(target.glob("*.mcap"))), None) \
        if target.is_dir() else None
    if not recover or mcap is None:
        raise _read_failed(path, failure) from None
    try:
        source = _RecoveredMcap(mcap, f"{type(failure).__name__}: {failure}")
    except ImportError:
        raise BagError(f"cannot read bag {_clip(path)}: {type(failure).__name__}: {_clip(failure, 200)}; "
                       f"recovering a truncated mcap needs the mcap package (pip install mcap)", failure) from None
    if not source.counts:
        raise BagError(f"cannot read bag {_clip(path)}: {type(failure).__name__}: {_clip(failure, 200)} -- the "
                       f"file is truncated or corrupt, and reading it as a stream recovered no message either "
                       f"({source.stopped_at or 'no records'})", failure) from None
    try:
        data = _read(path, source, namespace, image_digests)
    except BagError:
        raise
    except Exception as err:  # noqa: BLE001 - a recovered message that does not deserialize
        raise _read_failed(path, err) from None
    return replace(data, recovery=source.recovery())


def _read(path: Path, source: _Source, namespace: str | None, image_digests: bool) -> BagData:
    typestore = get_typestore(TYPESTORE)
    all_topics = dict(source.topics)
    topics = dict(all_topics)
    if namespace is not None:
        prefix = "/" + namespace.strip("/") + "/"
        topics = {t: ty for t, ty in topics.items() if ("/" + t.lstrip("/")).startswith(prefix)}
    js = _pick(topics, ["joint_states"], JOINT_STATE, exclude=["ground_truth", "joint_states"],
               required=True, path=path, everything=all_topics)
    gt = _pick(topics, ["ground_truth", "joint_states"], JOINT_STATE, required=False, path=path)
    op = _pick(topics, ["ground_truth", "object_poses"], POSE_ARRAY, required=False, path=path)
    spec_topic = (_pick(topics, ["robogym_sim", "spec"], STRING, required=False, path=path)
                  or _pick(topics, ["spec"], STRING, required=False, path=path))
    state_topic = _pick(topics, ["robogym_sim", "state"], STRING, required=False, path=path)
    skips_topic = _pick(topics, ["cameras", "skipped"], HEADER, required=False, path=path)
    notes_topic = _pick(topics, ["robogym_recorder", "recording"], STRING, required=False, path=path)
    wanted = {js, gt, op, spec_topic, state_topic, skips_topic, notes_topic} | {
        t for t, ty in topics.items() if ty in (IMAGE, CAMERA_INFO)}
    msgs: dict[str, list[tuple[int, Any]]] = {t: [] for t in wanted if t}
    images: list[ImageMeta] = []
    malformed: dict[str, Malformed] = {}
    for topic, msgtype, log_ns, raw in source.messages({t for t in wanted if t}):
        try:
            msg = typestore.deserialize_cdr(raw, msgtype)
        except Exception as err:  # noqa: BLE001 - a message that is not its type: counted, judged as lost
            malformed.setdefault(topic, Malformed()).add(f"{type(err).__name__}: {err}")
            continue
        if msgtype == IMAGE:
            # Pixels are dropped here: a long recording of them would not fit in memory.
            images.append(ImageMeta(_stamp(msg.header), int(msg.width), int(msg.height), int(msg.step),
                                    str(msg.encoding), int(len(msg.data)), _camera_name(topic),
                                    digest(msg.data) if image_digests else None))
        else:
            msgs[topic].append((log_ns, msg))
    if not msgs[js] and js in malformed:
        raise UndecodableBag(f"{_clip(path)}: no message on {js} could be decoded", malformed)
    if not msgs[js]:
        raise BagError(f"{_clip(path)}: topic {js} has no messages; the bag has: {_describe(all_topics)}")
    joint_states = _joint_series(js, msgs[js], path)
    ground_truth = _reorder(_joint_series(gt, msgs[gt], path), joint_states.names) if gt and msgs[gt] else None
    poses = None
    if op and msgs[op]:
        rows = [[_pose_row(p) for p in m.poses] for _, m in msgs[op]]
        if len({len(r) for r in rows}) != 1:
            raise BagError(f"{_clip(path)}: {op} changes its number of poses between messages")
        poses = PoseSeries(op, np.array([_stamp(m.header) for _, m in msgs[op]], np.int64),
                           np.array([t for t, _ in msgs[op]], np.int64), np.array(rows, np.float64))
    infos = {}
    for topic, ty in topics.items():
        if ty == CAMERA_INFO and msgs.get(topic):
            first = msgs[topic][0][1]
            cam = _camera_name(topic)
            infos[cam] = CameraInfoSeries(topic, cam, np.array([_stamp(m.header) for _, m in msgs[topic]], np.int64),
                                          int(first.width), int(first.height), str(first.distortion_model),
                                          tuple(float(v) for v in first.k), tuple(float(v) for v in first.d))
    specs = []
    for log_ns, m in msgs[spec_topic] if spec_topic else ():
        try:
            specs.append((log_ns, Spec.from_json(m.data)))
        except ValueError as err:
            raise BagError(f"{_clip(path)}: spec on {spec_topic} {str(err).removeprefix('spec ')}", err) from None
    spec = specs[-1][1] if specs else None
    states = [(log_ns, m.data) for log_ns, m in msgs[state_topic]] if state_topic else []
    skips = ([(_stamp(m), str(m.frame_id)[:4096]) for _, m in msgs[skips_topic]]  # a Header: stamp, frame_id
             if skips_topic else None)
    notes = msgs[notes_topic][-1] if notes_topic and msgs[notes_topic] else None
    return BagData(path, source.storage, all_topics, dict(source.counts), joint_states, ground_truth, poses,
                   tuple(images), infos, spec, specs=tuple(specs), run_states=tuple(states), camera_skips=skips,
                   recorder_notes=(notes[0], notes[1].data) if notes else None,
                   end_log_time_ns=_last_log_time(msgs), malformed=malformed,
                   decoded={t: len(m) for t, m in msgs.items() if t in (js, gt)})


def _last_log_time(msgs: dict[str, list[tuple[int, Any]]]) -> int | None:
    times = [m[-1][0] for m in msgs.values() if m]
    return max(times) if times else None


def _pose_row(pose: Any) -> list[float]:
    """A geometry_msgs/Pose as a row in contract.POSE_LAYOUT order."""
    p, q = pose.position, pose.orientation
    row = {"x": p.x, "y": p.y, "z": p.z, "qw": q.w, "qx": q.x, "qy": q.y, "qz": q.z}
    return [row[k] for k in POSE_LAYOUT]


def _files(target: Path) -> Iterable[Path]:
    return [target] if target.is_file() else list(target.iterdir())
