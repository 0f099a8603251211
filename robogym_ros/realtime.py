"""The real-time loop: physics stepped on a deadline schedule, in a process of its own.

Run as ``python -m robogym_ros.realtime FD_CMD FD_TICK`` by :class:`SimProcess`. A plain
subprocess rather than multiprocessing: a spawned multiprocessing child re-imports the
parent's ``__main__`` (the ROS node's console script, hence rclpy); this one imports only
physics, and sets ``MUJOCO_GL=disable`` so no GL library is loaded either.

Two socket pairs cross the boundary: ``cmd`` (requests polled between physics steps,
replies carry results or the exception, re-raised at the caller) and ``tick`` (one packed
:class:`~robogym_ros.tick.Tick` per control tick, one way).
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ["MUJOCO_GL"] = "disable"  # before mujoco is imported, below

import ctypes
import gc
import logging
import math
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection

import numpy as np

from robogym_ros.physics import Physics
from robogym_ros.tick import Tick

log = logging.getLogger("robogym_ros.realtime")

HIST_BIN_S = 1e-6  # lateness histogram: 1 us bins ...
HIST_BINS = 20_000  # ... up to 20 ms; the last bin collects everything later


@dataclass(frozen=True)
class LoopConfig:
    model_path: str
    physics_dt_s: float = 0.002
    decimation: int = 5
    seed: int = 0
    real_time_factor: float = 1.0  # 0 = as fast as possible
    start_paused: bool = False
    max_lag_s: float = 0.5

    def __post_init__(self):
        if not (self.real_time_factor >= 0 and math.isfinite(self.real_time_factor)):
            raise ValueError(f"real_time_factor must be >= 0 (0 = as fast as possible), "
                             f"got {self.real_time_factor}")
        if not self.max_lag_s > 0:
            raise ValueError(f"max_lag_s must be > 0, got {self.max_lag_s}")


class Stats:
    """Pacing figures. Lateness = how long after its deadline a physics step began."""

    def __init__(self):
        self.steps = 0
        self.late_steps = 0  # begun more than one physics dt (wall) after the deadline
        self.max_lateness_s = 0.0
        self.skipped_s = 0.0  # sim time given up to max_lag, in sim seconds
        self.skips = 0
        self.resets = 0  # blow-ups recovered
        self.hist = np.zeros(HIST_BINS, dtype=np.int64)

    def record(self, lateness_s: float, late_after_s: float) -> None:
        self.steps += 1
        if lateness_s > self.max_lateness_s:
            self.max_lateness_s = lateness_s
        if lateness_s > late_after_s:
            self.late_steps += 1
        self.hist[min(int(lateness_s / HIST_BIN_S), HIST_BINS - 1)] += 1


def lateness_percentile_s(hist: np.ndarray, q: float) -> float:
    """Upper edge of the histogram bin holding the q-th percentile (q in 0..100)."""
    total = int(hist.sum())
    if total == 0:
        return math.nan
    rank = math.ceil(q / 100.0 * total)
    return (int(np.searchsorted(np.cumsum(hist), max(rank, 1))) + 1) * HIST_BIN_S


class RealTimeLoop:
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
        self.scheduling = "default"
        self._rebase()

    # Schedule: step k+1 is due at origin + (k + 1 - k_origin) * wall_dt. Re-based on resume
    # and on a max_lag skip, so lost time is skipped, never rushed.
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

    def run(self) -> None:
        while self.running:
            if self.paused:
                if self.cmd.poll(0.05):
                    self._serve_one()
                continue
            while self.cmd.poll(0):
                self._serve_one()
                if self.paused or not self.running:
                    break
            else:
                self._advance()

    def _advance(self) -> None:
        wall_dt = self.wall_dt_s
        if wall_dt == 0.0:  # as fast as possible: the tick pipe's back-pressure paces us
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
        if self.physics.end_tick():
            self.stats.resets += 1
            self.paused = True
            log.error("simulation blew up (bad qpos/qvel/qacc): reset and paused")
        self.tick.send_bytes(self.physics.snapshot().to_bytes())

    # --- commands -------------------------------------------------------------------------
    def _serve_one(self) -> None:
        try:
            op, args, want_reply = self.cmd.recv()
        except EOFError:  # the node is gone: nobody to run for
            self.running = False
            return
        try:
            result = ("ok", getattr(self, "op_" + op)(*args))
        except Exception as exc:  # sent back, re-raised at the caller
            result = ("error", exc)
        if want_reply:
            self.cmd.send(result)

    def op_pause(self) -> bool:
        # Pause on the tick grid: a pause that lands mid-tick completes (and publishes) it.
        self._finish_partial_tick()
        self.paused = True
        return True

    def op_resume(self) -> bool:
        if self.paused:
            self.paused = False
            self._rebase()
        return True

    def op_reset(self) -> dict:
        # Like robogym: re-randomise, drop pending targets, stay paused. The clock goes on.
        self.op_pause()
        return self.physics.reset()

    def op_step(self) -> int:
        if not self.paused:
            raise RuntimeError("step is only allowed while paused")
        blew_up = self.physics.step_tick()
        if blew_up:
            self.stats.resets += 1
        self.tick.send_bytes(self.physics.snapshot().to_bytes())
        return self.physics.tick_index

    def _finish_partial_tick(self) -> None:
        while self._sub:
            self._physics_step(0.0)

    def op_targets(self, targets: dict) -> None:
        self.physics.set_targets(targets)

    def op_status(self) -> dict:
        s = self.stats
        return {
            "tick_index": self.physics.tick_index,
            "sim_time_ns": self.physics_steps * self.physics.physics_dt_ns,
            "episode": self.physics.episode,
            "paused": self.paused,
            "steps": s.steps, "late_steps": s.late_steps, "max_lateness_s": s.max_lateness_s,
            "skips": s.skips, "skipped_s": s.skipped_s, "resets": s.resets,
            "wall_time_s": time.monotonic(),
        }

    def op_lateness_histogram(self) -> np.ndarray:
        return self.stats.hist.copy()

    def op_describe(self) -> dict:
        p = self.physics
        return {
            "joints": [asdict(j) | {"unit": j.unit} for j in p.joints],
            "objects": p.object_names,
            "physics_dt_ns": p.physics_dt_ns,
            "control_dt_ns": p.control_dt_ns,
            "decimation": p.decimation,
            "pid": os.getpid(),
            "modules": sorted(sys.modules),
            "scheduling": self.scheduling,
        }

    def op_stop(self) -> bool:
        self.running = False
        return True


def _raise_priority(real_time: bool) -> str:
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
    loop.scheduling = _raise_priority(config.real_time_factor > 0)
    gc.freeze()  # nothing allocated so far will ever be collected: keep GC passes short
    try:
        loop.run()
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the node went away


class SimProcess:
    """The node's handle on the physics process."""

    def __init__(self, config: LoopConfig, start_timeout_s: float = 30.0):
        cmd_parent, cmd_child = socket.socketpair()
        tick_parent, tick_child = socket.socketpair()
        env = dict(os.environ, MUJOCO_GL="disable")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "robogym_ros.realtime",
             str(cmd_child.fileno()), str(tick_child.fileno())],
            pass_fds=(cmd_child.fileno(), tick_child.fileno()), env=env,
            start_new_session=True,  # Ctrl-C reaches the node, which stops us in order
        )
        cmd_child.close()
        tick_child.close()
        self._cmd = Connection(cmd_parent.detach())
        self._tick = Connection(tick_parent.detach(), writable=False)
        self._lock = threading.Lock()
        self._cmd.send(config)
        if not self._cmd.poll(start_timeout_s):
            self.close()
            raise RuntimeError(f"physics process did not start within {start_timeout_s} s")
        status, value = self._cmd.recv()
        if status == "error":
            self.close()
            raise value

    def call(self, op: str, *args):
        """Run ``op`` between two physics steps and return its result (or raise its error)."""
        with self._lock:
            self._cmd.send((op, args, True))
            status, value = self._cmd.recv()
        if status == "error":
            raise value
        return value

    def send(self, op: str, *args) -> None:
        """Fire and forget: for targets, which the node has already validated."""
        with self._lock:
            self._cmd.send((op, args, False))

    def recv_tick(self, timeout_s: float) -> Tick | None:
        if not self._tick.poll(timeout_s):
            return None
        return Tick.from_bytes(self._tick.recv_bytes())

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self, timeout_s: float = 5.0) -> None:
        if self.alive:
            try:
                with self._lock:
                    self._cmd.send(("stop", (), True))
                    # A child blocked on a full tick pipe never reads "stop": then kill it.
                    if self._cmd.poll(timeout_s):
                        self._cmd.recv()
                self._proc.wait(timeout_s)
            except (OSError, EOFError, subprocess.TimeoutExpired):
                pass
            if self.alive:
                self._proc.kill()
            self._proc.wait()
        for conn in (self._cmd, self._tick):
            conn.close()

if __name__ == "__main__":
    child_main(int(sys.argv[1]), int(sys.argv[2]))
