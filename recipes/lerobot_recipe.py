"""LeRobot's own train and eval in the loop: export expert demonstrations, lerobot-train, lerobot-eval
on held-out seeds; prints each command, its wall time, the training loss curve and pc_success.

    .venv/bin/python recipes/lerobot_recipe.py --out robogym_out/recipe            # the README's recipe
    .venv/bin/python recipes/lerobot_recipe.py --out robogym_out/recipe --steps 200 --demos 10 --eval-episodes 5

Runs in the venv `./dev lerobot` made (LeRobot and the env plugin next to the sim). The steps are the
README's commands ("Train and evaluate with LeRobot"), with its defaults:

1. ``python -m robogym_ros.export.lerobot --rollouts N --no-cameras --symmetric-objects`` (the
   scripted expert, seeds 0 .. N-1, with ``observation.environment_state``: each object's position
   and its orientation as numbers its symmetries leave be; a state policy reads no images, so none
   is rendered); episodes the expert did not finish are left out;
2. ``lerobot-train --policy.type=act`` sized for a few CPU cores (no VAE, one thread: the training
   loop and its data loading share the cores), the environment state normalised with the std floor,
   no dropout, the learning rate falling from 5e-4 to 5e-6 (cosine);
3. ``lerobot-eval --env.type=robogym_handover`` with temporal ensembling on ``--eval-episodes`` (200)
   seeds from ``--eval-seed`` (disjoint from the demonstrations' seeds 0 .. N-1: refused otherwise),
   and the same seeds run once by the scripted expert through LeRobot's own rollout, the reference
   the trained policy stands beside. It prints success with its Wilson 95 % interval and writes the
   per-seed outcomes (``outcomes_<seed>_<n>.json`` and ``.csv`` under ``--out``), which
   recipes/compare_evals.py compares; the last line is the table row (demos x noise x steps ->
   success, interval).

``--noise-rad`` / ``--noisy-share`` export noisy demonstrations (DART, docs/lerobot.md);
``--environment-state`` chooses what the environment state holds (``objects``: the poses with
quaternions, the recipe's layout before 2026-12-07; ``objects_grasp``: those and both grippers'
grasp frames), ``--relative-actions`` makes each action the targets less the observed joint
positions; the evaluation gives the policy the same (``--env.environment_state``,
``--env.action_mode``, from the dataset's meta/robogym.json). ``--lr-schedule constant``,
``--lr 1e-4``, ``--dropout 0.1`` and ``--no-env-std-floor`` train as ACT's preset does (and as
the recipe did before 2026-12-07).

A step whose output exists already (the dataset, a checkpoint at ``--steps``) is not run again, so a
run can be resumed by running the same command; ``--fresh`` removes ``--out`` first. Nothing it writes
belongs in git: outputs go under ``--out``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from robogym_ros.envs.environment_state import LAYOUTS
from robogym_ros.export.dataset import floor_environment_state_std
from robogym_ros.export.evaluation import failures_by_stage, max_rewards, outcomes, summary, write_outcomes
from robogym_ros.export.lerobot import LAYOUT_FLAGS
from robogym_ros.export.rollouts import read_layout
from robogym_ros.task.goals import STAGES, stage_of_staged_reward

BIN = Path(sys.executable).parent
TASK = "hand the block to the other arm and lay it in the tray"
# LeRobot's ACT preset, how every run recorded before the recipe wrote these (trained_with.json)
# trained; a row names where its training differs from it
ACT_PRESET = {"lr": 1e-4, "dropout": 0.1, "decoder layers": 1}
# lerobot-train's log line every --log_freq steps; its step count is rounded ("2K"), so the step is
# the line's place in the log times --log_freq
STEP_LINE = re.compile(r"ot_train\.py:\d+ step:\S+ .*?loss:([0-9.eE+-]+)")


def run(cmd: list[str], log: Path, env: dict | None = None) -> float:
    """Run ``cmd`` with its output in ``log``; the wall time (s), or exit with the log's tail."""
    print(f"$ {shlex.join(cmd)}", flush=True)
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    wall_s = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"exit {done.returncode} after {wall_s:.0f} s; the end of {log}:\n{log.read_text()[-3000:]}")
    print(f"  {wall_s:.0f} s, log {log}", flush=True)
    return wall_s


