"""Check a LeRobot dataset of local-mode rollouts by replaying it in the env (figures, exit code).

    ~/lerobot-venv/bin/python recipes/verify_rollouts.py --dataset demos [--require-success]

Loads the dataset with LeRobot's own ``LeRobotDataset`` and replays each episode in a fresh
local-mode env: ``reset(seed=sim_seed)``, then the dataset's actions, one per frame (they are
exactly what the rollout sent, float32; in a noisy export ``sim_executed_action``, the targets
sent). Every frame's ``sim_stamp_ns``, ``observation.state`` and ``observation.environment_state``
(where present, in the dataset's layout: envs.environment_state, from the replayed poses and joints)
must equal the replayed env's at float32, and the timestamps be k / fps; relative actions
(``meta/robogym.json``) plus the frame's state must equal the targets sent where no noise was added.
A replay checks each action through the next frame; the last one has none, so it is checked against
the export's record of where it led (``meta/rollout_ends.json``: the tick, joints and objects' poses
after it, which the replay must equal at float32); a dataset without that record has its last
actions named as unchecked. After the last action it says how the episode ended, judged by the env's
own success (the block placed in the tray, touching no arm, at rest): how long success had held at
the end, and the placing gripper's opening on the last frame. ``--require-success``: every episode
must end with success held for ``--hold-s`` (the export's default, 1 s). Exit 0: every figure
matches; 1: a mismatch (printed); 2: usage.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from robogym_ros.envs.environment_state import EnvironmentState
from robogym_ros.export.dataset import ENVIRONMENT_OBJECTS, ENVIRONMENT_STATE, EXECUTED, SEED, STAMP, STATE
from robogym_ros.export.rollouts import ROLLOUT_ENDS, SUCCESS_HOLD_S, make_env, read_layout

RELATIVE_TOLERANCE_RAD = 1e-6  # a relative action is stored at float32: target - state, rounded once


def replay(env, seed: int, actions: np.ndarray):
    """The env's stamps, states and object poses before each action, the success of each step, the
    last step's info, and the stamp, state and object poses after the last action."""
    obs, info = env.reset(seed=seed)
    n = len(env.joint_names)
    order = [env.object_names.index(o) for o in ENVIRONMENT_OBJECTS]
    stamps, states, poses, placed = [], [], [], []
    for action in actions:
        stamps.append(int(info["stamp_ns"]))
        states.append(obs["observation"][:n].copy())
        poses.append(obs["observation"][env.layout.object_poses].reshape(len(env.object_names), -1)[order].ravel())
        obs, _, terminated, truncated, info = env.step(np.asarray(action, np.float64))
        placed.append(bool(terminated))
        if truncated:
            break
    end = (int(info["stamp_ns"]), obs["observation"][:n].copy(),
           obs["observation"][env.layout.object_poses].reshape(len(env.object_names), -1)[order].ravel())
    return np.array(stamps), np.array(states), np.array(poses), np.array(placed), info, end


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, help="the dataset's folder (the exporter's --out, from --rollouts)")
    p.add_argument("--require-success", action="store_true", help="every episode must end with success held")
    p.add_argument("--hold-s", type=float, default=SUCCESS_HOLD_S, help="with --require-success: how long [s]")
    args = p.parse_args(argv)
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("robogym_ros/verify", root=args.dataset, video_backend="pyav")
    if SEED not in ds.features:
        print(f"{args.dataset}: no {SEED} column: not a rollouts dataset (a bag export: "
              f"recipes/verify_lerobot_export.py)", file=sys.stderr)
        return 2
    rows = {k: np.asarray(v) for k, v in ds.hf_dataset.with_format("numpy")[:].items()}
    env = make_env(cameras=(), action_repeat=round(1e9 / (ds.fps * 10_000_000)))
    step_s = env.control_dt_ns * env.action_repeat * 1e-9
    if abs(1.0 / step_s - ds.fps) > 1e-9:
        print(f"the dataset's fps {ds.fps} is not the env's step rate {1 / step_s:g} Hz", file=sys.stderr)
        return 2
    names = [n.removesuffix(".pos") for n in ds.features[STATE]["names"]]
    if names != list(env.joint_names):
        print(f"the dataset's joints {names} are not the env's {env.joint_names}", file=sys.stderr)
        return 2
    has_env_state = ENVIRONMENT_STATE in ds.features
    layout = read_layout(args.dataset)
    objects = EnvironmentState(layout["environment_state"], env.joint_names)
    relative = layout["action_mode"] == "relative"
    ends_path = Path(args.dataset) / ROLLOUT_ENDS
    ends = json.loads(ends_path.read_text())["episodes"] if ends_path.exists() else None
    if ends is not None and len(ends) != ds.num_episodes:
        print(f"{ends_path}: {len(ends)} episodes, the dataset {ds.num_episodes}", file=sys.stderr)
        return 2
    hold_steps = max(1, round(args.hold_s / step_s))
    print(f"dataset: {ds.num_episodes} episodes, {ds.num_frames} frames at {ds.fps} fps, "
          f"environment_state {'yes' if has_env_state else 'no'}"
          + (f" ({objects.layout})" if objects.layout != "objects" else "")
          + (", relative actions" if relative else ""))
    print("episode  seed        frames  state err  env-state err  success held at the end  placing gripper [rad]")
    problems = []
    try:
        for e in range(ds.num_episodes):
            sel = rows["episode_index"] == e
            seeds = np.unique(rows[SEED][sel])
            if len(seeds) != 1:
                problems.append(f"episode {e}: {len(seeds)} different seeds in one episode")
                continue
            seed = int(seeds[0])
            # noisy (DART) rollouts: the env was sent the executed targets; ``action`` is the clean label
            actions = rows[EXECUTED if EXECUTED in rows else "action"][sel].astype(np.float64)
            stamps, states, poses, placed, info, end = replay(env, seed, actions)
            if objects.layout != "objects" and len(states):
                poses = np.array([objects(p, q) for p, q in zip(poses, states, strict=True)])
            if len(stamps) != len(actions):
                problems.append(f"episode {e}: the replay blew up after {len(stamps)} of {len(actions)} frames")
                continue
            got_stamps = rows[STAMP][sel].reshape(-1).astype(np.int64)
            if not np.array_equal(got_stamps, stamps):
                problems.append(f"episode {e}: frame stamps differ from the replay's ticks")
            state_err = float(np.abs(rows[STATE][sel].astype(np.float64) - states.astype(np.float32)).max())
            env_err = (float(np.abs(rows[ENVIRONMENT_STATE][sel].astype(np.float64) - poses.astype(np.float32)).max())
                       if has_env_state else None)
            if state_err or env_err:
                problems.append(f"episode {e}: state error {state_err:.3g}, environment_state error {env_err}")
            if relative and not layout["noise_rad"] > 0:  # noise: the label is not what was sent
                label = rows["action"][sel].astype(np.float64) + rows[STATE][sel].astype(np.float64)
                rel_err = float(np.abs(label - rows[EXECUTED][sel].astype(np.float64)).max())
                if rel_err > RELATIVE_TOLERANCE_RAD:
                    problems.append(f"episode {e}: relative action + state is {rel_err:.3g} rad off the targets sent")
            if ends is not None:  # the last action: where the export says it led
                want = ends[e]
                end_err = max(float(np.abs(np.float32(want["state"]) - end[1].astype(np.float32)).max()),
                              float(np.abs(np.float32(want["environment_state"]) - end[2].astype(np.float32)).max()))
                if want["seed"] != seed or want["stamp_ns"] != end[0] or end_err:
                    problems.append(f"episode {e}: after its last action the replay is not where the export was "
                                    f"(seed {want['seed']}, tick {want['stamp_ns']} vs {end[0]} ns, "
                                    f"error {end_err:.3g}): the last action was changed")
            if not np.allclose(rows["timestamp"][sel], np.arange(sel.sum()) / ds.fps):
                problems.append(f"episode {e}: timestamps are not k / fps")
            tail = len(placed) - (np.flatnonzero(~placed)[-1] + 1 if (~placed).any() else 0)  # steps placed at the end
            placing = "left" if float(env.unwrapped._goal[1]) > 0 else "right"
            grip = float(states[-1][env.joint_names.index(f"{placing}_gripper")])
            print(f"{e:7d}  {seed:<10d}  {len(stamps):6d}  {state_err:9.3g}  "
                  f"{'-' if env_err is None else f'{env_err:.3g}':>13}  {tail * step_s:8.2f} s ({tail} steps)"
                  f"       {placing} {grip:.2f}")
            if args.require_success and tail < hold_steps:
                problems.append(f"episode {e} (seed {seed}): success held {tail * step_s:.2f} s at the end, "
                                f"not {args.hold_s:g} s ({info.get('block_speed_m_s', 0):.3g} m/s; "
                                f"touching an arm: {info['left_touches_block'] or info['right_touches_block']})")
    finally:
        env.close()
    for line in problems:
        print("MISMATCH:", line)
    if ends is None:
        print(f"UNCHECKED: each episode's last action (no {ROLLOUT_ENDS}: an export from before it was written)")
    print("OK: every episode replays to the dataset's frames" if not problems
          else f"FAIL: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
