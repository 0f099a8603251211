"""Writing a LeRobot dataset (v3.0 layout: parquet data, one mp4 per camera, meta) through
LeRobot's own ``LeRobotDataset.create`` / ``add_frame`` / ``save_episode`` / ``finalize``.

Features are named as LeRobot names them for its dual SO-101 follower (``bi_so_follower``):
``observation.state`` and ``action`` (float32, one entry per joint, ``left_shoulder_pan.pos`` ...),
``observation.images.<camera>`` (video). Values are the sim's units (rad; gripper rad), not the
real robot's calibrated range. Optional ``observation.environment_state`` (LeRobot's name for
privileged state, as PushT's keypoints): 14 float32, the block's then the tray's pose, each
x y z qw qx qy qz (contract.POSE_LAYOUT; m, unit quaternion), named ``block.x`` ... ``tray.qz``;
other layouts (``envs.environment_state``): with the grasp frames, 18 more (each gripper's grasp
site from the frame's joint positions, ``left_grasp.x`` ... ``right_grasp.yz``); with symmetric
objects, each quaternion replaced by five numbers (``block.up2`` ... ``block.side_s4``, then the tray's).
A dataset without cameras (state, action and the environment state only: what a state policy
trains on) holds no video. ``lerobot`` is imported only when a writer is made: it is an optional
extra (``pip install .[lerobot]``).
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from robogym_ros.envs.environment_state import OBJECTS, check_layout, environment_state_names

ROBOT_TYPE = "bi_so_follower"  # LeRobot 0.6's name for two SO-101 followers (left_*, right_*)
STATE = "observation.state"
ACTION = "action"
IMAGE_PREFIX = "observation.images."
ENVIRONMENT_STATE = "observation.environment_state"
ENVIRONMENT_OBJECTS = OBJECTS  # the order of the poses in environment_state
# A rollout's seed (int64, every frame of its episode): a dataset can be replayed and checked
# (recipes/verify_rollouts.py). Not under observation./action.: policies ignore it.
SEED = "sim_seed"
# The sim stamp of each frame's tick (int64 ns): every row names its tick, so a dataset can be
# checked against the sim's ground truth. Not under observation./action.: policies ignore it.
STAMP = "sim_stamp_ns"
# Noisy (DART) rollouts: the targets the env was sent (float32, one per joint), the expert's clean
# action plus the injected noise; ``action`` keeps the clean label. A replay sends these. Not under
# observation./action.: policies ignore it.
EXECUTED = "sim_executed_action"
# The least standard deviation floor_environment_state_std gives each environment_state component (m for
# x y z, quaternion components as they are): what LeRobot's MEAN_STD normalisation divides by. The
# demonstrations hold the tray still on the table (its height and tilt vary by hundredths of a
# millimetre), so the measured spread makes a millimetre's knock to the tray dozens of standard
# deviations at a policy's input, a state no demonstration shows.
ENVIRONMENT_STATE_STD_FLOOR = {"x": 0.01, "y": 0.01, "z": 0.01, "qw": 0.05, "qx": 0.05, "qy": 0.05, "qz": 0.05,
                               # envs.block_symmetry's numbers, each within -1 .. 1 as a quaternion's
                               "up2": 0.05, "long_c2": 0.05, "long_s2": 0.05, "side_c4": 0.05, "side_s4": 0.05}
MEASURED_STD = "meta/environment_state_std.json"  # each component's measured standard deviation
MISSING_LEROBOT = ("exporting a LeRobot dataset needs the optional lerobot extra (Python >= 3.12 for lerobot 0.6): "
                   "pip install -e '.[lerobot]'")


@contextmanager
def keeping_scheduling() -> Iterator[None]:
    """Put the calling thread's scheduling policy back afterwards. The video encoder LeRobot uses
    (SVT-AV1) makes the thread that runs it SCHED_FIFO where it may (as root); every thread and
    process started from it later would inherit a real-time policy, and a sim node started so
    starves its own tick pump (its camera threads, run to completion at FIFO, keep it off both
    cores: physics waited 0.5 s at a time)."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    except (AttributeError, OSError):  # not Linux
        yield
        return
    try:
        yield
    finally:
        if (os.sched_getscheduler(0), os.sched_getparam(0)) != (policy, param):
            os.sched_setscheduler(0, policy, param)


