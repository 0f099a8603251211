"""Check a LeRobot dataset exported from a bag against the bag's ground truth (figures, exit code).

    ~/lerobot-venv/bin/python recipes/verify_lerobot_export.py --bag my_bag --dataset my_dataset

Loads the dataset with LeRobot's own ``LeRobotDataset`` (PyAV) and, for every frame, compares
``observation.state`` with the bag's ``ground_truth/joint_states`` at the frame's ``sim_stamp_ns``
and ``action`` with the bag's ``ground_truth/joint_targets`` of the next tick, at float32 (LeRobot's
dtype), columns matched by joint name, and ``observation.environment_state`` (where the dataset has
it) with the bag's ``ground_truth/object_poses`` at the frame's stamp. Each episode's frames are
compared with the camera schedule: the frames due on the camera period's grid from the episode's
first tick (the sim's first tick, a reset tick, or where a bag that joined a running sim has all
its streams) up to, not including, its last tick (the tick before the next reset: its next tick
is another episode's, so it has no action); the last episode's up to the last frame every stream
covers (robogym_ros.export.bag.recording_span: the recorder's streams end at different ticks).
Exit 0: every figure matches; 1: a mismatch (printed); 2: usage.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from robogym_ros.checks import frame_due_stamps
from robogym_ros.contract import FIRST_TICK_INDEX, RunState
from robogym_ros.export.bag import RESET_REASONS, recording_span
from robogym_ros.recorder.bag.streams import read_targets
from robogym_ros.recorder.offline import read_recording
from robogym_ros.recorder.schedules import camera_period_ns


def by_stamp(stamps_ns, rows) -> dict[int, np.ndarray]:
    return {int(s): r for s, r in zip(stamps_ns, rows)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bag", required=True, help="the bag the dataset was exported from")
    p.add_argument("--dataset", required=True, help="the dataset's folder (the exporter's --out)")
    args = p.parse_args(argv)
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("robogym_ros/verify", root=args.dataset, video_backend="pyav")
    rows = {k: np.asarray(v) for k, v in ds.hf_dataset.with_format("numpy")[:].items()}
    rec = read_recording(args.bag)
    data, dt = rec.data, rec.spec.control_dt_ns
    if data.ground_truth is None:
        print(f"{args.bag}: no ground_truth/joint_states to compare with", file=sys.stderr)
        return 2
    names = [n.removesuffix(".pos") for n in ds.features["observation.state"]["names"]]
    gt_cols = [data.ground_truth.names.index(n) for n in names]
    targets = read_targets(args.bag, names)  # columns in the dataset's order
    truth = by_stamp(data.ground_truth.stamp_ns, data.ground_truth.position[:, gt_cols])
    next_targets = by_stamp(targets.stamp_ns, targets.position)
    cams = [k.removeprefix("observation.images.") for k in ds.meta.video_keys]
    periods = sorted({camera_period_ns(rec.spec, c) for c in cams})
    if len(periods) != 1 or not periods[0]:
        print(f"the cameras' periods in the spec differ or are unknown: {periods} ns", file=sys.stderr)
        return 2
    period = periods[0]
    resets = sorted(RunState.from_json(t).stamp_ns for _, t in data.run_states
                    if RunState.from_json(t).reason in RESET_REASONS)
    first_tick = FIRST_TICK_INDEX * dt
    # an episode starts on the sim's first tick or a reset tick; a bag that joined a running sim (a partial
    # first episode, exported with --keep-partial) on the first tick every stream it needs has reached
    # (the recorder's subscriptions match one by one); the last frame is the last every stream covers
    images = [np.array([m.stamp_ns for m in data.images if m.camera == c], np.int64) for c in cams]
    bag_start, bag_last = recording_span(dt, data.joint_states.stamp_ns, targets.stamp_ns, images,
                                         data.ground_truth.stamp_ns)
    starts = sorted({bag_start, *(r for r in resets if r >= bag_start)})
    skips = len(data.camera_skips or ())
    print(f"bag: {len(truth)} ground-truth ticks, {len(resets)} resets, {len(starts)} episode starts in the bag, "
          f"camera period {period / 1e6:g} ms ({ds.fps} fps), {skips} camera-skip messages")
    print(f"dataset: {ds.num_episodes} episodes, {ds.num_frames} frames, cameras {cams}, "
          f"robot_type {ds.meta.robot_type}")

    stamps = rows["sim_stamp_ns"].reshape(-1).astype(np.int64)
    problems = []
    missing = [int(s) for s in stamps if int(s) not in truth or int(s) + dt not in next_targets]
    if missing:
        problems.append(f"{len(missing)} frames without their tick's truth or the next tick's targets: {missing[:5]}")
    else:
        want_state = np.array([truth[int(s)] for s in stamps], np.float32)
        want_action = np.array([next_targets[int(s) + dt] for s in stamps], np.float32)
        state_err = float(np.abs(rows["observation.state"].astype(np.float64) - want_state).max())
        action_err = float(np.abs(rows["action"].astype(np.float64) - want_action).max())
        print(f"max |state - ground truth| = {state_err:.3g} rad, max |action - next tick's targets| = "
              f"{action_err:.3g} rad (float32, {len(stamps)} frames)")
        if state_err or action_err:
            problems.append(f"state error {state_err:.3g}, action error {action_err:.3g}")
    if "observation.environment_state" in rows:
        poses = data.object_poses
        by_pose = by_stamp(poses.stamp_ns, poses.poses[:, :2].reshape(len(poses), -1)) if poses is not None else {}
        lacking = [int(s) for s in stamps if int(s) not in by_pose]
        if lacking:
            problems.append(f"{len(lacking)} frames without their tick's object poses: {lacking[:5]}")
        else:
            want = np.array([by_pose[int(s)] for s in stamps], np.float32)
            env_err = float(np.abs(rows["observation.environment_state"].astype(np.float64) - want).max())
            print(f"max |environment_state - ground-truth object poses| = {env_err:.3g} (float32, block then tray)")
            if env_err:
                problems.append(f"environment_state error {env_err:.3g}")

    print("episode  first tick [s]  last tick [s]  frames (exported / predicted)")
    for e in range(ds.num_episodes):
        sel = rows["episode_index"] == e
        got = stamps[sel]
        lo = max((s for s in starts if s <= got[0]), default=None)
        if lo is None:
            problems.append(f"episode {e}: its first frame {got[0]} ns is before the bag's first tick")
            continue
        later = [s for s in starts if s > lo]
        hi = later[0] - dt if later else bag_last  # the episode's last tick, or the recording's last frame
        due = frame_due_stamps(lo, hi, period, dt, first_tick_ns=first_tick)
        due = due[(due % period == 0) & ((due < hi) if later else (due <= hi))]  # the sim's first frame is off
        # the grid; an episode's last tick has no action (its next tick is the next episode's)
        print(f"{e:7d}  {lo / 1e9:14.2f}  {hi / 1e9:13.2f}  {len(got)} / {len(due)}")
        if not np.array_equal(got, due):
            lost = sorted(set(due.tolist()) - set(got.tolist()))
            extra = sorted(set(got.tolist()) - set(due.tolist()))
            problems.append(f"episode {e}: frames not as scheduled: missing {lost[:5]}, extra {extra[:5]}")
        if not np.allclose(rows["timestamp"][sel], np.arange(sel.sum()) / ds.fps):
            problems.append(f"episode {e}: timestamps are not k / fps")
    if ds.num_episodes != len(starts):
        print(f"note: the bag has {len(starts)} episode starts, the dataset {ds.num_episodes} episodes "
              f"(an export with --skip-gaps names those it left out)")
    for line in problems:
        print("MISMATCH:", line)
    print("OK: the dataset holds the bag's ground truth" if not problems else f"FAIL: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
