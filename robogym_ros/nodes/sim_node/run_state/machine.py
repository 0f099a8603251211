"""The sim's run state, one machine for every client: running, paused or stopped, and who may
change it.

Every way of stepping, pausing, resuming or resetting the sim goes through :class:`RunStates`:
the Trigger services (nodes/sim_node/run_state/trigger_services.py), the standard simulation services and the
SimulateSteps action (nodes/sim_node/simulation_interfaces/), lockstep step requests
(nodes/sim_node/run_state/step_requests.py) and the parameters that change how it steps
(real_time_factor, max_lag_s, seed). A client first owns the run state (:meth:`RunStates.own`);
only an :class:`Owner` can change it. One owner at a time: a running simulate_steps goal owns it
from its first step to its last, a service call or a step request for as long as it takes.
Everyone else is refused at once with :class:`Busy`, which names the owner, and nothing changes
(never a wait: the sim node's executor must not block). Each client answers a Busy the same
way, with its own interface's code (the standard's RESULT_INCORRECT_STATE, a Trigger's
success false, a step request's "step_refused").

Each change is published on ``~/state`` (contract.RunState), stamped with the last tick before
it; states never go backwards: a change is published once the ticks it speaks of are handled
(published, a blow-up among them reported), and a resume is published before the sim runs on.
A blow-up (the loop resets the scene and pauses itself) needs no owner: the pump thread reports
it. The standard's STATE_STOPPED is paused where an episode starts, no tick advanced yet: what
every reset, a blow-up and a start with start_paused leave (:meth:`RunStates.phase`).

The motion sources (joint_commands, joint_trajectory, FollowJointTrajectory goals) are not run
state: they keep their own precedence, and see each change in the ticks (a pause freezes a
goal, a reset starts a new episode). joint_commands has a thread of its own: what it has received
is applied as a client claims the run state (``before_change``), so a command sent before a
change applies before it.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.contract import RunState
from robogym_ros.ros.qos import STATE_QOS
from robogym_ros.sim.process import SimProcess

RUNNING, PAUSED, STOPPED = "running", "paused", "stopped"
RECENT_BLOW_UPS = 64  # indices kept: a step asks whether one of its ticks blew up


class Busy(RuntimeError):
    """Another client owns the run state; nothing was changed. The message names the owner."""


class RunStates:
    """The run-state machine of one sim: ownership, transitions, the published state."""

    def __init__(self, node, sim: SimProcess, control_dt_ns: int, *, before_change=None):
        """``before_change``: called as a client takes the run state (the node applies the
        joint_commands that have arrived, which their own thread would apply a moment later)."""
        self._sim, self._dt_ns = sim, control_dt_ns
        self._before_change = before_change
        self._log = node.get_logger()
        self._pub = node.create_publisher(String, "~/state", STATE_QOS)
        self._owning = threading.Lock()
        self._owner: str | None = None
        self._publishing = threading.Lock()  # the owner's thread and the pump's
        self._last_stamp_ns = -1
        # The last tick handled whole (published, blow-up reported): a state published after it
        # comes after the blow-up state of any of its ticks.
        self._handled = threading.Condition()
        self._handled_index = -1
        self._blow_ups: list[int] = []
        status = sim.status()
        # STATE_STOPPED: paused at the tick an episode began, unless set paused there.
        self._episode, self._episode_start = status.episode, status.tick_index
        self._paused_from_stopped: int | None = None

    # --- ownership ------------------------------------------------------------------------------
    @property
    def owner(self) -> str | None:
        """Who owns the run state now (None: nobody)."""
        return self._owner

    @contextmanager
    def own(self, who: str) -> Iterator["Owner"]:
        """Own the run state for a block, as ``who`` (a Busy names it to the others); Busy at
        once if someone else owns it."""
        owner = self.claim(who)
        try:
            yield owner
        finally:
            owner.release()

    def claim(self, who: str) -> "Owner":
        """Own the run state until :meth:`Owner.release` (a parameter batch: checked, then applied)."""
        if not self._owning.acquire(blocking=False):
            raise Busy(f"{contract.BUSY_PREFIX}{self._owner or 'another client'} owns the run state; "
                       "nothing was changed (a simulate_steps goal: cancel it or wait for its result; "
                       "else try again once it answered)")
        self._owner = who
        if self._before_change is not None:
            try:
                self._before_change()
            except BaseException:
                self._release()
                raise
        return Owner(self, who)

    def _release(self) -> None:
        self._owner = None
        self._owning.release()

    # --- what the state is ---------------------------------------------------------------------
    def phase(self) -> str:
        """RUNNING, PAUSED, or STOPPED (paused where an episode starts, no tick advanced yet)."""
        status = self._sim.status()
        if not status.paused:
            return RUNNING
        if status.tick_index == self._episode_start and status.tick_index != self._paused_from_stopped:
            return STOPPED
        return PAUSED

    @property
    def last_handled(self) -> int:
        """The index of the last tick handled (0 before the first): known without asking the
        physics process, which may be busy with an owner's long step."""
        return max(self._handled_index, 0)

    def blew_up(self, after_index: int, up_to_index: int) -> bool:
        """A tick in (after_index, up_to_index] blew up (handled ticks only)."""
        with self._handled:
            return any(after_index < i <= up_to_index for i in self._blow_ups)

    # --- the tick path (the node's pump thread) ---------------------------------------------------
    def on_tick(self, tick) -> None:
        """After a tick is published: a new episode noted, a blow-up reported, then waiters released."""
        if tick.episode != self._episode:
            self._episode, self._episode_start = tick.episode, tick.index
        if tick.blew_up:  # the loop reset the scene and paused itself
            self.publish(tick.index, "blow_up", True)
        with self._handled:
            if tick.blew_up:
                self._blow_ups = [*self._blow_ups[-RECENT_BLOW_UPS:], tick.index]
            self._handled_index = tick.index
            self._handled.notify_all()

    def wait_handled(self, index: int, timeout_s: float = 5.0) -> None:
        """Return once tick ``index`` is published and its blow-up, if any, reported."""
        with self._handled:
            if not self._handled.wait_for(lambda: self._handled_index >= index, timeout_s):
                raise TimeoutError(f"tick {index} was not published within {timeout_s:g} s")

    # --- the published state ---------------------------------------------------------------------
    def publish(self, tick_index: int, reason: str, paused: bool, *, seed: int | None = None,
                scene: int | None = None) -> None:
        """``~/state``: never older than the state before it (a state that would be is a bug:
        logged, not published, so a reader never sees time go back)."""
        stamp_ns = int(tick_index) * self._dt_ns
        with self._publishing:
            if stamp_ns < self._last_stamp_ns:
                self._log.error(f"run state {reason!r} at {stamp_ns} ns not published: the last one was at "
                                f"{self._last_stamp_ns} ns")
                return
            self._last_stamp_ns = stamp_ns
            self._pub.publish(String(data=RunState(paused, stamp_ns, reason, seed=seed, scene=scene).to_json()))


