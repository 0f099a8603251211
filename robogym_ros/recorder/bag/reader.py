"""Reading the sim's topics from a rosbag2 bag with ``rosbags``: bags from ``ros2 bag record``
of the sim's topics or from :class:`~robogym_ros.recorder.bag.writer.BagWriter`, in mcap or
sqlite3 storage, and (asked to) an mcap cut short by a kill, up to the cut.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import get_typestore

from robogym_ros.checks import ImageMeta, clip, digest
from robogym_ros.contract import Spec
from robogym_ros.recorder.bag.format import (
    CAMERA_INFO,
    HEADER,
    IMAGE,
    JOINT_STATE,
    POSE_ARRAY,
    STRING,
    TYPESTORE,
    BagError,
    UndecodableBag,
)
from robogym_ros.recorder.bag.recovery import RecoveredMcap
from robogym_ros.recorder.bag.series import (
    BagData,
    CameraInfoSeries,
    PoseSeries,
    camera_name,
    ends_with,
    header_stamp_ns,
    joint_series,
    pose_row,
    reorder,
)
from robogym_ros.recorder.decoding import Malformed


def _describe(topics: dict[str, str], limit: int = 20) -> str:
    items = sorted(topics.items())
    text = ", ".join(f"{clip(name, 80)} [{clip(typ, 60)}]" for name, typ in items[:limit]) or "none"
    return text + (f", ... ({len(items)} topics)" if len(items) > limit else "")


def _pick(topics: dict[str, str], suffix: Sequence[str], msgtype: str, *, exclude: Sequence[str] = (),
          required: bool, path: Path, everything: dict[str, str] | None = None) -> str | None:
    hits = [t for t, ty in topics.items() if ty == msgtype and ends_with(t, suffix)
            and not (exclude and ends_with(t, exclude))]
    if len(hits) == 1:
        return hits[0]
    want = "/".join(suffix)
    if len(hits) > 1:
        raise BagError(f"{path}: {len(hits)} topics end in {want!r} ({', '.join(sorted(hits))}); "
                       f"pass namespace= to choose one")
    if required:
        wrong = [f"{t} is {ty}" for t, ty in topics.items() if ends_with(t, suffix) and ty != msgtype
                 and not (exclude and ends_with(t, exclude))]
        raise BagError(f"{path}: no {want} topic of type {msgtype}" + (f" ({'; '.join(wrong)})" if wrong else "")
                       + f"; the bag has: {_describe(everything if everything is not None else topics)}")
    return None


def storage_target(path: Path) -> Path:
    if not path.exists():
        raise BagError(f"bag not found: {clip(path)}")
    if path.is_dir():
        if (path / "metadata.yaml").exists():
            return path
        # A recording killed before it finalised leaves no metadata.yaml; one storage file
        # is still readable on its own (mcap and db3 are self-describing).
        files = sorted(path.glob("*.mcap")) + sorted(path.glob("*.db3"))
        if len(files) == 1:
            return files[0]
        raise BagError(f"{clip(path)} is not a rosbag2 bag: no metadata.yaml and "
                       f"{len(files)} .mcap/.db3 files (need exactly one)")
    if path.suffix not in (".mcap", ".db3"):
        raise BagError(f"{clip(path)}: unrecognised file type {path.suffix[:20]!r}; give a bag directory, "
                       f".mcap or .db3 file")
    if path.stat().st_size == 0:
        raise BagError(f"{clip(path)}: file is empty")
    return path


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


def _read_failed(path: Path, err: BaseException) -> BagError:
    return BagError(f"cannot read bag {clip(path)}: {type(err).__name__}: {clip(err, 200)} -- the file is "
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
    target = storage_target(path)
    try:
        with Reader(target) as reader:
            return _read(path, _RosbagsSource(target, reader), namespace, image_digests)
    except BagError:
        raise
    except Exception as err:  # rosbags, sqlite (apsw), zstd/lz4, struct: all mean the same to a user
        failure = err
    if not recover:
        raise _read_failed(path, failure) from None
    source = _recovered(path, target, failure)
    try:
        data = _read(path, source, namespace, image_digests)
    except BagError:
        raise
    except Exception as err:  # noqa: BLE001 - a recovered message that does not deserialize
        raise _read_failed(path, err) from None
    return replace(data, recovery=source.recovery())


def cut_recording(path: str | Path) -> RecoveredMcap | None:
    """None if the bag reads normally; else the part of its mcap that a stream reader gets up to
    the cut (BagError if the bag is missing, not mcap, or not one message can be recovered)."""
    path = Path(path)
    target = storage_target(path)
    try:
        with Reader(target):
            return None
    except Exception as err:  # noqa: BLE001 - refused: truncated, corrupt or no summary
        return _recovered(path, target, err)


def _recovered(path: Path, target: Path, failure: BaseException) -> RecoveredMcap:
    mcap = target if target.suffix == ".mcap" else next(iter(sorted(target.glob("*.mcap"))), None) \
        if target.is_dir() else None
    if mcap is None:
        raise _read_failed(path, failure) from None
    try:
        source = RecoveredMcap(mcap, f"{type(failure).__name__}: {failure}")
    except ImportError:
        raise BagError(f"cannot read bag {clip(path)}: {type(failure).__name__}: {clip(failure, 200)}; "
                       f"recovering a truncated mcap needs the mcap package (pip install mcap)", failure) from None
    if not source.counts:
        raise BagError(f"cannot read bag {clip(path)}: {type(failure).__name__}: {clip(failure, 200)} -- the "
                       f"file is truncated or corrupt, and reading it as a stream recovered no message either "
                       f"({source.stopped_at or 'no records'})", failure) from None
    return source


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
            images.append(ImageMeta(header_stamp_ns(msg.header), int(msg.width), int(msg.height), int(msg.step),
                                    str(msg.encoding), int(len(msg.data)), camera_name(topic),
                                    digest(msg.data) if image_digests else None))
        else:
            msgs[topic].append((log_ns, msg))
    if not msgs[js] and js in malformed:
        raise UndecodableBag(f"{clip(path)}: no message on {js} could be decoded", malformed)
    if not msgs[js]:
        raise BagError(f"{clip(path)}: topic {js} has no messages; the bag has: {_describe(all_topics)}")
    joint_states = joint_series(js, msgs[js], path)
    ground_truth = reorder(joint_series(gt, msgs[gt], path), joint_states.names) if gt and msgs[gt] else None
    poses = None
    if op and msgs[op]:
        rows = [[pose_row(p) for p in m.poses] for _, m in msgs[op]]
        if len({len(r) for r in rows}) != 1:
            raise BagError(f"{clip(path)}: {op} changes its number of poses between messages")
        poses = PoseSeries(op, np.array([header_stamp_ns(m.header) for _, m in msgs[op]], np.int64),
                           np.array([t for t, _ in msgs[op]], np.int64), np.array(rows, np.float64))
    infos = {}
    for topic, ty in topics.items():
        if ty == CAMERA_INFO and msgs.get(topic):
            first = msgs[topic][0][1]
            cam = camera_name(topic)
            stamps = np.array([header_stamp_ns(m.header) for _, m in msgs[topic]], np.int64)
            infos[cam] = CameraInfoSeries(topic, cam, stamps,
                                          int(first.width), int(first.height), str(first.distortion_model),
                                          tuple(float(v) for v in first.k), tuple(float(v) for v in first.d))
    specs = []
    for log_ns, m in msgs[spec_topic] if spec_topic else ():
        try:
            specs.append((log_ns, Spec.from_json(m.data)))
        except ValueError as err:
            raise BagError(f"{clip(path)}: spec on {spec_topic} {str(err).removeprefix('spec ')}", err) from None
    spec = specs[-1][1] if specs else None
    states = [(log_ns, m.data) for log_ns, m in msgs[state_topic]] if state_topic else []
    skips = ([(header_stamp_ns(m), str(m.frame_id)[:4096]) for _, m in msgs[skips_topic]]  # a Header: stamp, frame_id
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


def _files(target: Path) -> Iterable[Path]:
    return [target] if target.is_file() else list(target.iterdir())
