"""Rows of bench/bench_env.py for the native batched env, mujoco.rollout alone and the Ray fleet.

native batched K: ``gym.make_vec(..., vectorization_mode="vector_entry_point")``, random actions,
no episode ends; env steps/s = K x vector steps/s.
mujoco.rollout alone K: the same K scenes and the same targets (the env's action mapping of the
same actions), one ``Rollout(nthread=T).rollout`` call per env step over the whole batch, the
final states fed back: MuJoCo's own threaded rollout with no env around it, this machine's limit
for that work. For each K, the single env, rollout alone and the batched env are measured in
turn, --repeats times, so a change of load on the machine hits all three; the notes under the
table give their ratios (median, and best of the repeats) and CPU time per env step.
Ray fleet: ``RayFleetVectorEnv`` of A actors of K/A scenes each on a local ``ray.init``.
"""
from __future__ import annotations

import os
import statistics
import time

import gymnasium as gym
import mujoco
import mujoco.rollout
import numpy as np

from robogym_ros.envs import ENV_ID
from robogym_ros.envs.actions import ActionMap
from robogym_ros.sim.physics import Physics
from robogym_ros.task.scene import default_model_path

PHYSICS_DT_S, DECIMATION = 0.002, 5


def _actions(n: int, k: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (n, k, 12)).astype(np.float32)


def threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def batched(n: int, k: int, action_repeat: int) -> tuple[float, float]:
    """(env steps/s by wall time, CPU seconds per env step of this process, all threads)."""
    vec = gym.make_vec(ENV_ID, num_envs=k, vectorization_mode="vector_entry_point",
                       action_repeat=action_repeat, max_episode_steps=n + 1)
    vec.reset(seed=0)
    acts = _actions(max(n // k, 10), k)
    t0, c0 = time.perf_counter(), time.process_time()
    for a in acts:
        vec.step(a)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    vec.close()
    return len(acts) * k / wall, cpu / (len(acts) * k)


def rollout_alone(n: int, k: int, action_repeat: int) -> tuple[float, float]:
    scenes = [Physics(default_model_path(), PHYSICS_DT_S, DECIMATION, seed=i) for i in range(k)]
    for p in scenes:
        p.reset_tick()  # the scenes the env's reset(seed=0) gives its K sub-envs
    m = scenes[0].model
    lower, upper = zip(*((j.lower, j.upper) for j in scenes[0].joints))
    amap = ActionMap(scenes[0].joint_names, lower, upper, normalized=True)
    acts = _actions(max(n // k, 10), k)
    targets = [np.stack([amap.targets(a) for a in batch]) for batch in acts]
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstep = DECIMATION * action_repeat
    state0 = np.empty((k, mujoco.mj_stateSize(m, full)))
    for i, p in enumerate(scenes):
        mujoco.mj_getState(p.model, p.data, state0[i], full)
    state = np.empty((k, nstep, state0.shape[1]))
    sensordata = np.empty((k, nstep, m.nsensordata))
    control = np.empty((k, nstep, m.nu))
    models = [p.model for p in scenes]
    nthread = threads()
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    with mujoco.rollout.Rollout(nthread=nthread) as rollout:
        t0, c0 = time.perf_counter(), time.process_time()
        for t in targets:
            control[:] = t[:, None, :]  # the scene's actuators are exactly the 12 servos, in order
            rollout.rollout(models, datas, state0, control, skip_checks=True, nstep=nstep,
                            control_spec=int(mujoco.mjtState.mjSTATE_CTRL), state=state, sensordata=sensordata)
            state0[:] = state[:, -1]
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(targets) * k / wall, cpu / (len(targets) * k)


def ray_fleet(n: int, actors: int, k: int, action_repeat: int) -> float:
    import ray

    from robogym_ros.envs.vector.ray_fleet import RayFleetVectorEnv
    ray.init(num_cpus=threads(), include_dashboard=False, log_to_driver=False)
    try:
        vec = RayFleetVectorEnv(actors, k // actors, action_repeat=action_repeat, max_episode_steps=n + 1)
        vec.reset(seed=0)
        acts = _actions(max(n // k, 10), k)
        vec.step(acts[0])  # the first call warms the actors up
        t0 = time.perf_counter()
        for a in acts:
            vec.step(a)
        rate = len(acts) * k / (time.perf_counter() - t0)
        vec.close()
    finally:
        ray.shutdown()
    return rate


def single(n: int, action_repeat: int) -> tuple[float, float]:
    """The single env (``gym.make``), as bench_env.local_single measures it, for the interleaved ratios."""
    env = gym.make(ENV_ID, action_repeat=action_repeat, max_episode_steps=n + 1)
    env.reset(seed=0)
    acts = _actions(n, 1)
    t0, c0 = time.perf_counter(), time.process_time()
    for a in acts:
        env.step(a[0])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    env.close()
    return n / wall, cpu / n


def rows(n: int, ks: list[int], ray_actors: int, action_repeat: int, repeats: int):
    """(name, env steps/s) rows (medians) and the lines that compare batched with the single env
    and with rollout alone, each measured in turn with it (median, and best of the repeats: the
    run least disturbed by other load on the machine)."""
    out, notes = [], []
    for k in ks:
        runs = [(single(n, action_repeat), rollout_alone(n, k, action_repeat), batched(n, k, action_repeat))
                for _ in range(repeats)]
        med = [statistics.median(r[j][0] for r in runs) for j in range(3)]
        best = [max(r[j][0] for r in runs) for j in range(3)]
        cpu = [statistics.median(r[j][1] for r in runs) for j in range(3)]
        out.append((f"mujoco.rollout alone, K = {k} ({threads()} threads)", med[1]))
        out.append((f"native batched K = {k} (make_vec vector_entry_point)", med[2]))
        notes.append(f"K = {k:2d}: batched / single {med[2] / med[0]:.2f}x (best {best[2] / best[0]:.2f}x), "
                     f"/ rollout alone {med[2] / med[1]:.0%} (best {best[2] / best[1]:.0%}); CPU us per env step: "
                     f"single {cpu[0] * 1e6:.0f}, rollout {cpu[1] * 1e6:.0f}, batched {cpu[2] * 1e6:.0f} "
                     f"(rollout / batched {cpu[1] / cpu[2]:.0%})"
                     + (" (targets at K = 8: >= 1.70x, >= 90 %)" if k == 8 else ""))
    if ray_actors:
        try:
            k = 4 * ray_actors
            out.append((f"Ray fleet, {ray_actors} actors x {k // ray_actors} scenes (local ray.init)",
                        ray_fleet(n, ray_actors, k, action_repeat)))
        except ImportError:
            notes.append("Ray fleet: skipped, ray is not installed (pip install 'robogym_ros[ray]')")
    return out, notes