def import_lerobot():
    """LeRobotDataset, or ImportError saying how to install it."""
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except ImportError as err:
        raise ImportError(f"{MISSING_LEROBOT} ({err})") from None
    return LeRobotDataset


def feature_names(joint_names: Sequence[str]) -> list[str]:
    """LeRobot's names of joint positions: ``<joint>.pos`` (the sim's joints are ``left_shoulder_pan`` ...)."""
    return [f"{name}.pos" for name in joint_names]


def features(joint_names: Sequence[str], camera_sizes: Mapping[str, tuple[int, int]], *,
             environment_state: bool = False, seeds: bool = False, executed: bool = False,
             layout: str = "objects") -> dict[str, dict]:
    """The dataset's features; ``camera_sizes``: camera -> (height, width) in pixels;
    ``environment_state``: the objects' poses too; ``seeds``: each frame's episode seed (rollouts);
    ``executed``: the targets actually sent where they differ from the label (noisy rollouts, relative
    actions); ``layout``: what the environment state holds (envs.environment_state)."""
    names = feature_names(joint_names)
    out = {STATE: {"dtype": "float32", "shape": (len(names),), "names": names},
           ACTION: {"dtype": "float32", "shape": (len(names),), "names": list(names)},
           STAMP: {"dtype": "int64", "shape": (1,), "names": None}}
    if environment_state:
        env_names = environment_state_names(layout)
        out[ENVIRONMENT_STATE] = {"dtype": "float32", "shape": (len(env_names),), "names": env_names}
    if seeds:
        out[SEED] = {"dtype": "int64", "shape": (1,), "names": None}
    if executed:
        out[EXECUTED] = {"dtype": "float32", "shape": (len(names),), "names": list(names)}
    for cam, (h, w) in camera_sizes.items():
        out[IMAGE_PREFIX + cam] = {"dtype": "video", "shape": (int(h), int(w), 3),
                                   "names": ["height", "width", "channels"]}
    return out