def train_command(args, dataset: Path, train: Path) -> list[str]:
    return [str(BIN / "lerobot-train"), f"--dataset.repo_id=robogym_ros/{dataset.name}", f"--dataset.root={dataset}",
            "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
            "--policy.pretrained_backbone_weights=null", f"--policy.dim_model={args.dim_model}",
            f"--policy.n_heads={args.n_heads}", f"--policy.dim_feedforward={args.dim_feedforward}",
            f"--policy.n_encoder_layers={args.encoder_layers}", f"--policy.n_decoder_layers={args.decoder_layers}",
            f"--policy.dropout={args.dropout}", "--policy.use_vae=false",
            f"--policy.chunk_size={args.chunk_size}", f"--policy.n_action_steps={args.chunk_size}",
            f"--policy.optimizer_lr={args.lr}", *lr_schedule_flags(args),
            # LeRobot leaves the ENV type unnormalised by default: see --env-normalization
            '--policy.normalization_mapping={"VISUAL": "MEAN_STD", "STATE": "MEAN_STD", '
            f'"ENV": "{args.env_normalization}", "ACTION": "MEAN_STD"}}',
            f"--batch_size={args.batch_size}", f"--steps={args.steps}", f"--log_freq={args.log_freq}",
            f"--save_freq={args.save_freq or args.steps}", "--num_workers=0", "--wandb.enable=false",
            f"--seed={args.train_seed}", f"--output_dir={train}"]


def lr_schedule_flags(args) -> list[str]:
    """``constant``: ACT's own preset (AdamW at --lr); ``cosine``: the same AdamW, its rate falling
    from --lr at step 0 to a hundredth of it at --steps (LeRobot's cosine_decay_with_warmup, no warmup),
    so the last checkpoints are the settled ones."""
    if args.lr_schedule == "constant":
        return []
    return ["--use_policy_training_preset=false", "--optimizer.type=adamw", f"--optimizer.lr={args.lr}",
            "--optimizer.weight_decay=1e-4", "--optimizer.grad_clip_norm=10",
            "--scheduler.type=cosine_decay_with_warmup", "--scheduler.num_warmup_steps=0",
            f"--scheduler.num_decay_steps={args.steps}", f"--scheduler.peak_lr={args.lr}",
            f"--scheduler.decay_lr={args.lr / 100}"]


def eval_command(args, checkpoint: Path, out: Path, layout: dict) -> list[str]:
    return [str(BIN / "lerobot-eval"), "--env.type=robogym_handover", f"--policy.path={checkpoint}",
            "--env.obs_type=environment_state_agent_pos", f"--env.environment_state={layout['environment_state']}",
            f"--env.action_mode={layout['action_mode']}", "--env.reward_type=staged",  # max_reward: the furthest stage
            "--policy.temporal_ensemble_coeff=0.01",
            "--policy.n_action_steps=1", f"--eval.n_episodes={args.eval_episodes}", "--eval.batch_size=1",
            f"--seed={args.eval_seed}", f"--output_dir={out}"]


def loss_curve(log: Path, log_freq: int) -> list[tuple[int, float]]:
    """(step, training loss) of each of lerobot-train's log lines."""
    lines = STEP_LINE.finditer(log.read_text(errors="replace"))
    return [((k + 1) * log_freq, float(m.group(1))) for k, m in enumerate(lines)]