class Owner:
    """What the owner of the run state may do; each change is published on ``~/state``. Valid
    until released."""

    def __init__(self, machine: RunStates, who: str):
        self._m, self.who = machine, who
        self._sim = machine._sim
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._m._release()

    def _check(self) -> None:
        if self._released:
            raise RuntimeError(f"{self.who} no longer owns the run state")

    def pause(self) -> int:
        """Pause on the tick grid; returns the last tick before the pause."""
        self._check()
        index = self._sim.pause()
        self._m.publish(index, "pause", True)
        return index

    def resume(self) -> int:
        """Run on (from stopped too); returns the last tick before the run. The state is published
        first, at the paused sim's last tick: once it runs, a blow-up may come at any tick."""
        self._check()
        status = self._sim.status()
        if status.paused:
            self._m.publish(status.tick_index, "resume", False)
        return self._sim.resume()

    def pause_from_stopped(self) -> None:
        """STATE_STOPPED -> STATE_PAUSED without a tick: the standard's transition."""
        self._check()
        self._m._paused_from_stopped = self._sim.status().tick_index

    def step(self, n_ticks: int = 1, from_index: int | None = None, targets: dict[str, float] | None = None, *,
             publish: bool = True) -> int:
        """``n_ticks`` control ticks of the paused sim, from tick ``from_index`` (refused unless it is
        there), with ``targets`` from the first on; returns the last one's index (earlier if the scene
        blew up: :meth:`RunStates.blew_up` says). Returns once they are handled; the "step" state then
        (``publish``; a goal publishes one for all its steps: :meth:`publish_step`)."""
        self._check()
        index = self._sim.step(n_ticks, from_index, targets)
        self._m.wait_handled(index)
        if publish:
            self.publish_step(index)
        return index

    def publish_step(self, index: int) -> None:
        self._check()
        self._m.publish(index, "step", True)

    def reset(self) -> dict:
        """A new episode (the next scene of the seed's sequence), paused, one reset tick: returns its
        ``tick``, ``seed``, ``scene`` and what was drawn, once that tick is handled."""
        self._check()
        draw = self._sim.reset()
        self._m.wait_handled(draw["tick"])
        self._m.publish(draw["tick"], "reset", True, seed=draw["seed"], scene=draw["scene"])
        return draw

    def configure(self, *, real_time_factor: float | None = None, max_lag_s: float | None = None) -> str:
        """The pace of the run (no change of state: nothing published); returns the physics
        thread's scheduling policy now."""
        self._check()
        return self._sim.configure(real_time_factor=real_time_factor, max_lag_s=max_lag_s)

    def reseed(self, seed: int) -> None:
        """The next reset starts ``seed``'s sequence (its scene 1); the running scene stays."""
        self._check()
        self._sim.reseed(seed)

    def start(self, start_paused: bool, seed: int) -> None:
        """The node's first state: "start", paused or running, scene 0 of ``seed``'s sequence."""
        self._check()
        self._m.publish(0, "start", start_paused, seed=seed, scene=0)
        if not start_paused:
            self._sim.resume()
