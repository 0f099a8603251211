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
MIN_SPEED_SPAN_S = 0.2  # wall seconds of a stream's arrivals needed to tell the sim's speed
# Wall seconds at the end of a recording cut short (the recorder killed: no end note) that the
# bag cannot show: the recorder writes each message when its callback runs, and on a loaded
# machine one stream's callbacks can queue behind another's (ground truth seen 1.02 s behind
# joint_states at a SIGKILL), so a stream missing from the cut's last seconds may well have been
# alive. Its end is "not seen", never "stopped"; a silence that began before these seconds is.
CUT_UNSEEN_S = 3.0


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
    """When a stream's messages arrived, in wall seconds since the recording started.

    ``n_received`` counts the messages until the end; ``n_after_end`` those that came during the
    end-of-recording grace (the stream alive), which other counts of the same stream (the
    decoding check's) include. ``first_stamp_ns`` / ``first_arrival_s`` give the sim's speed
    over the stream, so a silence in wall seconds can be placed in sim time.
    """
    topic: str
    n_received: int
    last_stamp_ns: int | None
    last_arrival_s: float | None
    end_s: float  # when the recording ended
    arrived_after_end: bool = False  # a message came during the end-of-recording grace: alive
    n_after_end: int = 0
    first_stamp_ns: int | None = None
    first_arrival_s: float | None = None

    def speed(self) -> float | None:
        """Sim seconds per wall second between the first and the last message (None: too short to tell)."""
        if None in (self.first_stamp_ns, self.first_arrival_s, self.last_stamp_ns, self.last_arrival_s):
            return None
        wall_s = self.last_arrival_s - self.first_arrival_s
        sim_s = (self.last_stamp_ns - self.first_stamp_ns) / 1e9
        return sim_s / wall_s if wall_s >= MIN_SPEED_SPAN_S and sim_s > 0 else None


@dataclass(frozen=True)
class RunStateReport:
    """One of the sim's run-state messages (contract.RunState), in the order received."""
    paused: bool
    stamp_ns: int
    reason: str


def check_stream_end(streams: Sequence[StreamActivity], run_states: Sequence[RunStateReport], *,
                     silence_s: float, name: str = "streams", end_unseen_s: float = 0.0) -> CheckResult:
    """Every stream still arriving when the recording ended, or the sim paused at its last tick.

    Reference: the recording's own end. A stream whose last message came more than
    ``silence_s`` before it (and none during the end-of-recording grace) stopped, unless the
    sim's newest run state is a pause at that stream's last stamp. A pause at a later stamp
    means the ticks between never arrived. ``end_unseen_s``: the last seconds of a recording
    cut short, which it cannot show (CUT_UNSEEN_S); a stream silent only there is "end not seen".
    """
    findings: list[Finding] = []
    per: dict[str, dict] = {}
    last_state = run_states[-1] if run_states else None
    for s in streams:
        silent = 0.0 if s.arrived_after_end or s.last_arrival_s is None else max(0.0, s.end_s - s.last_arrival_s)
        unseen = min(silent, end_unseen_s) if silent > silence_s else 0.0  # of the silence, in the unseen end
        per[s.topic] = {"end_not_seen_s": unseen, "n_received": s.n_received, "n_after_end": s.n_after_end,
                        "first_stamp_ns": s.first_stamp_ns, "last_stamp_ns": s.last_stamp_ns,
                        "first_arrival_s": s.first_arrival_s, "last_arrival_s": s.last_arrival_s,
                        "silent_at_end_s": silent, "speed": s.speed()}
        if s.n_received == 0 or silent - unseen <= silence_s:
            continue
        where = (f"{s.topic} stopped at sim time {fmt_s(s.last_stamp_ns)}, {s.last_arrival_s:.2f} s (wall) into "
                 f"the recording; nothing for the last {silent:.2f} s of it")
        figs = {"topic": s.topic, "last_stamp_ns": s.last_stamp_ns, "last_arrival_s": s.last_arrival_s,
                "silent_s": silent, "end_s": s.end_s, "silent_from_ns": s.last_stamp_ns,
                "silent_to_ns": _silent_to_ns(s, silent)}
        if last_state is not None and last_state.paused and last_state.stamp_ns == s.last_stamp_ns:
            per[s.topic]["paused"] = True
            continue
        if last_state is not None and last_state.paused and last_state.stamp_ns > s.last_stamp_ns:
            figs["silent_to_ns"] = last_state.stamp_ns  # the ticks up to the pause were due: known, not estimated
            findings.append(Finding("stream_stopped", (
                f"{where}; the sim paused ({last_state.reason}) only at {fmt_s(last_state.stamp_ns)}: the ticks "
                f"in between never arrived"), {**figs, "paused_at_ns": last_state.stamp_ns}))
        else:
            findings.append(Finding("stream_stopped", (
                f"{where}{_in_sim_time(s, silent)}, and the sim did not report a pause (sim dead, or the stream "
                f"lost?)"), figs))
    paused = bool(last_state is not None and last_state.paused)
    figures = {"streams": per, "silence_threshold_s": silence_s, "n_run_states": len(run_states),
               "end_s": max((s.end_s for s in streams), default=None),
               "paused_at_end": paused,
               "paused_at_ns": last_state.stamp_ns if paused else None}
    parts = []
    for topic, p in per.items():
        state = ("paused" if p.get("paused") else f"silent {p['silent_at_end_s']:.2f} s" if
                 p["silent_at_end_s"] - p["end_not_seen_s"] > silence_s else
                 f"end not seen (quiet for the cut's last {p['end_not_seen_s']:.2f} s)" if p["end_not_seen_s"] else
                 "live")
        after = f" (+{p['n_after_end']} after the end)" if p["n_after_end"] else ""
        parts.append(f"{topic} {p['n_received']} msgs{after}, {state} at the end")
    summary = "; ".join(parts) + f" (stopped = silent > {silence_s:g} s" + (", sim paused)" if paused else ")")
    if end_unseen_s > 0:
        figures["end_unseen_s"] = end_unseen_s
        summary += f"; the recording was cut: its last {end_unseen_s:g} s are not judged"
    return CheckResult(name, summary, figures, tuple(findings))


def _silent_to_ns(s: StreamActivity, silent_s: float) -> int | None:
    """Where in sim time the recording ended, had the sim gone on at the speed it ran (None: unknown)."""
    speed = s.speed()
    return None if speed is None else int(s.last_stamp_ns + round(silent_s * speed * 1e3) * 1_000_000)


def _in_sim_time(s: StreamActivity, silent_s: float) -> str:
    speed = s.speed()
    return "" if speed is None else (f" (it ended at about sim time {fmt_s(_silent_to_ns(s, silent_s))}, had the "
                                     f"sim gone on at the {speed:.2f}x it ran)")
