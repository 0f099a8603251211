"""The real-time loop: physics stepped on a deadline schedule, in a process of its own.

Run as ``python -m robogym_ros.sim FD_CMD FD_TICK`` by
:class:`~robogym_ros.sim.process.SimProcess`. A plain subprocess rather than
multiprocessing: a spawned multiprocessing child re-imports the parent's ``__main__`` (the
ROS node's console script, hence rclpy); this one imports only physics, and sets
``MUJOCO_GL=disable`` so no GL library is loaded either.

Two socket pairs cross the boundary: ``cmd`` (requests polled between physics steps,
dispatched from :meth:`RealTimeLoop.operations`; replies carry the result or the exception,
re-raised at the caller) and ``tick`` (one packed :class:`~robogym_ros.sim.tick.Tick` per
control tick, one way).
"""
from __future__ import annotations

import ctypes
import gc
import logging
import math
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, fields, replace
from functools import cached_property
from multiprocessing.connection import Connection
from typing import Callable

import numpy as np

from robogym_ros.params import SIM, default
from robogym_ros.sim.entities import SceneEntities
from robogym_ros.sim.lateness import Stats, lateness_decades, lateness_percentile_s
from robogym_ros.sim.physics import Joint, Physics

log = logging.getLogger("robogym_ros.sim.loop")

@dataclass(frozen=True)
class LoopConfig:
    """What the physics process needs to start; defaults and ranges from robogym_ros.params."""
    model_path: str
    physics_dt_s: float = default("physics_dt_s")
    decimation: int = default("decimation")
    seed: int = default("seed")
    real_time_factor: float = default("real_time_factor")  # 0 = as fast as possible
    start_paused: bool = default("start_paused")
    max_lag_s: float = default("max_lag_s")

    def __post_init__(self):
        for f in fields(self):
            if f.name in SIM:  # raises ValueError naming the parameter and its range
                object.__setattr__(self, f.name, SIM[f.name].coerce(getattr(self, f.name)))


@dataclass(frozen=True)
class Status:
    """The loop's state and pacing figures, as of one moment between two physics steps."""
    tick_index: int
    sim_time_ns: int
    episode: int
    paused: bool
    steps: int
    late_steps: int  # begun more than one physics dt (wall) after the deadline
    max_lateness_s: float
    skips: int
    skipped_s: float  # sim time given up to max_lag, in sim seconds
    resets: int  # blow-ups recovered
    real_time_factor: float
    wall_time_s: float  # time.monotonic() when taken
    lateness_p50_s: float
    lateness_p99_s: float
    # Steps by lateness: < 10 us, < 100 us, < 1 ms, < 10 ms, later (a coarse histogram).
    lateness_decades: tuple[int, ...]


@dataclass(frozen=True)
class Description:
    """What the loaded model offers; fixed for the life of the process."""
    joints: tuple[Joint, ...]
    objects: tuple[str, ...]
    physics_dt_ns: int
    control_dt_ns: int
    decimation: int
    pid: int
    modules: tuple[str, ...]  # what the process has imported (the import-tier tests read it)
    scheduling: str  # the physics thread's policy at start; configure returns a later one


