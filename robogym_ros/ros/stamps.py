"""Message stamps: sim time in integer nanoseconds (contract) as builtin_interfaces/Time and back."""
from __future__ import annotations

from builtin_interfaces.msg import Time

from robogym_ros.contract import join_stamp, split_stamp


def stamp_msg(stamp_ns: int) -> Time:
    sec, nanosec = split_stamp(stamp_ns)
    return Time(sec=sec, nanosec=nanosec)


def stamp_ns(stamp: Time) -> int:
    return join_stamp(stamp.sec, stamp.nanosec)
