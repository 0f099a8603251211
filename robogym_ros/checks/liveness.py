"""Streams that stop before the recording ends, told apart from a sim that paused.

A stream that falls silent while the recording goes on is data missing at the end, which no
check of the received messages can see: the tick grid accounts only for ticks between the
first and the last one received. A paused sim publishes nothing either, so the sim's own
run-state reports (contract.RunState: paused or running, from the stamp of the last tick
published before the change) say which silences are pauses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .results import CheckResult, Finding, fmt_s

MIN_SILENCE_S = 1.0  # wall seconds: below this, scheduling hiccups of a loaded machine
SILENCE_TICKS = 20  # ... and at least this many expected tick periods


def silence_threshold_s(control_dt_s: float, real_time_factor: float | None) -> float:
    """How long a stream may stay quiet before it counts as stopped, in wall seconds.

    A tick is due every ``control_dt_s / real_time_factor`` wall seconds; real_time_factor 0
    ("as fast as possible") or unknown has no such period, so the floor applies.
    """
    if real_time_factor and real_time_factor > 0:
        return max(MIN_SILENCE_S, SILENCE_TICKS * control_dt_s / real_time_factor)
    return MIN_SILENCE_S


@dataclass(frozen=True)
class StreamActivity:
    """When a stream's messages arrived, in wall seconds since the recording started."""
    topic: str
    n_received: int
    last_stamp_ns: int | None
    last_arrival_s: float | None
    end_s: float  # when the recording ended
    arrived_after_end: bool = False  # a message came during the end-of-recording grace: alive


@dataclass(frozen=True)
class RunStateReport:
    """One of the sim's run-state messages (contract.RunState), in the order received."""
    paused: bool
    stamp_ns: int
    reason: str


def check_stream_end(streams: Sequence[StreamActivity], run_states: Sequence[RunStateReport], *,
                     silence_s: float, name: str = "streams") -> CheckResult:
    """Every stream still arriving when the recording ended, or the sim paused at its last tick.

    Reference: the recording's own end. A stream whose last message came more than
    ``silence_s`` before it (and none during the end-of-recording grace) stopped, unless the
    sim's newest run state is a pause at that stream's last stamp. A pause at a later stamp
    means the ticks between never arrived.
    """
    findings: list[Finding] = []
    per: dict[str, dict] = {}
    last_state = run_states[-1] if run_states else None
    for s in streams:
        silent = 0.0 if s.arrived_after_end or s.last_arrival_s is None else max(0.0, s.end_s - s.last_arrival_s)
        per[s.topic] = {"n_received": s.n_received, "last_stamp_ns": s.last_stamp_ns,
                        "last_arrival_s": s.last_arrival_s, "silent_at_end_s": silent}
        if s.n_received == 0 or silent <= silence_s:
            continue
        where = (f"{s.topic} stopped at sim time {fmt_s(s.last_stamp_ns)}, {s.last_arrival_s:.2f} s (wall) into "
                 f"the recording; nothing for the last {silent:.2f} s of it")
        figs = {"topic": s.topic, "last_stamp_ns": s.last_stamp_ns, "last_arrival_s": s.last_arrival_s,
                "silent_s": silent, "end_s": s.end_s}
        if last_state is not None and last_state.paused and last_state.stamp_ns == s.last_stamp_ns:
            per[s.topic]["paused"] = True
            continue
        if last_state is not None and last_state.paused and last_state.stamp_ns > s.last_stamp_ns:
            findings.append(Finding("stream_stopped", (
                f"{where}; the sim paused ({last_state.reason}) only at {fmt_s(last_state.stamp_ns)}: the ticks "
                f"in between never arrived"), {**figs, "paused_at_ns": last_state.stamp_ns}))
        else:
            findings.append(Finding("stream_stopped", (
                f"{where}, and the sim did not report a pause (sim dead, or the stream lost?)"), figs))
    paused = bool(last_state is not None and last_state.paused)
    figures = {"streams": per, "silence_threshold_s": silence_s, "n_run_states": len(run_states),
               "paused_at_end": paused,
               "paused_at_ns": last_state.stamp_ns if paused else None}
    parts = []
    for topic, p in per.items():
        state = ("paused" if p.get("paused") else f"silent {p['silent_at_end_s']:.2f} s" if
                 p["silent_at_end_s"] > silence_s else "live")
        parts.append(f"{topic} {p['n_received']} msgs, {state} at the end")
    summary = "; ".join(parts) + f" (stopped = silent > {silence_s:g} s" + (", sim paused)" if paused else ")")
    return CheckResult(name, summary, figures, tuple(findings))
