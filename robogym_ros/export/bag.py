"""A bag recorded with ``robogym_recorder --record`` as a LeRobot dataset: one episode per reset.

The joint stream, the spec and the run states come from the recorder's offline reader
(robogym_ros.recorder.offline); the pixels and the per-tick targets from
robogym_ros.recorder.bag.streams; which frame gets which state and action from
robogym_ros.export.episodes (exact stamps, never nearest). Images are streamed: only the
frames being assembled are held in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from robogym_ros.contract import FIRST_TICK_INDEX, NS_PER_S, RunState
from robogym_ros.export.dataset import ENVIRONMENT_OBJECTS, DatasetWriter
from robogym_ros.export.episodes import Episode, align_episodes
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.streams import TARGETS_SUFFIX, iter_images, read_targets
from robogym_ros.recorder.offline import read_recording
from robogym_ros.recorder.schedules import camera_period_ns

RESET_REASONS = ("reset", "blow_up")  # run states after which a new episode starts


def recording_span(control_dt_ns: int, joint_stamps_ns, target_stamps_ns, image_stamps_ns: Sequence,
                   truth_stamps_ns=None) -> tuple[int, int]:
    """The frames every stream of the recording covers, [first, last] (ns): a frame needs its
    tick's joint_states (and ground truth, where recorded), its images, and the targets of the
    tick after it. The recorder's subscriptions start and stop one by one, so the streams begin
    and end at different ticks; the export and its verifier (recipes/verify_lerobot_export.py)
    both cut a recording to this span, so they agree on its first and last frames."""
    dt = int(control_dt_ns)
    series = [np.asarray(joint_stamps_ns, np.int64), *(np.asarray(s, np.int64) for s in image_stamps_ns)]
    if truth_stamps_ns is not None and len(truth_stamps_ns):
        series.append(np.asarray(truth_stamps_ns, np.int64))
    targets = np.asarray(target_stamps_ns, np.int64)
    if not len(targets) or any(not len(s) for s in series):
        return 0, -1  # empty: some stream has nothing
    first = max([int(s.min()) for s in series] + [int(targets.min()) - dt])
    last = min([int(s.max()) for s in series] + [int(targets.max()) - dt])
    return first, last


@dataclass
class ExportPlan:
    """What a bag will become: its episodes (frames, state, action) and the cameras' sizes."""

    bag: str
    fps: int
    cameras: dict[str, tuple[int, int]]  # camera -> (height, width)
    joint_names: tuple[str, ...]
    control_dt_ns: int
    episodes: list[Episode]
    notes: list[str] = field(default_factory=list)
    environment_state: list[np.ndarray] | None = None  # per episode (frames, 14): block then tray pose


