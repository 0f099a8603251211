"""A recording cut short, made whole: a finalised copy of what can be read up to the cut.

    robogym_recorder --bag robogym_bag_cut --repair robogym_bag_fixed

The copy is a new rosbag2 bag (mcap with its summary and index, and ``metadata.yaml``) holding
every message recovered, byte for byte, with its log time, topic type, message definition and
offered QoS as recorded: ``ros2 bag info``/``play``, rosbags' Reader and
``mcap_ros2.reader.read_ros2_messages`` open it. The cut file is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.metadata import parse_qos
from rosbags.typesys import get_typestore

from robogym_ros.checks import clip
from robogym_ros.recorder.bag.format import TYPESTORE, BagError
from robogym_ros.recorder.bag.reader import cut_recording
from robogym_ros.recorder.bag.recovery import RecoveredChannel, Recovery


@dataclass(frozen=True)
class Repair:
    """What the finalised copy holds."""
    path: Path
    recovery: Recovery  # what was read from the cut file
    message_counts: dict[str, int]  # topic -> messages written to the copy
    skipped_topics: dict[str, str]  # topic -> why it could not be copied

    def describe(self) -> str:
        n = sum(self.message_counts.values())
        skipped = "".join(f"; left out {clip(t, 80)}: {why}" for t, why in sorted(self.skipped_topics.items()))
        return f"repaired copy: {self.path} ({n} messages on {len(self.message_counts)} topics, finalised){skipped}"


def repair_bag(source: str | Path, destination: str | Path) -> Repair:
    """Write a finalised copy of the recoverable part of ``source`` to ``destination`` (a new folder).

    BagError, and nothing written, when the destination exists, the source is complete (it needs
    no repair), is not an mcap recording, or holds no recoverable message."""
    dst = Path(destination)
    if dst.exists():
        raise BagError(f"--repair {clip(str(dst))}: exists already; a bag is never overwritten")
    if not dst.parent.is_dir():
        raise BagError(f"--repair {clip(str(dst))}: folder {clip(str(dst.parent))} does not exist")
    cut = cut_recording(source)
    if cut is None:
        raise BagError(f"{clip(str(source))} is complete (rosbag2 readers open it): nothing to repair")
    typestore = get_typestore(TYPESTORE)
    counts: dict[str, int] = {}
    skipped: dict[str, str] = {}
    writer = Writer(dst, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
    try:
        writer.open()
    except Exception as err:  # noqa: BLE001 - permissions, a path that cannot be a folder
        raise BagError(f"--repair {clip(str(dst))}: cannot create the bag: {clip(err, 200)}", err) from None
    connections = {}
    try:
        for channel, rec in cut.records():
            topic = channel.topic
            if topic in skipped:
                continue
            conn = connections.get(topic)
            if conn is None:
                try:
                    conn = connections[topic] = writer.add_connection(
                        topic, channel.msgtype, offered_qos_profiles=_qos(channel), **_definition(channel, typestore))
                except (KeyError, ValueError, TypeError) as err:
                    skipped[topic] = f"no message definition for {clip(channel.msgtype, 80)} ({clip(err, 80)})"
                    continue
            writer.write(conn, int(rec.log_time), bytes(rec.data))
            counts[topic] = counts.get(topic, 0) + 1
    finally:
        writer.close()  # finalised in every case: summary, index, metadata.yaml
    return Repair(dst, cut.recovery(), counts, skipped)


def _qos(channel: RecoveredChannel) -> list:
    """The offered QoS the recorder wrote for the topic (latched topics must replay as latched)."""
    try:
        return parse_qos(channel.metadata.get("offered_qos_profiles", ""))
    except Exception:  # noqa: BLE001 - unreadable QoS YAML: the rosbag2 default (none given)
        return []


def _definition(channel: RecoveredChannel, typestore) -> dict:
    """How the copy declares the type: the definition as recorded where it came with its hash,
    else the Kilted typestore's (the sim's and the recorder's types are all standard)."""
    recorded_hash = channel.metadata.get("topic_type_hash", "")
    if channel.schema_text and channel.schema_encoding in ("ros2msg", "ros2idl") and recorded_hash:
        return {"msgdef": channel.schema_text, "rihs01": recorded_hash}
    if channel.msgtype not in typestore.fielddefs:
        raise KeyError(f"{channel.msgtype} is not a type the typestore knows and the file has no hash for it")
    return {"typestore": typestore}