class RealTimeLoop:
    """Paces physics against wall time and serves the node's requests between steps."""

    def __init__(self, physics: Physics, config: LoopConfig, cmd: Connection, tick: Connection):
        self.physics = physics
        self.config = config
        self.cmd = cmd
        self.tick = tick
        self.stats = Stats()
        self.paused = config.start_paused
        self.running = True
        self._warned_at = -math.inf
        self._sub = 0  # physics steps done inside the current control tick
        # The last tick physics may complete on its own (None: no limit). The node's cameras
        # set it at real_time_factor 0 so that physics waits for frames instead of outrunning
        # them; paused steps ignore it.
        self.tick_limit: int | None = None
        self.scheduling = "default"
        # Joints to hold where they are when the next control tick starts (hold()).
        self._holds: set[str] = set()
        # Polled between physics steps: one C call, where Connection.poll(0) builds a selector
        # in Python each time (measured at ~15 % of the physics process at real_time_factor 0).
        self._requests = select.poll()
        self._requests.register(cmd.fileno(), select.POLLIN)
        self._rebase()

    def operations(self) -> dict[str, Callable]:
        """What the node may ask for, by name: the one table requests are dispatched from."""
        return {
            "pause": self.pause, "resume": self.resume, "reset": self.reset, "step": self.step,
            "set_targets": self.set_targets, "configure": self.configure, "status": self.status,
            "set_tick_limit": self.set_tick_limit, "reseed": self.physics.reseed,
            "set_trajectory": self.set_trajectory,  # a validated TrajectoryCommand
            "hold": self.hold,
            "lateness_histogram": self.lateness_histogram, "describe": self.describe,
            "entity_states": self.entity_states, "set_entity_state": self.set_entity_state,
            "entity_bounds": self.entity_bounds,
            "stop": self.stop,
        }

    # Schedule: step k+1 is due at origin + (k + 1 - k_origin) * wall_dt. Re-based on resume,
    # on a change of pace and on a max_lag skip, so lost time is skipped, never rushed.
    def _rebase(self) -> None:
        self._origin = time.monotonic()
        self._k_origin = self.physics_steps

    @property
    def physics_steps(self) -> int:
        return self.physics.tick_index * self.physics.decimation + self._sub

    @property
    def wall_dt_s(self) -> float:
        rtf = self.config.real_time_factor
        return self.config.physics_dt_s / rtf if rtf > 0 else 0.0

    def _held(self) -> bool:
        return (self.paused or (self.tick_limit is not None and self._sub == 0
                                and self.physics.tick_index >= self.tick_limit))

    def _request_waiting(self) -> bool:
        """A request (or the node's end: a hang-up) is waiting on the command pipe."""
        return bool(self._requests.poll(0))

    def run(self) -> None:
        ops = self.operations()
        while self.running:
            if self._held():
                if self.cmd.poll(0.05):
                    self._serve_one(ops)
                continue
            while self._request_waiting():
                self._serve_one(ops)
                if self._held() or not self.running:
                    break
            else:
                self._advance()

    def _advance(self) -> None:
        wall_dt = self.wall_dt_s
        if wall_dt == 0.0:  # as fast as possible: the tick pipe's back-pressure paces us
            # A whole tick between looks at the command pipe: a request waits at most one
            # tick of compute (~0.3 ms), and a pause lands on the tick grid anyway.
            self._physics_step(0.0)
            while self._sub:
                self._physics_step(0.0)
            return
        deadline = self._origin + (self.physics_steps + 1 - self._k_origin) * wall_dt
        now = time.monotonic()
        if now < deadline:
            time.sleep(deadline - now)
            now = time.monotonic()
        lag = now - deadline
        if lag > self.config.max_lag_s:
            self.stats.skips += 1
            self.stats.skipped_s += lag * self.config.real_time_factor
            self._origin += lag
            log.warning("%.3f s behind: skipping ahead (not rushing)", lag)
            return
        self._physics_step(lag)

    def _physics_step(self, lateness_s: float) -> None:
        p = self.physics
        if self._sub == 0:
            self._apply_holds()
            p.begin_tick()
        p.step_physics()
        self._sub += 1
        self.stats.record(lateness_s, self.wall_dt_s)
        if lateness_s > self.wall_dt_s > 0 and time.monotonic() - self._warned_at > 1.0:
            self._warned_at = time.monotonic()
            log.warning("late step: %.3f ms after its deadline", lateness_s * 1e3)
        if self._sub == p.decimation:
            self._sub = 0
            self._end_tick()

    def _end_tick(self) -> None:
        blew_up = self.physics.end_tick()
        if blew_up:
            self.stats.resets += 1
            self.paused = True
            self._holds.clear()  # the scene was reset: nothing to hold
            log.error("simulation blew up (bad qpos/qvel/qacc): reset and paused")
        self._send_tick(blew_up)

    def _send_tick(self, blew_up: bool = False) -> None:
        self.tick.send_bytes(self.physics.snapshot(blew_up=blew_up).to_bytes())

    def _serve_one(self, ops: dict[str, Callable]) -> None:
        try:
            op, args, kwargs, want_reply = self.cmd.recv()
        except EOFError:  # the node is gone: nobody to run for
            self.running = False
            return
        try:
            result = ("ok", ops[op](*args, **kwargs))
        except Exception as exc:  # sent back, re-raised at the caller
            result = ("error", exc)
        if want_reply:
            self.cmd.send(result)

    # --- operations ---------------------------------------------------------------------------
    def pause(self) -> int:
        """Pause on the tick grid; returns the index of the last tick before the pause.

        A pause that lands mid-tick completes (and publishes) that tick first.
        """
        while self._sub:
            self._physics_step(0.0)
        self.paused = True
        return self.physics.tick_index

    def resume(self) -> int:
        """Returns the index of the last tick before the run resumes."""
        if self.paused:
            self.paused = False
            self._rebase()
        return self.physics.tick_index

    def reset(self) -> dict:
        """Re-randomise, drop pending targets, stay paused (like robogym); returns the draw.

        The reset is a control tick of its own, published at once: the latest joint_states
        then shows the new episode, under a new stamp on the grid (the clock goes on).
        """
        self.pause()
        self._holds.clear()  # the reset drops every pending target
        draw = self.physics.reset_tick()
        self._send_tick()
        # Which tick, and which scene of which seed's sequence (Physics.scene): a client checks
        # a seeded reset against these.
        p = self.physics
        return {"tick": p.tick_index, "seed": p.seed, "scene": p.scene, **draw}

    def step(self, n_ticks: int = 1, from_index: int | None = None, targets: dict[str, float] | None = None) -> int:
        """``n_ticks`` control ticks while paused, each sent as it completes; returns the index
        of the last. A blow-up ends the step at its tick (the scene was reset). ``from_index``:
        refused unless the last tick is that one (a lockstep client checks nobody else moved it);
        ``targets`` from the first tick on, set only once the step is accepted."""
        if not self.paused:
            raise RuntimeError("step is only allowed while paused")
        if isinstance(n_ticks, bool) or not isinstance(n_ticks, int) or n_ticks < 1:
            raise ValueError(f"n_ticks must be an integer >= 1, got {n_ticks!r}")
        if from_index is not None and from_index != self.physics.tick_index:
            raise RuntimeError(f"asked to step from tick {from_index}, but the sim is at tick "
                               f"{self.physics.tick_index} (another client stepped or reset it)")
        if targets:
            self.set_targets(targets)
        for _ in range(n_ticks):
            self._apply_holds()
            blew_up = self.physics.step_tick()
            if blew_up:
                self.stats.resets += 1
                self._holds.clear()
            self._send_tick(blew_up)
            if blew_up:
                break
        return self.physics.tick_index

    def set_targets(self, targets: dict[str, float]) -> None:
        self._holds.difference_update(targets)  # a newer command wins its joints
        self.physics.set_targets(targets)

    def set_trajectory(self, command) -> tuple[int, int]:
        """Queue a validated TrajectoryCommand; returns (sim time in ns of the start of the tick
        that takes it up, episode): an arm controller times its goal from these."""
        self._holds.difference_update(command.joint_names)
        self.physics.set_trajectory(command)
        p = self.physics
        return (p.tick_index + (1 if self._sub else 0)) * p.control_dt_ns, p.episode

    def hold(self, names) -> int | None:
        """Hold these joints where they are when the next control tick starts (JTC's hold after a
        cancel or a tolerance violation); returns the index of the first tick published with the
        hold, or None while paused (the next step's).

        Where they are then, not where the node last saw them: the node's latest tick is a tick or
        two behind a moving arm, and a hold there pulled the arm back by that much.
        """
        self.physics.actuators(names)  # a name this model lacks raises here, not at the tick
        self._holds.update(names)
        return None if self.paused else self.physics.tick_index + (2 if self._sub else 1)

    def _apply_holds(self) -> None:
        """At the start of a control tick: targets of the held joints = their positions now."""
        if not self._holds:
            return
        p = self.physics
        p.set_targets({j.name: float(np.clip(q, j.lower, j.upper))
                       for j, q in zip(p.joints, p.q) if j.name in self._holds})
        self._holds.clear()

    def configure(self, *, real_time_factor: float | None = None, max_lag_s: float | None = None) -> str:
        """Change the pace while running; the schedule restarts from now. Returns the physics
        thread's scheduling policy now (real time for real_time_factor > 0, when allowed)."""
        changes = {k: v for k, v in (("real_time_factor", real_time_factor), ("max_lag_s", max_lag_s))
                   if v is not None}
        was_real_time = self.config.real_time_factor > 0
        self.config = replace(self.config, **changes)
        if (self.config.real_time_factor > 0) != was_real_time:
            self.scheduling = set_priority(self.config.real_time_factor > 0)
        self._rebase()
        return self.scheduling

    def set_tick_limit(self, tick_index: int | None) -> None:
        """Physics completes ticks up to ``tick_index`` on its own, then waits (None: no limit)."""
        held = self._held()
        self.tick_limit = tick_index
        if held and not self._held():
            self._rebase()  # a wait is not lateness

    def status(self) -> Status:
        s = self.stats
        return Status(
            tick_index=self.physics.tick_index,
            sim_time_ns=self.physics_steps * self.physics.physics_dt_ns,
            episode=self.physics.episode, paused=self.paused, steps=s.steps, late_steps=s.late_steps,
            max_lateness_s=s.max_lateness_s, skips=s.skips, skipped_s=s.skipped_s, resets=s.resets,
            real_time_factor=self.config.real_time_factor, wall_time_s=time.monotonic(),
            lateness_p50_s=lateness_percentile_s(s.hist, 50), lateness_p99_s=lateness_percentile_s(s.hist, 99),
            lateness_decades=lateness_decades(s.hist))

    def lateness_histogram(self) -> np.ndarray:
        return self.stats.hist.copy()

    # --- entities (robogym_ros.sim.entities): the ROS simulation API's view of the scene -----
    @cached_property
    def entities(self) -> SceneEntities:
        return SceneEntities(self.physics.model)

    def entity_states(self) -> tuple[int, np.ndarray]:
        """(sim time ns of the state, one row per entity: pose and twist in world). Reads only."""
        return self.physics_steps * self.physics.physics_dt_ns, self.entities.states(self.physics.data)

    def entity_bounds(self) -> np.ndarray:
        """Each entity's world axis-aligned box now, (n, 6): min xyz, max xyz. Reads only."""
        return self.entities.bounds(self.physics.data)

    def set_entity_state(self, name: str, state) -> int:
        """Put a free body at ``state`` now (the next tick shows it); returns the sim time ns.
        A refused state (unknown name, a robot, not finite, ...) raises and changes nothing."""
        self.entities.set_state(self.physics.data, name, state)
        return self.physics_steps * self.physics.physics_dt_ns

    def describe(self) -> Description:
        p = self.physics
        return Description(
            joints=tuple(p.joints), objects=tuple(p.object_names), physics_dt_ns=p.physics_dt_ns,
            control_dt_ns=p.control_dt_ns, decimation=p.decimation, pid=os.getpid(),
            modules=tuple(sorted(sys.modules)), scheduling=self.scheduling)

    def stop(self) -> None:
        self.running = False


