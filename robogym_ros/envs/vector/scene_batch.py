"""K scenes of the handover stepped at once: ``mujoco.rollout`` on a pool of threads.

Each scene is a :class:`robogym_ros.sim.physics.Physics` of its own (model, data, seeded
generator), reset exactly as :class:`robogym_ros.envs.local.LocalBackend` resets it, so a
scene is the single env's physics, bit for bit. Only the stepping differs: instead of
``action_repeat x decimation`` calls of ``mj_step`` from Python, one ``mujoco.rollout`` call per
scene runs them all in C with the GIL released, and the scenes are split over ``num_threads``
threads (the calling thread is one of them; each takes the next scene left).

Why one rollout call per scene, on its own MjData, and not one call for the whole batch:
rollout's output is ``mjSTATE_FULLPHYSICS``, which lacks the solver's warm start
(``qacc_warmstart``) and the actuator forces of the last step; the single env carries both
in its MjData from step to step (the warm start changes the next solve in its last bits, the
forces are the observation's gripper efforts). Rolled out on the scene's own MjData, with the
scene's warm start passed in, the MjData ends holding exactly what ``mj_step`` would have left
there (``mjSTATE_INTEGRATION`` is the complete input of ``mj_step``).

rollout stops a trajectory at the first MuJoCo warning, where the single env steps on (and
resets the scene at the end of a tick that blew up). A scene that raised any warning is put
back to its state before the step and stepped again by ``Physics.step_tick``, the single
env's own path: rare (a blow-up), and exactly the single env's behaviour.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import mujoco
import mujoco.rollout
import numpy as np

from robogym_ros.contract import POSE_SIZE
from robogym_ros.envs.local import SEED_LIMIT
from robogym_ros.sim.physics import Physics, discover_joints, discover_objects

if not hasattr(mujoco.rollout, "Rollout"):  # the thread-pool class came after mujoco 3.2
    raise ImportError("the batched env needs mujoco.rollout.Rollout (mujoco >= 3.3); "
                      f"this is mujoco {mujoco.__version__}")
_FULL = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
_CTRL = int(mujoco.mjtState.mjSTATE_CTRL)


class _Scene:
    """One scene's Physics and the buffers its rollout call reads (reused: never returned)."""

    def __init__(self, physics: Physics):
        m, d = physics.model, physics.data
        self.physics = physics
        self.models, self.datas = [m], [d]  # rollout takes lists
        self.state0 = np.empty((1, mujoco.mj_stateSize(m, _FULL)))
        self.warmstart0 = np.empty((1, m.nv))
        # Views into data.warning (as Physics keeps them): rollout stops at any of these.
        self.warnings = [d.warning[w] for w in range(int(mujoco.mjtWarning.mjNWARNING))]