def plan_bag(bag: str | Path, *, cameras: Sequence[str] | None = None, keep_partial: bool = False,
             skip_gaps: bool = False, environment_state: bool = False) -> ExportPlan:
    """Read a bag's joints, targets, run states and image stamps, and cut them into episodes.

    ``skip_gaps``: leave out episodes with a missing frame (noted) instead of refusing the bag.
    ``environment_state``: each frame also gets the block's and the tray's poses of its own tick
    (``ground_truth/object_poses``; a frame without them is an error, never the nearest).

    Raises BagError (bag unreadable, no targets, no camera) or AlignmentError (a frame without its
    tick, a missing frame) with a message naming what is wrong; nothing is written.
    """
    rec = read_recording(bag)
    data, spec = rec.data, rec.spec
    js = data.joint_states
    dt = spec.control_dt_ns
    targets = read_targets(bag, js.names)
    if targets is None:
        raise BagError(f"{bag}: no per-tick targets ({'/'.join(TARGETS_SUFFIX)}, sensor_msgs/JointState): the "
                       f"action of a frame is the targets the sim applied on the next tick, and only the sim knows "
                       f"them exactly; record that topic (robogym_recorder --record records it where the sim "
                       f"publishes it)")
    present = sorted({m.camera for m in data.images})
    chosen = list(cameras) if cameras else present
    unknown = [c for c in chosen if c not in present]
    if unknown or not chosen:
        raise BagError(f"{bag}: no images of camera(s) {unknown or chosen}; the bag has images of {present or 'none'}")
    sizes, periods = {}, {}
    for cam in chosen:
        first = next(m for m in data.images if m.camera == cam)
        sizes[cam] = (first.height, first.width)
        periods[cam] = camera_period_ns(spec, cam)
    if len(set(periods.values())) != 1 or not next(iter(periods.values())):
        raise BagError(f"{bag}: the cameras' periods in the spec differ or are unknown ({periods} ns): one dataset "
                       f"has one frame rate")
    period = next(iter(periods.values()))
    if NS_PER_S % period:
        raise BagError(f"{bag}: camera period {period} ns is not a whole frame rate (LeRobot's fps is an integer)")
    stamps = [np.array([m.stamp_ns for m in data.images if m.camera == cam], np.int64) for cam in chosen]
    common = stamps[0]
    for s in stamps[1:]:
        common = np.intersect1d(common, s)
    truth = data.ground_truth.stamp_ns if data.ground_truth is not None else None
    first, last = recording_span(dt, js.stamp_ns, targets.stamp_ns, stamps, truth)
    common = common[(common >= first) & (common <= last)]
    resets = []
    for _, text in data.run_states:
        state = RunState.from_json(text)
        if state.reason in RESET_REASONS:
            resets.append(state.stamp_ns)
    gaps: list[str] | None = [] if skip_gaps else None
    episodes = align_episodes(js.stamp_ns, js.position, targets.stamp_ns, targets.position, common,
                              reset_stamps_ns=resets, control_dt_ns=dt, frame_period_ns=period,
                              first_sim_tick_ns=FIRST_TICK_INDEX * dt, gaps=gaps)
    notes = list(rec.notes) + [f"left out: {why}" for why in gaps or ()]
    if episodes and not episodes[0].complete_start and not keep_partial:
        first = episodes.pop(0)
        notes.append(f"the first episode left out: it began before the recording (its first recorded tick "
                     f"{first.first_tick_ns} ns is neither a reset tick nor the sim's first); --keep-partial keeps it")
    if not episodes:
        raise BagError(f"{bag}: no episode with frames to export ({len(resets)} resets, {len(common)} frames)")
    env_state = _environment_state(bag, data.object_poses, episodes) if environment_state else None
    return ExportPlan(str(bag), NS_PER_S // period, sizes, tuple(js.names), dt, episodes, notes, env_state)


def _environment_state(bag, poses, episodes: list[Episode]) -> list[np.ndarray]:
    """Each episode's (frames, 14) block-then-tray poses at the frames' own stamps."""
    if poses is None or not len(poses):
        raise BagError(f"{bag}: no ground_truth/object_poses: --environment-state takes the objects' poses of each "
                       f"frame's tick from it")
    if poses.poses.shape[1] < len(ENVIRONMENT_OBJECTS):
        raise BagError(f"{bag}: {poses.topic} has {poses.poses.shape[1]} poses, want the block's and the tray's")
    by_stamp = {int(s): i for i, s in enumerate(poses.stamp_ns)}
    out = []
    for ep in episodes:
        missing = [int(s) for s in ep.frame_stamps_ns if int(s) not in by_stamp]
        if missing:
            raise BagError(f"{bag}: {len(missing)} frames have no object poses at their own stamp (first {missing[0]} "
                           f"ns): a frame takes the poses of its tick, never the nearest")
        rows = [by_stamp[int(s)] for s in ep.frame_stamps_ns]
        out.append(poses.poses[rows, :len(ENVIRONMENT_OBJECTS)].reshape(len(rows), -1).copy())
    return out


def write_plan(plan: ExportPlan, out: str | Path, task: str, *, repo_id: str | None = None) -> DatasetWriter:
    """Stream the bag's images into a new dataset at ``out``, episode by episode, frame by frame."""
    wanted = [(e, k, int(s)) for e, ep in enumerate(plan.episodes) for k, s in enumerate(ep.frame_stamps_ns)]
    stamp_set = {s for _, _, s in wanted}
    pending: dict[int, dict[str, np.ndarray]] = {}
    cams = tuple(plan.cameras)
    at = 0
    with DatasetWriter(out, fps=plan.fps, joint_names=plan.joint_names, camera_sizes=plan.cameras, task=task,
                       repo_id=repo_id, environment_state=plan.environment_state is not None) as writer:
        for cam, stamp, image in iter_images(plan.bag, cams):
            if stamp not in stamp_set:
                continue
            pending.setdefault(stamp, {})[cam] = image
            # Frames go in in stamp order; a frame waits until every camera's image of it has come.
            while at < len(wanted) and len(pending.get(wanted[at][2], ())) == len(cams):
                e, k, s = wanted[at]
                ep = plan.episodes[e]
                env_state = plan.environment_state[e][k] if plan.environment_state is not None else None
                writer.add(s, ep.state[k], ep.action[k], pending.pop(s), environment_state=env_state)
                if k == len(ep) - 1:
                    writer.end_episode()
                at += 1
        if at < len(wanted):
            e, k, s = wanted[at]
            have = sorted(pending.get(s, {}))
            raise BagError(f"{plan.bag}: frame {s} ns has images of {have or 'no camera'} of {list(cams)} when the "
                           f"bag ends")
    return writer
