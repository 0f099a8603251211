"""The node's handle on the physics process (:mod:`robogym_ros.sim.loop`): start it, call it
through typed methods, take its ticks, learn how it died, stop it."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from robogym_ros.sim.loop import Description, LoopConfig, Status
from robogym_ros.sim.tick import Tick
from robogym_ros.sim.trajectory_follower import TrajectoryCommand


class PhysicsProcessDied(RuntimeError):
    """The physics process is gone; the message says how (exit code or signal)."""


class SimProcess:
    """Physics in a process of its own. Every method runs between two physics steps."""

    def __init__(self, config: LoopConfig, start_timeout_s: float = 30.0):
        cmd_parent, cmd_child = socket.socketpair()
        tick_parent, tick_child = socket.socketpair()
        env = dict(os.environ, MUJOCO_GL="disable")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "robogym_ros.sim",
             str(cmd_child.fileno()), str(tick_child.fileno())],
            pass_fds=(cmd_child.fileno(), tick_child.fileno()), env=env,
            start_new_session=True,  # Ctrl-C reaches the node, which stops us in order
        )
        cmd_child.close()
        tick_child.close()
        self._cmd = Connection(cmd_parent.detach())
        self._tick = Connection(tick_parent.detach(), writable=False)
        self._lock = threading.Lock()
        try:
            self._cmd.send(config)
            if not self._cmd.poll(start_timeout_s):
                raise RuntimeError(f"physics process did not start within {start_timeout_s} s")
            status, value = self._cmd.recv()
        except BaseException as exc:  # a signal while starting included: never leave it behind
            self.close()
            if isinstance(exc, (EOFError, OSError)):
                raise PhysicsProcessDied(f"physics process failed to start ({self.death()})") from None
            raise
        if status == "error":
            self.close()
            raise value

    # --- typed requests -------------------------------------------------------------------
    def pause(self) -> int:
        """Pause on the tick grid; returns the index of the last tick before the pause."""
        return self._call("pause")

    def resume(self) -> int:
        """Returns the index of the last tick before the run resumes."""
        return self._call("resume")

    def reset(self) -> dict:
        """New episode (paused); returns its ``tick``, ``seed`` and ``scene`` (its place in that
        seed's sequence, 1 = the first reset's) and what was drawn."""
        return self._call("reset")

    def reseed(self, seed: int) -> None:
        """The next reset starts ``seed``'s sequence (its scene 1); the running scene stays."""
        self._call("reseed", seed)

    def step(self, n_ticks: int = 1, from_index: int | None = None, targets: dict[str, float] | None = None) -> int:
        """``n_ticks`` control ticks while paused, in one request; returns the last one's index
        (earlier if the scene blew up). ``from_index``: refused unless the sim is at that tick;
        ``targets`` (validated) from the first of them on, applied only if the step is."""
        return self._call("step", n_ticks, from_index, targets)

    def set_targets(self, targets: dict[str, float], *, wait: bool = False) -> None:
        """Fire and forget (the node has validated them already), or ``wait`` for the reply."""
        if wait:
            self._call("set_targets", targets)
        else:
            self._send("set_targets", targets)

    def set_trajectory(self, command: TrajectoryCommand, *, wait: bool = False) -> tuple[int, int] | None:
        """A validated trajectory (robogym_ros.sim.commands.validate_trajectory); it replaces
        the running one from the next control tick on. Fire and forget, or ``wait``: then
        returns (start of the tick that takes it up in ns of sim time, episode)."""
        if wait:
            return self._call("set_trajectory", command)
        self._send("set_trajectory", command)
        return None

    def hold(self, names, *, wait: bool = False) -> int | None:
        """Hold these joints where they are when the next control tick starts; with ``wait``,
        returns the index of the first tick published with the hold (None while paused)."""
        if wait:
            return self._call("hold", tuple(names))
        self._send("hold", tuple(names))
        return None

    def set_tick_limit(self, tick_index: int | None) -> None:
        """Physics completes ticks up to ``tick_index`` on its own, then waits (None: no limit)."""
        self._send("set_tick_limit", tick_index)

    def configure(self, *, real_time_factor: float | None = None, max_lag_s: float | None = None) -> str:
        """Returns the physics thread's scheduling policy now."""
        return self._call("configure", real_time_factor=real_time_factor, max_lag_s=max_lag_s)

    def status(self) -> Status:
        return self._call("status")

    def describe(self) -> Description:
        return self._call("describe")

    def lateness_histogram(self) -> np.ndarray:
        return self._call("lateness_histogram")

    def entity_states(self) -> tuple[int, np.ndarray]:
        """(sim time ns, one row per entity of robogym_ros.sim.entities: pose and twist in world)."""
        return self._call("entity_states")

    def entity_bounds(self) -> np.ndarray:
        """Each entity's axis-aligned box in world now, (n, 6): min xyz, max xyz."""
        return self._call("entity_bounds")

    def set_entity_state(self, name: str, state) -> int:
        """Move a free body (block, tray) now; returns the sim time ns. Refused (and nothing
        changed): UnknownEntity, EntityNotMovable, InvalidEntityState (robogym_ros.sim.entities)."""
        return self._call("set_entity_state", name, state)

    def recv_tick(self, timeout_s: float) -> Tick | None:
        """The next tick, or None after ``timeout_s``; EOFError/OSError once the process is gone."""
        if not self._tick.poll(timeout_s):
            return None
        return Tick.from_bytes(self._tick.recv_bytes())

    # --- plumbing -------------------------------------------------------------------------
    def _call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``op`` between two physics steps and return its result (or raise its error)."""
        try:
            with self._lock:
                self._cmd.send((op, args, kwargs, True))
                status, value = self._cmd.recv()
        except (EOFError, OSError):
            raise PhysicsProcessDied(f"physics process is gone ({self.death()})") from None
        if status == "error":
            raise value
        return value

    def _send(self, op: str, *args: Any) -> None:
        try:
            with self._lock:
                self._cmd.send((op, args, {}, False))
        except OSError:
            raise PhysicsProcessDied(f"physics process is gone ({self.death()})") from None

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def death(self) -> str:
        """How the process ended, in words: 'exit code 1', 'killed by SIGKILL', or 'running'."""
        try:
            code = self._proc.wait(0.5)
        except subprocess.TimeoutExpired:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def close(self, timeout_s: float = 1.0) -> None:
        """Stop the process: ask, then kill. Bounded: at most ~2 x timeout_s."""
        if self.alive:
            try:
                # A child blocked on a full tick pipe never reads "stop": then it is killed.
                if self._lock.acquire(timeout=timeout_s):
                    try:
                        self._cmd.send(("stop", (), {}, True))
                        if self._cmd.poll(timeout_s):
                            self._cmd.recv()
                    finally:
                        self._lock.release()
                self._proc.wait(timeout_s)
            except (OSError, EOFError, subprocess.TimeoutExpired):
                pass
            if self.alive:
                self._proc.kill()
            self._proc.wait()
        for conn in (self._cmd, self._tick):
            conn.close()
