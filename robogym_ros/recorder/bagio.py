"""rosbag2 I/O with ``rosbags`` (pure Python: no ROS install needed to write or check a bag).

The names here are the recorder's bag API; each lives in the module of its role:

- :mod:`~robogym_ros.recorder.bagformat`: message type names, the typestore, QoS, :class:`BagError`;
- :mod:`~robogym_ros.recorder.bagwriter`: :class:`BagWriter`;
- :mod:`~robogym_ros.recorder.bagseries`: :class:`BagData` and its series, :func:`align_truth`;
- :mod:`~robogym_ros.recorder.bagreader`: :func:`read_bag`, :func:`cut_recording`.
"""
from __future__ import annotations

from robogym_ros.recorder.bagformat import (
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
from robogym_ros.recorder.bagreader import cut_recording, read_bag
from robogym_ros.recorder.bagseries import BagData, CameraInfoSeries, JointSeries, PoseSeries, align_truth
from robogym_ros.recorder.bagwriter import BagWriter

__all__ = ["CAMERA_INFO", "HEADER", "IMAGE", "JOINT_STATE", "POSE_ARRAY", "STRING", "TYPESTORE", "BagData",
           "BagError", "BagWriter", "CameraInfoSeries", "JointSeries", "PoseSeries", "UndecodableBag",
           "align_truth", "cut_recording", "read_bag"]