class DatasetWriter:
    """One LeRobot dataset being written: ``add`` frames, ``end_episode``, then ``close``.

    ``out`` must not exist (LeRobot never writes into an existing dataset folder); it is checked
    before anything is written, as are the fps and the task.
    """

    def __init__(self, out: str | Path, *, fps: int, joint_names: Sequence[str],
                 camera_sizes: Mapping[str, tuple[int, int]], task: str, repo_id: str | None = None,
                 environment_state: bool = False, seeds: bool = False, executed: bool = False,
                 layout: str = "objects"):
        out = Path(out)
        check_layout(layout)
        if out.exists():
            raise FileExistsError(f"{out} exists already: a dataset is written into a new folder")
        if not (isinstance(fps, int) and fps > 0):
            raise ValueError(f"fps must be a positive integer (LeRobot's frame rate), got {fps!r}")
        if not isinstance(task, str) or not task.strip():
            raise ValueError("task must be a non-empty string (LeRobot's task description)")
        LeRobotDataset = import_lerobot()
        self.out = out
        self.fps = fps
        self.repo_id = repo_id or f"robogym_ros/{out.name}"
        self.task = task
        self.joint_names = tuple(joint_names)
        self.cameras = tuple(camera_sizes)
        self.environment_state = bool(environment_state)
        self.seeds = bool(seeds)
        self.executed = bool(executed)
        self.layout = layout
        self.n_frames = 0
        self.n_episodes = 0
        self._in_episode = 0
        self._dataset = LeRobotDataset.create(self.repo_id, fps, features(
            joint_names, camera_sizes, environment_state=self.environment_state, seeds=self.seeds,
            executed=self.executed, layout=self.layout), root=out,
            robot_type=ROBOT_TYPE, use_videos=bool(self.cameras),
            video_backend="pyav")  # a writer decodes nothing; this skips probing torchcodec's FFmpeg

    def add(self, stamp_ns: int, state: np.ndarray, action: np.ndarray, images: Mapping[str, np.ndarray], *,
            environment_state: np.ndarray | None = None, seed: int | None = None,
            executed: np.ndarray | None = None) -> None:
        """One frame: its tick's stamp, the joint positions at that tick, the targets sent after it,
        one image per camera (and, where the dataset has them, the objects' poses, the seed and the
        targets actually sent)."""
        frame = {STATE: np.asarray(state, np.float64).astype(np.float32),
                 ACTION: np.asarray(action, np.float64).astype(np.float32),
                 STAMP: np.array([stamp_ns], np.int64), "task": self.task}
        if self.environment_state:
            values = np.asarray(environment_state, np.float64).reshape(-1)
            size = len(environment_state_names(self.layout))
            if values.shape != (size,):
                raise ValueError(f"environment_state ({self.layout}) must be {size} numbers, "
                                 f"got shape {np.shape(environment_state)}")
            frame[ENVIRONMENT_STATE] = values.astype(np.float32)
        if self.seeds:
            frame[SEED] = np.array([seed], np.int64)
        if self.executed:
            frame[EXECUTED] = np.asarray(executed, np.float64).astype(np.float32)
        for cam in self.cameras:
            frame[IMAGE_PREFIX + cam] = np.ascontiguousarray(images[cam], dtype=np.uint8)
        self._dataset.add_frame(frame)
        self._in_episode += 1

    def end_episode(self) -> None:
        """Save the frames added since the last call as one episode (none added: nothing saved)."""
        if not self._in_episode:
            return
        # One camera after another: LeRobot's parallel encoding forks this (multi-threaded) process.
        with keeping_scheduling():
            self._dataset.save_episode(parallel_encoding=False)
        self.n_frames += self._in_episode
        self.n_episodes += 1
        self._in_episode = 0

    def close(self) -> None:
        """Finalise (parquet footers, metadata); frames of an unfinished episode are dropped."""
        if self._dataset is None:
            return
        dataset, self._dataset = self._dataset, None
        if self._in_episode:
            dataset.clear_episode_buffer()
            self._in_episode = 0
        with keeping_scheduling():
            dataset.finalize()

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def floor_environment_state_std(root: str | Path, floor: bool = True) -> list[str]:
    """Raise each environment_state std in a dataset's ``meta/stats.json`` (what LeRobot normalises
    with when it trains) to at least ENVIRONMENT_STATE_STD_FLOOR, the measured values kept in
    MEASURED_STD; ``floor=False`` puts the measured values back. Calling it again changes nothing.
    The components the floor raises, by name."""
    path = Path(root) / "meta" / "stats.json"
    stats = json.loads(path.read_text())
    if ENVIRONMENT_STATE not in stats:
        raise ValueError(f"{root} has no {ENVIRONMENT_STATE} (exported without --environment-state)")
    entry = stats[ENVIRONMENT_STATE]
    kept = Path(root) / MEASURED_STD
    measured = list(json.loads(kept.read_text()).values()) if kept.exists() else [float(v) for v in entry["std"]]
    names = json.loads((Path(root) / "meta" / "info.json").read_text())["features"][ENVIRONMENT_STATE]["names"]
    # the objects' poses only: a grasp frame moves with the arms
    floors = [ENVIRONMENT_STATE_STD_FLOOR.get(n.split(".", 1)[1], 0.0) if n.split(".", 1)[0] in ENVIRONMENT_OBJECTS
              else 0.0 for n in names]
    entry["std"] = [max(v, f) for v, f in zip(measured, floors, strict=True)] if floor else measured
    kept.write_text(json.dumps(dict(zip(names, measured, strict=True)), indent=1))
    path.write_text(json.dumps(stats, indent=4))
    return [n for n, v, f in zip(names, measured, floors) if v < f]
