"""What the sim's bags are made of: message type names, the typestore, the QoS a topic is
recorded with, and the errors that bag reading and writing raise.

Bad input raises :class:`BagError` with a message that says what is wrong; the
underlying exception is kept as ``.cause`` rather than chained, so a command line shows
one clear line instead of a traceback from deep inside a reader.
"""
from __future__ import annotations

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin
from rosbags.typesys import Stores

from robogym_ros.contract import SPEC_QOS, STREAM_QOS
from robogym_ros.recorder.decoding import Malformed

JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_ARRAY = "geometry_msgs/msg/PoseArray"
IMAGE = "sensor_msgs/msg/Image"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
STRING = "std_msgs/msg/String"
HEADER = "std_msgs/msg/Header"
TYPESTORE = Stores.ROS2_KILTED

STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
_UNSPECIFIED = QosTime(0, 0)  # rmw: "use the default", i.e. infinite deadline/lifespan/lease


def recorded_qos(latched: bool) -> Qos:
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