def expert_reference(first_seed: int, n: int) -> float:
    """The scripted expert's pc_success on the same seeds, scored by LeRobot's own rollout."""
    from lerobot.envs.factory import make_env, make_env_config
    from lerobot.processor import PolicyProcessorPipeline
    from lerobot.scripts.lerobot_eval import rollout
    from lerobot_env_robogym.expert_policy import ExpertPolicy

    cfg = make_env_config("robogym_handover", obs_type="environment_state_agent_pos", render_mode=None)
    env = make_env(cfg, n_envs=1)["robogym_handover"][0]
    identity = PolicyProcessorPipeline(steps=[])
    successes = []
    try:
        for seed in range(first_seed, first_seed + n):
            with contextlib.redirect_stderr(io.StringIO()):  # rollout's progress bar, 250 lines an episode
                data = rollout(env, ExpertPolicy(), identity, identity, identity, lambda a: a, seeds=[seed])
            last = int(data["done"][0].float().argmax())
            successes.append(bool(data["success"][0][: last + 1].any()))
    finally:
        env.close()
    return 100.0 * sum(successes) / len(successes)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where datasets, checkpoints and logs go (not git)")
    p.add_argument("--fresh", action="store_true", help="remove --out first")
    p.add_argument("--demos", type=int, default=200, help="expert rollouts exported (seeds 0 .. N-1)")
    p.add_argument("--steps", type=int, default=6000, help="lerobot-train steps")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-4, help="the learning rate (ACT's preset: 1e-4)")
    p.add_argument("--dropout", type=float, default=0.0, help="ACT's dropout (LeRobot's preset: 0.1)")
    p.add_argument("--lr-schedule", choices=["constant", "cosine"], default="cosine", help=(
        "cosine: from --lr down to a hundredth of it at --steps; or constant (ACT's preset)"))
    p.add_argument("--dim-model", type=int, default=256)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--dim-feedforward", type=int, default=1024)
    p.add_argument("--encoder-layers", type=int, default=4)
    p.add_argument("--decoder-layers", type=int, default=1, help="ACT's decoder layers (LeRobot's default 1)")
    p.add_argument("--env-normalization", default="MEAN_STD", choices=["MEAN_STD", "MIN_MAX", "IDENTITY"], help=(
        "how the environment state is normalised: MEAN_STD like the joints (the README's recipe); IDENTITY, "
        "LeRobot's default for it, leaves metres and quaternions as they are; MIN_MAX maps the demonstrations' "
        "range to -1..1 (see the README for what each reached)"))
    p.add_argument("--env-std-floor", action=argparse.BooleanOptionalAction, default=True, help=(
        "normalise the environment state with each standard deviation at least "
        "robogym_ros.export.dataset.ENVIRONMENT_STATE_STD_FLOOR (1 cm, 0.05 of a quaternion): the demonstrations "
        "hold the tray's height and tilt still to hundredths of a millimetre"))
    p.add_argument("--chunk-size", type=int, default=25, help="actions per chunk (25 = 1 s)")
    p.add_argument("--log-freq", type=int, default=250)
    p.add_argument("--save-freq", type=int, help="checkpoint every this many steps (default: the greatest common "
                   "divisor of --eval-steps)")
    p.add_argument("--eval-steps", type=int, nargs="+", help="the checkpoints evaluated, a table row each "
                   "(default: --steps alone)")
    p.add_argument("--train-seed", type=int, default=1000)
    p.add_argument("--noise-rad", type=float, default=0.0, help="DART: noise on the targets sent [rad] (the export's)")
    p.add_argument("--noisy-share", type=float, default=1.0, help="DART: the share of noisy demonstrations")
    p.add_argument("--environment-state", choices=LAYOUTS, default="objects_symmetric", help=(
        "what the environment state holds (robogym_ros.envs.environment_state): objects_symmetric, each object's "
        "orientation as numbers its symmetries leave be; objects, the poses with quaternions; objects_grasp, those "
        "and both grasp frames"))
    p.add_argument("--relative-actions", action="store_true", help="actions: the targets less the joint positions")
    p.add_argument("--eval-episodes", type=int, default=200, help="held-out episodes (200: an interval of about "
                   "+-7 points)")
    p.add_argument("--eval-seed", type=int, default=100000, help="the first held-out seed")
    p.add_argument("--no-expert", action="store_true", help="skip the expert's reference run on the eval seeds")
    args = p.parse_args(argv)
    train_seeds = range(0, args.demos)  # the export's --seed 0: demonstration i ran seed i
    eval_seeds = range(args.eval_seed, args.eval_seed + args.eval_episodes)
    if args.eval_episodes < 1 or args.demos < 1:
        p.error("--demos and --eval-episodes must be >= 1")
    eval_steps = sorted(set(args.eval_steps or [args.steps]))
    args.save_freq = args.save_freq or math.gcd(*eval_steps)
    if args.save_freq < 1 or any(k < 1 or k > args.steps or k % args.save_freq for k in eval_steps):
        p.error(f"--eval-steps {eval_steps} must be checkpoints of the run: multiples of --save-freq "
                f"{args.save_freq} in 1 .. --steps {args.steps}")
    if max(train_seeds.start, eval_seeds.start) < min(train_seeds.stop, eval_seeds.stop):
        p.error(f"--eval-seed {args.eval_seed} with --eval-episodes {args.eval_episodes}: seeds {eval_seeds.start} .. "
                f"{eval_seeds.stop - 1} meet the demonstrations' seeds 0 .. {args.demos - 1}")
    if args.fresh:
        shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    state, train = args.out / "demos_state", args.out / "train"
    threads = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # more threads than cores: slower, not faster
    figures = {}

    if not state.exists():
        export = [sys.executable, "-m", "robogym_ros.export.lerobot", "--rollouts", str(args.demos), "--out",
                  str(state), "--task", TASK, "--environment-state", "--only-success", "--no-cameras",
                  "--noise-rad", str(args.noise_rad), "--noisy-share", str(args.noisy_share)]
        export += LAYOUT_FLAGS[args.environment_state] + ["--relative-actions"] * args.relative_actions
        figures["export_s"] = run(export, args.out / "export.log")
    kept = read_layout(state)
    layout = {k: kept[k] for k in ("environment_state", "action_mode")}
    asked = {"environment_state": args.environment_state,
             "action_mode": "relative" if args.relative_actions else "absolute"}
    if layout != asked:
        sys.exit(f"{state} holds {layout}, not the {asked} asked for: change --environment-state / "
                 "--relative-actions, or use another --out")
    last = train / "checkpoints" / f"{args.steps:06d}" / "pretrained_model"
    normalised = "floor" if args.env_std_floor else "measured"
    trained_with = {"environment state std": normalised, "lr schedule": args.lr_schedule, "lr": args.lr,
                    "dropout": args.dropout, "decoder layers": args.decoder_layers}
    mode_file = args.out / "trained_with.json"  # a checkpoint kept from before must match the row it gives
    # a run recorded before these were written trained with ACT's preset
    kept_with = ({**ACT_PRESET, **json.loads(mode_file.read_text())} if mode_file.exists() else None)
    if last.exists() and kept_with is not None and kept_with != trained_with:
        differ = [k for k in trained_with if kept_with.get(k) != trained_with[k]]
        sys.exit(f"{train} was trained with " + ", ".join(f"{k} {kept_with.get(k)}" for k in differ) + ", not the "
                 + ", ".join(f"{k} {trained_with[k]}" for k in differ) + " asked for: change --[no-]env-std-floor / "
                 "--lr-schedule / --lr / --dropout / --decoder-layers, or use another --out")
    raised = floor_environment_state_std(state, args.env_std_floor)  # what training normalises with
    how = f"the std floor (raised: {', '.join(raised)})" if args.env_std_floor else "its measured std"
    print(f"environment state normalised with {how}")
    info = json.loads((state / "meta" / "info.json").read_text())
    print(f"dataset: {info['total_episodes']} episodes, {info['total_frames']} frames, features "
          f"{sorted(k for k in info['features'] if k.startswith(('observation', 'action')))}")

    if not last.exists():
        shutil.rmtree(train, ignore_errors=True)  # lerobot-train refuses an existing output_dir
        figures["train_s"] = run(train_command(args, state, train), args.out / "train.log", threads)
        mode_file.write_text(json.dumps(trained_with))
    curve = loss_curve(args.out / "train.log", args.log_freq)
    print("loss curve (step, loss):", ", ".join(f"{s} {loss:.4g}" for s, loss in curve))

    table = []
    schedule = " (cosine lr)" if args.lr_schedule == "cosine" else ""
    schedule += "".join(f", {k} {trained_with[k]:g}" for k in ACT_PRESET if trained_with[k] != ACT_PRESET[k])
    for steps in eval_steps:
        checkpoint = train / "checkpoints" / f"{steps:06d}" / "pretrained_model"
        name = f"{steps:06d}_{args.eval_seed}_{args.eval_episodes}"
        evaluation = args.out / f"eval_{name}"
        shutil.rmtree(evaluation, ignore_errors=True)
        figures[f"eval {steps}_s"] = run(eval_command(args, checkpoint, evaluation, layout),
                                         args.out / f"eval_{steps}.log", threads)
        eval_info = json.loads((evaluation / "eval_info.json").read_text())
        rows = outcomes(eval_info, args.eval_seed)
        seen = {seed for seed, _ in rows}
        assert len(seen) == len(rows) and not seen & set(train_seeds), "an evaluated seed is a training seed"
        furthest = [STAGES[stage_of_staged_reward(r)] for r in max_rewards(eval_info)]
        json_path, csv_path = write_outcomes(args.out / f"outcomes_{name}", rows, furthest)
        print(f"step {steps}, held-out seeds {args.eval_seed} .. {args.eval_seed + args.eval_episodes - 1}: success "
              f"{summary(rows)} (lerobot-eval, {evaluation / 'eval_info.json'}; per seed: {json_path}, {csv_path})")
        print(f"  {failures_by_stage(rows, furthest, list(STAGES))}")
        table.append(f"| {info['total_episodes']} of {args.demos} | {args.noise_rad:g} rad x {args.noisy_share:g} "
                     f"| {normalised} | {layout['environment_state']} | {layout['action_mode']} | {steps}{schedule} "
                     f"| {summary(rows)} |")
    if not args.no_expert:
        started = time.monotonic()
        pc = expert_reference(args.eval_seed, args.eval_episodes)
        print(f"the scripted expert on the same seeds (LeRobot's rollout): pc_success {pc:.1f} % "
              f"({time.monotonic() - started:.0f} s)")
    print("wall time (s): " + ", ".join(f"{k[:-2]} {v:.0f}" for k, v in figures.items()))
    print("| demonstrations kept | noise x noisy share | environment state std | environment state | actions "
          "| training steps | success on held-out seeds |")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