class SceneBatch:
    """``num_scenes`` Physics stepped together; targets in, MjData of each scene out."""

    def __init__(self, num_scenes: int, model_path: str, physics_dt_s: float, decimation: int,
                 action_repeat: int, num_threads: int):
        self._config = (model_path, physics_dt_s, decimation)
        self.n_ticks = int(action_repeat)
        self._n_steps = int(decimation) * self.n_ticks
        entropy = np.random.SeedSequence().generate_state(num_scenes)
        self._scenes = [_Scene(Physics(*self._config, int(s) % SEED_LIMIT)) for s in entropy]
        model = self._scenes[0].physics.model
        joints, actuators = discover_joints(model)
        names, object_adr = discover_objects(model)
        self.actuators = actuators
        self.qpos_adr = model.jnt_qposadr[model.actuator_trnid[actuators, 0]].copy()
        self.dof_adr = model.jnt_dofadr[model.actuator_trnid[actuators, 0]].copy()
        self.pose_idx = (object_adr[:, None] + np.arange(POSE_SIZE)).ravel()
        self.num_threads = max(1, min(int(num_threads), num_scenes))
        self._rollouts = [mujoco.rollout.Rollout(nthread=0) for _ in range(self.num_threads)]  # one per thread
        self._pool = ThreadPoolExecutor(self.num_threads - 1) if self.num_threads > 1 else None

    def __len__(self) -> int:
        return len(self._scenes)

    def physics(self, i: int) -> Physics:
        return self._scenes[i].physics

    def reset(self, i: int, seed: int | None) -> None:
        """LocalBackend.reset for scene i: a seed starts a new Physics (the node's first reset)."""
        if seed is not None:
            self._scenes[i] = _Scene(Physics(*self._config, int(seed)))
        self._scenes[i].physics.reset_tick()

    def step(self, targets: np.ndarray, active: np.ndarray,
             after: Callable[[int, int, np.ndarray], None] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """Targets (K, joints) held for ``action_repeat`` ticks in every active scene.

        Returns, per scene, whether it blew up (it was then reset, as the single env's is), and
        :meth:`gather`'s arrays after the step (each thread copies out the scenes it stepped).
        ``after(i, worker, qpos)``: called by the thread that stepped scene i, with its index
        (0 .. num_threads - 1) and the scene's new qpos: per-scene work that runs in parallel."""
        blew_up = np.zeros(len(self._scenes), dtype=bool)
        out = self._new_arrays()
        todo = [int(i) for i in np.flatnonzero(active)]
        for i in np.flatnonzero(~active):
            self._copy_out(int(i), out)
        # Each thread takes the next scene not yet taken (next() on a shared count is atomic
        # under the GIL): a thread the OS holds back, or a scene with more contacts, delays
        # the step by one scene at most, not by a whole share.
        taken = itertools.count()
        futures = [self._pool.submit(self._step_scenes, r, todo, taken, targets, blew_up, out, after, w)
                   for w, r in enumerate(self._rollouts[1:], start=1)] if len(todo) > 1 else []
        try:
            self._step_scenes(self._rollouts[0], todo, taken, targets, blew_up, out, after, 0)
        finally:  # never return (or raise) while another thread still steps a scene
            for f in futures:
                f.result()
        return blew_up, out

    def _step_scenes(self, rollout: mujoco.rollout.Rollout, todo: list[int], taken, targets: np.ndarray,
                     blew_up: np.ndarray, out: tuple[np.ndarray, ...], after, worker: int) -> None:
        while (n := next(taken)) < len(todo):
            i = todo[n]
            s = self._scenes[i]
            p = s.physics
            m, d = p.model, p.data
            d.ctrl[self.actuators] = targets[i]  # zero-order hold: set once, held for the whole step
            mujoco.mj_getState(m, d, s.state0[0], _FULL)
            s.warmstart0[0] = d.qacc_warmstart
            # control_spec CTRL without a control array: rollout leaves d.ctrl as set above, held
            # for every step, as the single env holds its targets (and copies nothing per step).
            rollout.rollout(s.models, s.datas, s.state0, None, control_spec=_CTRL, skip_checks=True,
                            nstep=self._n_steps, initial_warmstart=s.warmstart0)
            if any(w.number for w in s.warnings):
                blew_up[i] = self._step_as_single_env(s)
            else:
                p.tick_index += self.n_ticks
            self._copy_out(i, out)
            if after is not None:
                after(i, worker, out[0][i])

    def _step_as_single_env(self, s: _Scene) -> bool:
        # Back to the state before the step: its integration state is what rollout started from
        # (physics state, warm start, and the controls, which rollout left alone; applied forces
        # are zero in this env, and rollout zeroes them too). Then LocalBackend.step's own loop.
        p = s.physics
        mujoco.mj_setState(p.model, p.data, s.state0[0], _FULL)
        p.data.qacc_warmstart[:] = s.warmstart0[0]
        for w in s.warnings:
            w.number = 0
        return p.step_ticks(self.n_ticks)

    def gather(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """qpos (K, nq), qvel (K, nv), actuator_force (K, nu): new arrays, copied out of MjData."""
        out = self._new_arrays()
        for i in range(len(self._scenes)):
            self._copy_out(i, out)
        return out

    def _new_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m, k = self._scenes[0].physics.model, len(self._scenes)
        return np.empty((k, m.nq)), np.empty((k, m.nv)), np.empty((k, m.nu))

    def _copy_out(self, i: int, out: tuple[np.ndarray, ...]) -> None:
        d = self._scenes[i].physics.data
        out[0][i], out[1][i], out[2][i] = d.qpos, d.qvel, d.actuator_force

    def tick_index(self) -> np.ndarray:
        return np.array([s.physics.tick_index for s in self._scenes], dtype=np.int64)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for r in self._rollouts:
            r.close()
        self._rollouts = []
