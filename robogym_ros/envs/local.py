"""Local mode: the sim node's own physics (robogym_ros.sim.physics) in this process, no ROS.

A seeded reset starts the scene's generator afresh exactly as a freshly started sim node
with that seed does: the node builds its Physics (which resets once, drawing the first
scene) and its first ``reset`` service call draws the second scene as a tick of its own
(index 1). So ``reset(seed=s)`` here gives what the first reset of a node started with
``seed:=s`` gives, bit for bit, and each unseeded reset after it draws the next scene, as
each further ``reset`` call does on the node.
"""
from __future__ import annotations

import numpy as np

from robogym_ros.sim.physics import Physics
from robogym_ros.sim.tick import Tick

SEED_LIMIT = 2**31  # the sim node's seed parameter range: 0 .. 2**31 - 1


class LocalBackend:
    """Physics stepped in-process, one control tick at a time, as the paused node steps it."""

    realtime = False

    def __init__(self, model_path: str, physics_dt_s: float, decimation: int, seed: int):
        self._config = (model_path, physics_dt_s, decimation)
        self._physics = Physics(model_path, physics_dt_s, decimation, seed)
        p = self._physics
        self.joint_names = p.joint_names
        self.joint_ranges = [(j.lower, j.upper) for j in p.joints]
        self.object_names = list(p.object_names)
        self.control_dt_ns = p.control_dt_ns
        self.model_path = model_path

    def reset(self, seed: int | None) -> Tick:
        """A new episode; ``seed`` restarts the scene's generator (see the module's docstring)."""
        if seed is not None:
            if not 0 <= int(seed) < SEED_LIMIT:
                raise ValueError(f"seed must be in 0 .. {SEED_LIMIT - 1} (the sim node's range), got {seed}")
            self._physics = Physics(*self._config, int(seed))
        self._physics.reset_tick()
        return self._physics.snapshot()

    def step(self, targets: dict[str, float] | np.ndarray, n_ticks: int) -> Tick:
        """Targets from the next tick on (by joint name, or a new array of all, in ``joint_names``
        order), then ``n_ticks`` control ticks; the last one's record."""
        p = self._physics
        if isinstance(targets, np.ndarray):
            p.set_all_targets(targets)
        else:
            p.set_targets(targets)
        blew_up = p.step_ticks(n_ticks)  # True: the physics reset itself; the episode is over
        return p.snapshot(blew_up=blew_up)

    def close(self) -> None:
        pass
