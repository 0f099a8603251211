"""Which stretches of each camera's frames a verdict accounts for, from the spec's history.

The sim's camera clock runs on the period the spec states. A live ``camera_period_s`` change
arrives as a new spec from the same sim instance; the tick at which the sim switched clocks
is known only roughly (the spec and the ticks travel on different topics), so each period
judges its own stretch and a zone around the change is not judged (and counted). Frames due
before a camera's first frame after its subscriptions were live are not judged either: a
subscription matches some time after it is made, and a frame published before that was
never on its way to us.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from robogym_ros.checks import FrameSchedule
from robogym_ros.contract import FIRST_TICK_INDEX, NS_PER_S, Spec

ZONE_WALL_S = 1.0  # wall seconds of uncertainty around a live change, turned into sim time
TAIL_WALL_S = 1.0  # frames due this close to the end may still be in flight
OFFLINE_SETTLE_PERIODS = 5  # bag without the recorder's notes: frames of the first periods not judged


@dataclass(frozen=True)
class SpecChange:
    """A spec in force from ``notice_ns`` on (the newest joint stamp when it arrived; None: from the start)."""
    notice_ns: int | None
    spec: Spec


def camera_period_ns(spec: Spec, camera: str) -> int:
    """The camera's period in ns from the spec; 0 when off or unknown."""
    for cam in spec.cameras:
        if cam.name == camera:
            return round(cam.period_s * NS_PER_S) if cam.period_s and cam.period_s > 0 else 0
    return 0


def frame_schedules(history: Sequence[SpecChange], lo_ns: int, hi_ns: int, *,
                    judged_from_ns: Mapping[str, int | None], speed: float) -> tuple[list[FrameSchedule], dict]:
    """The stretches to account for, per camera of the newest spec, between ``lo_ns`` and ``hi_ns``.

    ``judged_from_ns``: per camera, the first frame stamp from which frames were surely on
    their way to us (None: the camera sent none; then everything from ``lo_ns`` counts).
    ``speed``: sim seconds per wall second, turning wall-time uncertainty into sim time.
    Returns the schedules and figures on what was left out.
    """
    if not history:
        return [], {}
    speed = max(speed, 0.0)
    schedules: list[FrameSchedule] = []
    zones: list[dict] = []
    for cam in history[-1].spec.cameras:
        start = max(lo_ns, judged_from_ns.get(cam.name) or lo_ns)
        stretches = _stretches(history, cam.name, speed, zones)
        for i, (a, b, period, every_frame) in enumerate(stretches):
            a, b = max(a, start), min(b, hi_ns)
            if period <= 0 or b < a:
                continue
            last = i == len(stretches) - 1
            tail = max(3 * period, round(speed * TAIL_WALL_S * NS_PER_S)) if last else 0
            # The first stretch starts with the sim: grid point 0 falls on its first tick.
            first_tick = FIRST_TICK_INDEX * history[0].spec.control_dt_ns if i == 0 else None
            schedules.append(FrameSchedule(cam.name, period, a, b, every_frame=every_frame, tail_ns=tail,
                                           first_tick_ns=first_tick))
    return schedules, {"period_change_zones": zones}


def live_changes_note(zones: Sequence[Mapping]) -> str | None:
    """The verdict's sentence on live schedule changes: changes counted once, however many cameras."""
    if not zones:
        return None
    changes = {z["change"] for z in zones}
    what = " and ".join(sorted({z["what"] for z in zones}))
    cameras = len({z["camera"] for z in zones})
    n = len(changes)
    return (f"{what} changed live {n} time{'s' if n != 1 else ''} ({cameras} camera{'s' if cameras != 1 else ''}): "
            f"frames due around each change are not judged")


def _stretches(history: Sequence[SpecChange], camera: str, speed: float, zones: list[dict]):
    """(from_ns, to_ns, period_ns, every_frame) per spec in force, zones around changes cut out."""
    out = []
    start = -(2 ** 62)
    for i, change in enumerate(history):
        period = camera_period_ns(change.spec, camera)
        every_frame = change.spec.camera_frames == "every_frame"
        nxt = history[i + 1] if i + 1 < len(history) else None
        end = 2 ** 62
        if nxt is not None and nxt.notice_ns is not None:
            new_period = camera_period_ns(nxt.spec, camera)
            new_mode = nxt.spec.camera_frames == "every_frame"
            if new_period != period or new_mode != every_frame:
                half = max(2 * period, 2 * new_period) + round(speed * ZONE_WALL_S * NS_PER_S)
                # one zone per camera; "change" numbers the spec change it belongs to (one change, many cameras)
                zones.append({"camera": camera, "from_ns": nxt.notice_ns - half, "to_ns": nxt.notice_ns + half,
                              "period_ns": [period, new_period], "change": i + 1,
                              "what": "camera_period_s" if new_period != period else "camera frame mode"})
                end = nxt.notice_ns - half
                out.append((start, end, period, every_frame))
                start = nxt.notice_ns + half
                continue
        if nxt is None:
            out.append((start, end, period, every_frame))
    return out
