"""Command line: a recording, or local-mode rollouts, as a LeRobot dataset.

    python -m robogym_ros.export.lerobot --bag my_bag --out my_dataset --task "hand the block over"
    python -m robogym_ros.export.lerobot --rollouts 5 --out my_dataset --task "hand the block over"

Exit codes: 0 written, 1 the data cannot be exported as asked (the message says why; nothing
is left at ``--out``), 2 usage error.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from robogym_ros.export.dataset import MISSING_LEROBOT

EXIT_FAILED = 1
EXIT_USAGE = 2


# the flag that asks for each layout of the environment state (envs.environment_state)
LAYOUT_FLAGS = {"objects": [], "objects_grasp": ["--grasp-frames"], "objects_symmetric": ["--symmetric-objects"]}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m robogym_ros.export.lerobot", description=(
        "Write a LeRobot dataset (v3.0: parquet, one mp4 per camera, meta) from a bag recorded with "
        "robogym_recorder --record (one episode per reset) or from local-mode rollouts (no ROS)."))
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bag", help="a bag (directory or .mcap) recorded with robogym_recorder --record")
    src.add_argument("--rollouts", type=int, metavar="N", help="N local-mode episodes (seeds --seed, --seed+1, ...)")
    p.add_argument("--out", required=True, help="the dataset folder to create (must not exist)")
    p.add_argument("--task", required=True, help="the task description stored with every frame")
    p.add_argument("--repo-id", help="the dataset's repo id in its metadata (default robogym_ros/<out name>)")
    views = p.add_mutually_exclusive_group()
    views.add_argument("--cameras", nargs="+",
                       help="cameras to export (default: bag: all recorded; rollouts: overhead)")
    views.add_argument("--no-cameras", action="store_true", help=(
        "rollouts: no camera, no video (state, action and, with --environment-state, the objects' poses: what a "
        "state policy trains on; nothing is rendered, so it is several times faster)"))
    p.add_argument("--keep-partial", action="store_true",
                   help="bag: keep the episode that began before the recording started")
    p.add_argument("--skip-gaps", action="store_true",
                   help="bag: leave out episodes with a missing frame (real-time skips) instead of refusing the bag")
    p.add_argument("--policy", default="expert", help=(
        "rollouts: 'expert' (the scripted handover, robogym_ros.expert), 'sweep' (a deterministic motion, not "
        "the task) or package.module:factory, factory(env) -> policy(obs) -> targets in rad"))
    p.add_argument("--seed", type=int, default=0, help="rollouts: the first episode's seed")
    p.add_argument("--only-success", action="store_true", help="rollouts: leave out episodes that did not succeed")
    p.add_argument("--max-steps", type=int, default=250, help=(
        "rollouts: steps to success at most (25 per s; the env's limit); a success then runs on until it has held "
        "--success-hold-s"))
    p.add_argument("--success-hold-s", type=float, default=1.0, help=(
        "rollouts: an episode ends once success (the block placed in the tray) has held this long [s]: the release "
        "and the arm's retreat are in it"))
    p.add_argument("--noise-rad", type=float, default=0.0, help=(
        "rollouts (DART): Gaussian noise of this standard deviation [rad, 0 .. 1] added to every target sent in "
        "noisy episodes; the dataset's action stays the expert's clean action for the state reached, the targets "
        "sent are stored as sim_executed_action"))
    p.add_argument("--noisy-share", type=float, default=1.0, help=(
        "rollouts with --noise-rad: the share of episodes made noisy [0 .. 1], spread evenly over them"))
    p.add_argument("--environment-state", action="store_true", help=(
        "add observation.environment_state: the block's then the tray's pose, x y z qw qx qy qz each "
        "(14 float32, block.x ... tray.qz)"))
    p.add_argument("--grasp-frames", action="store_true", help=(
        "rollouts with --environment-state: append both grippers' grasp frames (position and rotation, 18 float32 "
        "from the frame's joint positions, left_grasp.x ... right_grasp.yz); lerobot-eval: "
        "--env.environment_state=objects_grasp"))
    p.add_argument("--symmetric-objects", action="store_true", help=(
        "rollouts with --environment-state: each object's orientation as 5 numbers its symmetries leave be instead of "
        "its quaternion (block.x block.y block.z block.up2 block.long_c2 block.long_s2 block.side_c4 block.side_s4, "
        "then tray.x ... tray.side_s4: 16 float32); lerobot-eval: --env.environment_state=objects_symmetric"))
    p.add_argument("--relative-actions", action="store_true", help=(
        "rollouts: store each action as the targets less the frame's joint positions (the targets sent as "
        "sim_executed_action); lerobot-eval: --env.action_mode=relative"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    if out.exists():
        print(f"error: --out {out} exists already: a dataset is written into a new folder", file=sys.stderr)
        return EXIT_USAGE
    if not args.task.strip():
        print("error: --task must not be empty", file=sys.stderr)
        return EXIT_USAGE
    if (args.grasp_frames or args.symmetric_objects or args.relative_actions) and args.bag is not None:
        print("error: --grasp-frames, --symmetric-objects and --relative-actions are for --rollouts", file=sys.stderr)
        return EXIT_USAGE
    if args.grasp_frames and args.symmetric_objects:
        print("error: --grasp-frames and --symmetric-objects are two layouts of the environment state: choose one",
              file=sys.stderr)
        return EXIT_USAGE
    for flag, asked in (("--grasp-frames", args.grasp_frames), ("--symmetric-objects", args.symmetric_objects)):
        if asked and not args.environment_state:
            print(f"error: {flag} needs --environment-state (it is a layout of it)", file=sys.stderr)
            return EXIT_USAGE
    if args.no_cameras and args.bag is not None:
        print("error: --no-cameras is for --rollouts: a bag's frames are its camera frames", file=sys.stderr)
        return EXIT_USAGE
    try:
        import lerobot  # noqa: F401 - fail before reading a long bag
    except ImportError:
        print(f"error: {MISSING_LEROBOT}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.bag is not None:
            return _from_bag(args, out)
        return _from_rollouts(args, out)
    except (ValueError, OSError) as err:  # BagError, AlignmentError and bad arguments: one line
        shutil.rmtree(out, ignore_errors=True)  # a failed export leaves nothing half-written
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED


def _from_bag(args: argparse.Namespace, out: Path) -> int:
    from robogym_ros.export.bag import plan_bag, write_plan
    from robogym_ros.recorder.bag.format import BagError
    try:
        plan = plan_bag(args.bag, cameras=args.cameras, keep_partial=args.keep_partial, skip_gaps=args.skip_gaps,
                    environment_state=args.environment_state)
    except BagError as err:
        raise ValueError(str(err)) from None
    for note in plan.notes:
        print(f"note: {note}")
    writer = write_plan(plan, out, args.task, repo_id=args.repo_id)
    for k, ep in enumerate(plan.episodes):
        print(f"episode {k}: {len(ep)} frames, ticks {ep.first_tick_ns} .. {ep.last_tick_ns} ns")
    _summary(writer, plan.fps, list(plan.cameras))
    return 0


def _from_rollouts(args: argparse.Namespace, out: Path) -> int:
    from robogym_ros.export.rollouts import policy_factory, write_rollouts
    factory = policy_factory(args.policy)
    cameras = [] if args.no_cameras else args.cameras or ["overhead"]

    def report(episode) -> None:
        left_out = args.only_success and episode.outcome != "success"
        first = f" (placed at step {episode.first_success_step})" if episode.first_success_step else ""
        print(f"seed {episode.seed}: {len(episode.frames)} frames, {episode.outcome}{first}"
              + (", noisy" if episode.noisy else "")
              + (" (left out)" if left_out else ""), flush=True)
    writer = write_rollouts(out, args.task, args.rollouts, factory, seed=args.seed, cameras=cameras,
                            max_steps=args.max_steps, repo_id=args.repo_id, on_episode=report,
                            only_success=args.only_success, environment_state=args.environment_state,
                            success_hold_s=args.success_hold_s, noise_rad=args.noise_rad,
                            noisy_share=args.noisy_share, environment_state_layout=layout_of(args),
                            relative_actions=args.relative_actions)
    if not writer.n_episodes:
        raise ValueError(f"no episode to write: none of the {args.rollouts} rollouts succeeded")
    _summary(writer, writer.fps, cameras)
    return 0


def layout_of(args: argparse.Namespace) -> str:
    """The environment state's layout (envs.environment_state) the flags ask for."""
    return "objects_grasp" if args.grasp_frames else "objects_symmetric" if args.symmetric_objects else "objects"


def _summary(writer, fps: int, cameras: list[str]) -> None:
    print(f"dataset: {writer.out} ({writer.n_episodes} episodes, {writer.n_frames} frames at {fps} fps, cameras "
          f"{', '.join(cameras) or 'none'}); load it with LeRobotDataset('{writer.repo_id}', root='{writer.out}')")


if __name__ == "__main__":
    sys.exit(main())
