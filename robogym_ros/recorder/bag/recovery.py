"""The readable part of an mcap recording cut short (a recorder killed while writing, kill -9).

mcap writes its index and summary at the end: a file cut short has none, and seeking readers
(rosbags, ``mcap_ros2.reader``, ``ros2 bag``) refuse it or read nothing. Its complete records
are still there in file order, so a stream reader gets every message up to the cut. Only this
needs the ``mcap`` package, imported on first use (a recording needs rosbags alone).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from robogym_ros.checks import clip


@dataclass(frozen=True)
class Recovery:
    """What a truncated bag gave up: read from its complete chunks, the rest unseen."""
    n_messages: int
    message_counts: dict[str, int]
    last_log_time_ns: int | None
    reason: str  # why the normal reader refused the file
    stopped_at: str  # why reading stopped (the cut)

    def describe(self, path: Any) -> str:
        return (f"{clip(str(path))} is truncated ({clip(self.reason, 120)}): recovered {self.n_messages} messages "
                f"from its complete chunks ({', '.join(f'{t} {n}' for t, n in sorted(self.message_counts.items()))})"
                f"; whatever was written after them (the chunk being written when the recording was cut, and "
                f"its summary) could not be read, so the checks cannot see the end of the recording. "
                f"`robogym_recorder --bag {clip(str(path))} --repair NEW_BAG` writes a finalised copy that "
                f"ros2 bag and other readers open")


@dataclass(frozen=True)
class RecoveredChannel:
    """A topic as the cut file declared it: its type, its definition and its channel metadata."""
    topic: str
    msgtype: str
    schema_encoding: str  # "ros2msg" or "ros2idl" from rosbag2; "" if the schema record is missing
    schema_text: str  # the message definition as recorded
    metadata: dict[str, str]  # rosbag2 keeps offered_qos_profiles (YAML) and topic_type_hash here


class RecoveredMcap:
    """Topics, counts and messages of an mcap cut short, read as a stream up to the cut."""

    def __init__(self, file: Path, reason: str):
        self.file = Path(file)
        self.storage = "mcap"
        self.reason = reason
        self.topics: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.channels: dict[str, RecoveredChannel] = {}  # by topic; the first channel of a topic
        self.stopped_at = ""
        self.last_log_ns: int | None = None
        for channel, rec in self.records():
            self.topics[channel.topic] = channel.msgtype
            self.channels.setdefault(channel.topic, channel)
            self.counts[channel.topic] = self.counts.get(channel.topic, 0) + 1
            self.last_log_ns = rec.log_time if self.last_log_ns is None else max(self.last_log_ns, rec.log_time)

    def records(self) -> Iterator[tuple[RecoveredChannel, Any]]:
        """(channel, mcap message record) of every message up to the cut, in file order."""
        from mcap.records import Channel, Message, Schema
        from mcap.stream_reader import StreamReader
        schemas: dict[int, tuple[str, str, str]] = {}
        channels: dict[int, RecoveredChannel] = {}
        with open(self.file, "rb") as f:
            reader = StreamReader(f, record_size_limit=self.file.stat().st_size)
            try:
                for rec in reader.records:
                    if isinstance(rec, Schema):
                        schemas[rec.id] = (rec.name, rec.encoding, bytes(rec.data).decode("utf-8", "replace"))
                    elif isinstance(rec, Channel):
                        name, encoding, text = schemas.get(rec.schema_id, ("", "", ""))
                        channels[rec.id] = RecoveredChannel(rec.topic, name, encoding, text, dict(rec.metadata))
                    elif isinstance(rec, Message) and rec.channel_id in channels:
                        yield channels[rec.channel_id], rec
            except Exception as err:  # noqa: BLE001 - the cut: EndOfFile, a short chunk, a bad length
                self.stopped_at = f"{type(err).__name__}: {clip(err, 120)}"

    def messages(self, wanted) -> Iterator[tuple[str, str, int, bytes]]:
        for channel, rec in self.records():
            if channel.topic in wanted:
                yield channel.topic, channel.msgtype, rec.log_time, rec.data

    def recovery(self) -> Recovery:
        return Recovery(sum(self.counts.values()), dict(self.counts), self.last_log_ns, self.reason,
                        self.stopped_at)