def set_priority(real_time: bool) -> str:
    """Best effort, like robogym: refused without privileges; warn and go on. Says what it got."""
    try:  # 1 ns timer slack: the default 50 us would be a fifth of our lateness budget
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK
    except Exception:  # noqa: BLE001 - optional nicety
        pass
    if real_time:
        # SCHED_FIFO wakes us ahead of every normal task: on 2 busy cores the difference between
        # ~10 % and ~0 late steps. We sleep >90 % of the time, so nothing else starves. Never
        # for real_time_factor 0, which never sleeps.
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            return "SCHED_FIFO 10"
        except (OSError, AttributeError) as exc:
            log.warning("SCHED_FIFO refused (%s); trying nice -10", exc)
    else:
        try:  # a busy loop under SCHED_FIFO would starve every other task
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except (OSError, AttributeError):
            pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        return "nice -10"
    except OSError as exc:
        log.warning("could not raise scheduling priority (%s); pacing may suffer", exc)
        return "default"


def child_main(cmd_fd: int, tick_fd: int) -> None:
    logging.basicConfig(level=logging.INFO, format="[robogym_sim.physics] %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the node tells us when to stop
    cmd, tick = Connection(cmd_fd), Connection(tick_fd, readable=False)
    config = cmd.recv()
    try:
        physics = Physics(config.model_path, config.physics_dt_s, config.decimation, config.seed)
        loop = RealTimeLoop(physics, config, cmd, tick)
    except Exception as exc:  # noqa: BLE001 - reported to the node, which reports it to the user
        cmd.send(("error", exc))
        return
    cmd.send(("ok", None))
    loop.scheduling = set_priority(config.real_time_factor > 0)
    gc.freeze()  # nothing allocated so far will ever be collected: keep GC passes short
    try:
        loop.run()
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the node went away
