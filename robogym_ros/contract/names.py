"""Names, stamps, the pose layout and QoS every tier shares (standard library only).

Topic names are relative (they follow the namespace) except ``/clock`` and
``/diagnostics``, whose absolute names are the conventions ``use_sim_time`` and the
diagnostic aggregator rely on.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

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



def int_or_none(value: Any) -> int | None:
    """A JSON field that may be absent (None) as an int."""
    return None if value is None else int(value)
