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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robogym_ros.checks import BYTES_PER_PIXEL, ImageMeta, digest
from robogym_ros.contract import POSE_LAYOUT, POSE_SIZE, SPEC_QOS, STREAM_QOS, Spec, join_stamp, split_stamp

JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_ARRAY = "geometry_msgs/msg/PoseArray"
IMAGE = "sensor_msgs/msg/Image"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
STRING = "std_msgs/msg/String"
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

    def write_raw(self, topic: str, msgtype: str, cdr: bytes, log_time_ns: int, *,
                  latched: bool = False) -> None:
        """Write serialized CDR as received (rclpy ``raw=True``): the bag holds the exact bytes."""
        if self._writer is None:
            raise BagError(f"bag {self.path} is closed")
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._writer.add_connection(topic, msgtype, typestore=self.typestore,
                                               offered_qos_profiles=[_qos(latched)])
            self._connections[topic] = conn
        elif conn.msgtype != msgtype:
            raise BagError(f"topic {topic} carries {conn.msgtype}, cannot write {msgtype} to it")
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
    topic: str
    stamp_ns: np.ndarray
    log_time_ns: np.ndarray
    poses: np.ndarray  # (n, n_objects, 7) in contract.POSE_LAYOUT order

    def __len__(self) -> int:
        return len(self.stamp_ns)


@dataclass(frozen=True)
class CameraInfoSeries:
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
    path: Path
    storage: str  # "mcap" or "sqlite3"
    topics: dict[str, str]  # name -> type
    message_counts: dict[str, int]
    joint_states: JointSeries
    ground_truth: JointSeries | None = None  # columns in joint_states' name order when the names agree
    object_poses: PoseSeries | None = None
    images: tuple[ImageMeta, ...] = ()  # all cameras, bag order
    camera_info: dict[str, CameraInfoSeries] = field(default_factory=dict)
    spec: Spec | None = None


def _parts(topic: str) -> list[str]:
    return [p for p in topic.split("/") if p]


def _ends_with(topic: str, suffix: Sequence[str]) -> bool:
    parts = _parts(topic)
    return parts[-len(suffix):] == list(suffix)


def _describe(topics: dict[str, str]) -> str:
    return ", ".join(f"{name} [{typ}]" for name, typ in sorted(topics.items())) or "none"


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
        raise BagError(f"bag not found: {path}")
    if path.is_dir():
        if (path / "metadata.yaml").exists():
            return path
        # A recording killed before it finalised leaves no metadata.yaml; one storage file
        # is still readable on its own (mcap and db3 are self-describing).
        files = sorted(path.glob("*.mcap")) + sorted(path.glob("*.db3"))
        if len(files) == 1:
            return files[0]
        raise BagError(f"{path} is not a rosbag2 bag: no metadata.yaml and "
                       f"{len(files)} .mcap/.db3 files (need exactly one)")
    if path.suffix not in (".mcap", ".db3"):
        raise BagError(f"{path}: unrecognised file type {path.suffix!r}; give a bag directory, .mcap or .db3 file")
    if path.stat().st_size == 0:
        raise BagError(f"{path}: file is empty")
    return path


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
                raise BagError(f"{path}: {topic} message {i} names joints {list(m.name)}, "
                               f"the first message named {list(names)}")
            cols = [order_of[name] for name in m.name]
        for k, values in enumerate((m.position, m.velocity, m.effort)):
            if len(values) == 0:
                continue
            if len(values) != n:
                raise BagError(f"{path}: {topic} message {i} has {len(values)} values in a field for {n} joints")
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


def _camera_name(topic: str) -> str:
    parts = _parts(topic)
    return parts[-2] if len(parts) >= 2 and parts[-1] in ("image_raw", "camera_info") else parts[-1]


def read_bag(path: str | Path, *, namespace: str | None = None, image_digests: bool = False) -> BagData:
    """Read the sim's topics from a rosbag2 bag (directory, .mcap or .db3).

    Topics are matched by name suffix and type, so namespaced recordings work; with
    several candidates, ``namespace`` (a topic prefix) chooses. Image pixels are not
    kept; ``image_digests`` hashes them (about 1 ms per 640x480 frame, off by default).
    """
    path = Path(path)
    target = _storage_target(path)
    typestore = get_typestore(TYPESTORE)
    try:
        with Reader(target) as reader:
            storage = "sqlite3" if any(p.suffix == ".db3" for p in _files(target)) else "mcap"
            all_topics = {c.topic: c.msgtype for c in reader.connections}
            counts: dict[str, int] = {}
            for c in reader.connections:
                counts[c.topic] = counts.get(c.topic, 0) + int(c.msgcount)
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
            wanted = {js, gt, op, spec_topic} | {t for t, ty in topics.items() if ty in (IMAGE, CAMERA_INFO)}
            conns = [c for c in reader.connections if c.topic in wanted]
            msgs: dict[str, list[tuple[int, Any]]] = {t: [] for t in wanted if t}
            images: list[ImageMeta] = []
            for conn, log_ns, raw in reader.messages(connections=conns):
                msg = typestore.deserialize_cdr(raw, conn.msgtype)
                if conn.msgtype == IMAGE:
                    # Pixels are dropped here: a long recording of them would not fit in memory.
                    images.append(ImageMeta(_stamp(msg.header), int(msg.width), int(msg.height), int(msg.step),
                                            str(msg.encoding), int(len(msg.data)), _camera_name(conn.topic),
                                            digest(msg.data) if image_digests else None))
                else:
                    msgs[conn.topic].append((log_ns, msg))
    except BagError:
        raise
    except Exception as err:  # rosbags, sqlite (apsw), zstd/lz4, struct: all mean the same to a user
        raise BagError(f"cannot read bag {path}: {type(err).__name__}: {err} -- the file is truncated or "
                       f"corrupt (an interrupted recording can often be repaired with `ros2 bag reindex` "
                       f"or `mcap recover`)", err) from None

    if not msgs[js]:
        raise BagError(f"{path}: topic {js} has no messages; the bag has: {_describe(all_topics)}")
    joint_states = _joint_series(js, msgs[js], path)
    ground_truth = _reorder(_joint_series(gt, msgs[gt], path), joint_states.names) if gt and msgs[gt] else None
    poses = None
    if op and msgs[op]:
        rows = [[_pose_row(p) for p in m.poses] for _, m in msgs[op]]
        if len({len(r) for r in rows}) != 1:
            raise BagError(f"{path}: {op} changes its number of poses between messages")
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
    spec = None
    if spec_topic and msgs[spec_topic]:
        text = msgs[spec_topic][-1][1].data
        try:
            spec = Spec.from_json(text)
        except ValueError as err:
            raise BagError(f"{path}: spec on {spec_topic} {str(err).removeprefix('spec ')}", err) from None
    return BagData(path, storage, all_topics, counts, joint_states, ground_truth, poses, tuple(images), infos, spec)


def _pose_row(pose: Any) -> list[float]:
    """A geometry_msgs/Pose as a row in contract.POSE_LAYOUT order."""
    p, q = pose.position, pose.orientation
    row = {"x": p.x, "y": p.y, "z": p.z, "qw": q.w, "qx": q.x, "qy": q.y, "qz": q.z}
    return [row[k] for k in POSE_LAYOUT]


def _files(target: Path) -> Iterable[Path]:
    return [target] if target.is_file() else list(target.iterdir())
