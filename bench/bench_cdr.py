"""Cost per message of turning a serialized JointState into numbers (figures only).

    python bench/bench_cdr.py [--joints 12] [--batches 21] [--batch 2000]

The same bytes (as DDS delivers them: CDR, zero padding) through:
  rclpy        rclpy.serialization.deserialize_message -> JointState (the typed subscription's work)
  rosbags      rosbags' typestore.deserialize_cdr -> its JointState dataclass
  cdr full     robogym_ros.wire.cdr.decode_joint_state -> names, stamp, three float64 arrays
  cdr into     JointStateDecoder.decode_into: stamp + a (3, n) row of a preallocated ring
and, as the recorder's store would do it after rclpy, rclpy + copying position/velocity/effort
into the same row. Medians of interleaved batches (so load hits all alike), in us per message.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rclpy.serialization import deserialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState

from robogym_ros.wire.decode import JointStateDecoder, decode_joint_state

TYPE = "sensor_msgs/msg/JointState"


def wire_bytes(typestore, n: int, seed: int) -> tuple[list[str], bytes]:
    """A JointState of ``n`` joints serialized as DDS delivers it (zero padding, exact length)."""
    rng = np.random.default_rng(seed)
    names = [f"{side}_{j}" for side in ("left", "right") for j in
             ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]
    names = (names * (n // len(names) + 1))[:n]
    names = [f"{name}{i // 12 or ''}" for i, name in enumerate(names)]
    t = typestore.types
    msg = t[TYPE](header=t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=12, nanosec=34),
                                                  frame_id=""),
                  name=names, position=rng.normal(size=n), velocity=rng.normal(size=n),
                  effort=rng.normal(size=n))
    return names, bytes(typestore.serialize_cdr(msg, TYPE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--joints", type=int, nargs="+", default=[12, 1, 40])
    ap.add_argument("--batches", type=int, default=21)
    ap.add_argument("--batch", type=int, default=2000)
    args = ap.parse_args()
    typestore = get_typestore(Stores.ROS2_KILTED)
    print(f"bench_cdr: JointState bytes as DDS delivers them; median of {args.batches} interleaved "
          f"batches of {args.batch} [us per message]")
    print(f"{'joints':>7s} {'bytes':>6s} {'rclpy':>8s} {'rosbags':>8s} {'cdr full':>9s} {'cdr into':>9s} "
          f"{'rclpy+copy':>11s}  rclpy/into  rosbags/into")
    for n in args.joints:
        names, data = wire_bytes(typestore, n, n)
        ref = deserialize_message(data, JointState)
        decoder = JointStateDecoder(names)
        ring = np.empty((args.batch, 3, n))
        assert decoder.decode_into(data, ring[0]) == 12 * 10**9 + 34
        assert ring[0, 0].tolist() == list(ref.position)

        def rclpy_only():
            for _ in range(args.batch):
                deserialize_message(data, JointState)

        def rosbags_only():
            deser = typestore.deserialize_cdr
            for _ in range(args.batch):
                deser(data, TYPE)

        def cdr_full():
            for _ in range(args.batch):
                decode_joint_state(data)

        def cdr_into():
            into = decoder.decode_into
            for i in range(args.batch):
                into(data, ring[i])

        def rclpy_copy():
            for i in range(args.batch):
                m = deserialize_message(data, JointState)
                row = ring[i]
                row[0] = m.position
                row[1] = m.velocity
                row[2] = m.effort
                _ = m.header.stamp.sec * 10**9 + m.header.stamp.nanosec

        runs = {"rclpy": rclpy_only, "rosbags": rosbags_only, "cdr full": cdr_full, "cdr into": cdr_into,
                "rclpy+copy": rclpy_copy}
        times = {k: [] for k in runs}
        for f in runs.values():
            f()  # warm
        for _ in range(args.batches):
            for k, f in runs.items():
                t0 = time.process_time()
                f()
                times[k].append((time.process_time() - t0) / args.batch * 1e6)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{n:7d} {len(data):6d} {med['rclpy']:8.2f} {med['rosbags']:8.2f} {med['cdr full']:9.2f} "
              f"{med['cdr into']:9.2f} {med['rclpy+copy']:11.2f}  {med['rclpy'] / med['cdr into']:9.1f}x "
              f"{med['rosbags'] / med['cdr into']:12.1f}x")


if __name__ == "__main__":
    main()
