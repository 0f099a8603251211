"""Run the expert in the Gymnasium env (duck-typed: no gymnasium import) and say how it went."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from robogym_ros.expert.percept import Percept
from robogym_ros.expert.policy import HandoverExpert


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of the expert in the env."""
    seed: int | None
    success: bool  # the env's own success (info["is_success"]): the block placed in the tray
    steps: int
    sim_time_s: float
    phase: str  # the phase the expert was in when the episode ended
    failure: str | None  # "phase: reason" where the expert gave up
    events: tuple[str, ...]  # retries and their causes
    digest: str = ""  # sha256 of every action sent and the last observation: equal digests, equal rollouts


class EnvExpert:
    """``action = expert(obs)`` for ``robogym_ros/Handover-v0``: the observation in, an action of
    the env's action space out (normalised or rad, whichever the env uses)."""

    def __init__(self, env, expert: HandoverExpert | None = None):
        self.env = env
        u = env.unwrapped
        self.expert = expert or HandoverExpert(u._model_path)
        self._layout = u.layout
        self._block = u.object_names.index("block")
        self._tray = u.object_names.index("tray")
        self._dt_s = u.control_dt_ns * u.action_repeat * 1e-9
        self._actions = u._actions
        self._steps = 0

    def reset(self) -> None:
        self.expert.reset()
        self._steps = 0

    def percept(self, obs) -> Percept:
        o = obs["observation"]
        poses = o[self._layout.object_poses].reshape(-1, 7)
        return Percept(self._steps * self._dt_s, o[self._layout.positions].copy(),
                       poses[self._block].copy(), poses[self._tray].copy())

    def __call__(self, obs) -> np.ndarray:
        targets = self.expert(self.percept(obs))
        self._steps += 1
        return self._actions.action_of(targets)

    def free_joints(self) -> np.ndarray:
        """The joints moving in free space in the phase of the latest action (bool, 12; the expert's)."""
        return self.expert.free_joints()


def run_episode(env, seed: int | None, expert: EnvExpert | None = None, *, frames: list | None = None,
                render_every: int = 0) -> EpisodeResult:
    """One episode until success (the env's ``terminated``), the time limit or a blow-up;
    ``frames`` collects renders."""
    expert = expert or EnvExpert(env)
    expert.reset()
    obs, info = env.reset(seed=seed)
    steps, success = 0, False
    digest = hashlib.sha256()
    while True:
        action = expert(obs)
        digest.update(np.asarray(action, dtype=np.float64).tobytes())
        obs, _, terminated, truncated, info = env.step(action)
        steps += 1
        if frames is not None and render_every and steps % render_every == 0:
            frames.append((steps, expert.expert.phase, env.render()))
        if terminated or truncated:
            success = bool(info.get("is_success", 0.0))
            break
    digest.update(np.asarray(obs["observation"], dtype=np.float64).tobytes())
    e = expert.expert
    failure = f"{e.failure.phase}: {e.failure.reason}" if e.failure else None
    phase = e.failure.phase if e.failure else e.phase
    return EpisodeResult(seed, success, steps, steps * expert._dt_s, phase, failure, tuple(e.events),
                         digest.hexdigest()[:16])
