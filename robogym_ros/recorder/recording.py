"""What the recorder keeps, and the verdict on it. No ROS here: messages are duck-typed
(``header.stamp.sec/nanosec``, ``name``, ``position``, ...), so this runs on live messages,
on bag contents and in tests alike.

Besides the rings (the newest ``capacity`` messages, judged slot by slot), a recording keeps
the stamp of every joint_states and ground-truth message received (8 bytes each), so the
tick grid accounts for the whole recording however much the rings overwrote; when each
stream last arrived, so a stream that stopped before the end is found; the sim's run
states, so a pause is not taken for a stop; and every camera frame stamp received or
reported skipped, so frames are accounted for one by one.
"""
from __future__ import annotations

import time
from array import array
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from robogym_ros import checks
from robogym_ros.checks import RunStateReport, StreamActivity
from robogym_ros.checks.frames import frames_summary
from robogym_ros.contract import NS_PER_S, RunState, Spec, header_stamp_ns, join_stamp
from robogym_ros.recorder.cdr import JointStateDecoder, decode_image, decode_joint_state
from robogym_ros.recorder.decoding import Malformed, decoding_result
from robogym_ros.recorder.ring import ImageRing, Ring
from robogym_ros.recorder.schedules import (
    OFFLINE_SETTLE_PERIODS,
    SpecChange,
    camera_period_ns,
    frame_schedules,
    live_changes_note,
)
from robogym_ros.recorder.verdict import Verdict

RECENT_FOR_AUDIT = 256  # received message arrays kept to prove no slot shares their memory
RESTART_JUMP_TICKS = 50  # checks.classify_stamps' reorder_window_ticks
MATCH_SETTLE_S = 0.5  # after a subscription matched, how long until its publisher surely matched it too
SLOT_CHECKS = ("slot_error", "aliasing", "stale_payload", "velocity_fd", "velocity_reported", "buffer_audit")
JOINT_STATES, GROUND_TRUTH = "joint_states", "ground_truth/joint_states"


class _Activity:
    """Arrivals of one stream, in O(1) memory: counts, first/last stamp and wall time."""

    def __init__(self):
        self.n = 0
        self.first_stamp_ns: int | None = None
        self.first_s: float | None = None
        self.last_stamp_ns: int | None = None
        self.last_s: float | None = None
        self.after_end = 0  # messages that arrived after the recording ended (the grace period)

    def arrived(self, stamp_ns: int, now_s: float, ended: bool) -> None:
        if ended:
            self.after_end += 1
            return
        self.n += 1
        if self.first_s is None:
            self.first_stamp_ns, self.first_s = stamp_ns, now_s
        self.last_stamp_ns, self.last_s = stamp_ns, now_s


@dataclass(frozen=True)
class FrameEvidence:
    """Every frame stamp received and reported skipped, per camera, and from where to judge."""
    received_ns: Mapping[str, Sequence[int]]
    skipped_ns: Mapping[str, Sequence[int]]
    skips_reported: bool  # the sim publishes skip reports (else skipped cannot be told from lost)
    judged_from_ns: Mapping[str, int | None]
    history: Sequence[SpecChange]
    speed: float = 1.0  # sim seconds per wall second
    earlier_runs: int = 0  # frames of sim runs before a restart: not judged


class Recording:
    """Ring buffers, copy on store, for one sim described by its spec."""

    def __init__(self, spec: Spec, capacity: int, *, image_capacity: int = 10_000,
                 pixel_budget_bytes: int = 0, clock: Callable[[], float] = time.monotonic):
        self.spec = spec
        self.names = spec.joint_names
        self.joints = Ring(capacity, len(self.names))
        self.truth = Ring(capacity, len(self.names))
        self.images = ImageRing(image_capacity, pixel_budget_bytes=pixel_budget_bytes)
        self.recent: deque = deque(maxlen=RECENT_FOR_AUDIT)
        self.foreign_names = 0  # messages whose joint names differ from the spec's
        self.malformed: dict[str, Malformed] = {}  # stream -> serialized messages that did not decode
        self._decoder = JointStateDecoder(self.names)
        # One scratch per stream, reused: decode_into writes it, store_rows copies it out.
        self._scratch = {s: np.empty((3, len(self.names))) for s in (JOINT_STATES, GROUND_TRUTH)}
        self.spec_updates = 0  # sim restarts seen (a spec from another instance)
        self.last_joint_ns = -1  # newest stamps seen in the current run of the sim,
        self.last_truth_ns = -1  # without copying a ring
        # A jump back this far is a restarted sim (as in checks.classify_stamps): its stamps
        # start over, so "newest" starts over too, or the truth of the new run's last ticks
        # would count as caught up by the old run's stamps.
        self._restart_jump_ns = RESTART_JUMP_TICKS * spec.control_dt_ns
        self._clock = clock
        self.started_s = clock()
        self.ended_s: float | None = None
        self.ended_wall_ns: int | None = None  # time.time_ns() at the end, as a bag's log times count
        self.ended_by = ""
        self.joint_stamps = array("q")  # every joint_states stamp received, in arrival order
        self.truth_stamps = array("q")
        self.activity = {JOINT_STATES: _Activity(), GROUND_TRUTH: _Activity()}
        self.run_states: list[RunStateReport] = []
        self.bad_run_states = 0
        self.history: list[SpecChange] = [SpecChange(None, spec)]
        self.frames: dict[str, array] = {c.name: array("q") for c in spec.cameras}
        self.skipped: dict[str, array] = {c.name: array("q") for c in spec.cameras}
        self.skips_unknown = 0  # skip reports naming no camera of the spec
        self.frames_earlier_runs = 0
        self._live_since: dict[str, float] = {}  # topic key -> wall time its publishers last matched
        self._judged_from: dict[str, tuple[float, int] | None] = {c.name: None for c in spec.cameras}
        self.live_info = False  # the node reports publisher matches (else: judge from the first frame)

    # --- time ----------------------------------------------------------------------------------
    def _now(self) -> float:
        return self._clock() - self.started_s

    @property
    def ended(self) -> bool:
        return self.ended_s is not None

    def end(self, reason: str = "") -> None:
        """The recording ends now: joint_states are no longer stored (their arrival still shows
        the stream alive); truth and frames still are, so the last ticks' truth can catch up."""
        if self.ended_s is None:
            self.ended_s, self.ended_by = self._now(), reason
            self.ended_wall_ns = time.time_ns()

    # --- the spec --------------------------------------------------------------------------------
    def on_spec(self, spec: Spec) -> str:
        """A spec received after the first: "same", "update" (live change) or "restart"."""
        current = self.history[-1].spec
        if spec.instance and spec.instance == current.instance:
            if spec == current:
                return "same"
            self.history.append(SpecChange(self.last_joint_ns, spec))
            self.spec = spec
            return "update"
        # Another instance, or a sim that names none: a restarted sim (its stamps start over).
        self.spec_updates += 1
        self.spec = spec
        self.history = [SpecChange(None, spec)]
        for cam in list(self.frames):
            self.frames_earlier_runs += len(self.frames[cam])
            self.frames[cam], self.skipped[cam] = array("q"), array("q")
            self._judged_from[cam] = None
        return "restart"

    def note_publishers(self, key: str, count: int, previous: int) -> None:
        """The node saw the publisher count of a subscription rise (``key``: "skips" or a camera)."""
        self.live_info = True
        if count > previous:
            self._live_since[key] = self._now()

    # --- storing -----------------------------------------------------------------------------------
    # Two ways in, one bookkeeping (_arrived): message objects (rclpy's typed callbacks, a bag, a
    # test), and serialized CDR as a raw subscription delivers it, decoded straight into a
    # scratch row block and copied into the ring with one tobytes (no Python message object).

    def _columns(self, names, position, velocity, effort) -> tuple:
        if list(names) == self.names:
            return position, velocity, effort
        self.foreign_names += 1  # realign by name; a joint the spec lacks is dropped
        index = {n: i for i, n in enumerate(names)}
        cols = []
        for field in (position, velocity, effort):
            cols.append([field[index[n]] if n in index and len(field) > index[n] else np.nan
                         for n in self.names] if len(field) else field)
        return tuple(cols)

    def store_joint_state(self, msg) -> None:
        """A sensor_msgs/JointState message object; another name order is realigned by name."""
        stamp, ended = header_stamp_ns(msg), self.ended
        if not ended:  # after the end, its arrival only shows the stream alive
            self.joints.store(stamp, *self._columns(msg.name, msg.position, msg.velocity, msg.effort))
        self._arrived(JOINT_STATES, stamp, ended, msg.position)

    def store_truth(self, msg) -> None:
        stamp = header_stamp_ns(msg)
        self.truth.store(stamp, *self._columns(msg.name, msg.position, msg.velocity, msg.effort))
        self._arrived(GROUND_TRUTH, stamp, self.ended, msg.position)

    def store_joint_state_cdr(self, data: bytes) -> bool:
        """A serialized sensor_msgs/JointState (``raw=True``). False, storing nothing, if the bytes
        are malformed: counted per stream for the verdict, never raised."""
        ended = self.ended
        stamp = self._store_cdr(JOINT_STATES, self.joints, data, store=not ended)
        if stamp is None:
            return False
        # The received bytes themselves (immutable): a slot that were a view into them would
        # share their memory, which the buffer audit looks for.
        self._arrived(JOINT_STATES, stamp, ended, data)
        return True

    def store_truth_cdr(self, data: bytes) -> bool:
        """A serialized ground-truth sensor_msgs/JointState; as :meth:`store_joint_state_cdr`."""
        stamp = self._store_cdr(GROUND_TRUTH, self.truth, data, store=True)
        if stamp is None:
            return False
        self._arrived(GROUND_TRUTH, stamp, self.ended, data)
        return True

    def _store_cdr(self, stream: str, ring: Ring, data: bytes, *, store: bool) -> int | None:
        """Decode and (if ``store``) copy into ``ring``; the stamp, or None if malformed."""
        scratch = self._scratch[stream]
        try:
            stamp = self._decoder.decode_into(data, scratch)
            if stamp is None:  # other joint names or order: the slow path, realigned by name
                msg = decode_joint_state(data)
                stamp = msg.stamp_ns
                if store:
                    ring.store(stamp, *self._columns(msg.name, msg.position, msg.velocity, msg.effort))
            elif store:
                ring.store_rows(stamp, scratch)
        except ValueError as exc:  # CdrError, or fields that cannot fill a slot: lost, counted
            self.malformed.setdefault(stream, Malformed()).add(str(exc))
            return None
        return stamp

    def _arrived(self, stream: str, stamp: int, ended: bool, received) -> None:
        """What every stored (or, after the end, arrived) joint_states/truth message updates."""
        self.activity[stream].arrived(stamp, self._now(), ended)
        if stream == GROUND_TRUTH:  # truth is stored after the end too: the last ticks catch up
            self.truth_stamps.append(stamp)
            self.last_truth_ns = self._newest(self.last_truth_ns, stamp)
        elif not ended:
            self.joint_stamps.append(stamp)
            self.recent.append(received)
            self.last_joint_ns = self._newest(self.last_joint_ns, stamp)

    def _newest(self, newest: int, stamp: int) -> int:
        return stamp if stamp < newest - self._restart_jump_ns else max(newest, stamp)

    def store_image(self, msg, camera: str) -> None:
        self._store_image(header_stamp_ns(msg), msg.width, msg.height, msg.step, msg.encoding, msg.data, camera)

    def store_image_cdr(self, data: bytes, camera: str) -> bool:
        """A serialized sensor_msgs/Image: the header and sizes decoded, the pixels digested (and
        kept, within budget) straight from the bytes. Malformed: counted, False, nothing stored."""
        try:
            f = decode_image(data)
        except ValueError as exc:  # CdrError: lost, counted for the verdict
            self.malformed.setdefault(f"cameras/{camera}/image_raw", Malformed()).add(str(exc))
            return False
        self._store_image(f.stamp_ns, f.width, f.height, f.step, f.encoding, f.pixels(data), camera)
        return True

    def _store_image(self, stamp: int, width: int, height: int, step: int, encoding: str, pixels,
                     camera: str) -> None:
        self.images.store(stamp, width, height, step, encoding, pixels, camera)
        if camera in self.frames:
            self.frames[camera].append(stamp)
            self._maybe_judge_from(camera, stamp)

    def store_skip(self, msg) -> None:
        """A frame the sim skipped (contract.CAMERA_SKIPS_TOPIC): header stamp, cameras in frame_id."""
        stamp = join_stamp(msg.stamp.sec, msg.stamp.nanosec)  # the message is a std_msgs/Header itself
        for cam in str(msg.frame_id).split(",")[:64]:
            cam = cam.strip()
            if cam in self.skipped:
                self.skipped[cam].append(stamp)
            else:
                self.skips_unknown += 1

    def store_run_state(self, msg) -> None:
        try:
            state = RunState.from_json(msg.data)
        except ValueError:
            self.bad_run_states += 1
            return
        self.run_states.append(RunStateReport(state.paused, state.stamp_ns, state.reason))

    def _maybe_judge_from(self, camera: str, stamp: int) -> None:
        """The first frame stamp from which this camera's frames and skips were surely on their way."""
        if not self.live_info:
            if self._judged_from[camera] is None:
                self._judged_from[camera] = (0.0, stamp)
            return
        # A frame that arrived proves its own topic live from then on (one writer, reliable, in
        # order); skip reports travel on another topic, which must have been live as well.
        since = self._live_since.get("skips", 0.0)
        current = self._judged_from[camera]
        if (current is None or current[0] < since) and self._now() >= since + MATCH_SETTLE_S:
            self._judged_from[camera] = (since, stamp)

    # --- the end -------------------------------------------------------------------------------------
    def caught_up(self) -> bool:
        """Truth of the last joint tick, a joint_states after the end (the stream is alive), and a
        frame after the last joint tick from every camera: nothing more to wait for."""
        joints = self.activity[JOINT_STATES]
        if self.last_truth_ns < self.last_joint_ns or (joints.n and not joints.after_end):
            return False
        for cam, stamps in self.frames.items():
            # A frame received after the last tick proves every earlier one received or skipped
            # (frames are published in order; a skip report may overtake frames still rendering).
            if camera_period_ns(self.spec, cam) and stamps and max(stamps) <= self.last_joint_ns:
                return False
        return True

    def frame_evidence(self) -> FrameEvidence:
        judged_from: dict[str, int | None] = {}
        for cam, v in self._judged_from.items():
            if v is not None:
                judged_from[cam] = v[1]
            elif len(self.frames[cam]) or len(self.skipped[cam]):
                # Frames came, but none once the skip reports were surely live: judge none of them.
                judged_from[cam] = max(self.frames[cam] or [-1]) + 1
            else:
                judged_from[cam] = None  # nothing at all from this camera: judged from the start
        return FrameEvidence(
            received_ns={c: np.frombuffer(a, np.int64) for c, a in self.frames.items()},
            skipped_ns={c: np.frombuffer(a, np.int64) for c, a in self.skipped.items()},
            skips_reported="skips" in self._live_since,
            judged_from_ns=judged_from,
            history=list(self.history), speed=self.speed(), earlier_runs=self.frames_earlier_runs)

    def speed(self) -> float:
        """Sim seconds per wall second over the recording (1.0 until there is enough to tell)."""
        a = self.activity[JOINT_STATES]
        if a.n < 2 or a.last_s is None or a.last_s - a.first_s < 0.2:
            return 1.0
        return max(0.0, (a.last_stamp_ns - a.first_stamp_ns) / NS_PER_S / (a.last_s - a.first_s))

    def stream_activity(self) -> list[StreamActivity]:
        end = self.ended_s if self.ended_s is not None else self._now()
        return [StreamActivity(topic, a.n, a.last_stamp_ns, a.last_s, end, a.after_end > 0)
                for topic, a in self.activity.items()]

    def verdict(self, *, title: str = "robogym_recorder verdict") -> Verdict:
        js, truth = self.joints.snapshot(), self.truth.snapshot()
        if len(js.stamp_ns) == 0:
            paused = self.run_states[-1].paused if self.run_states else None
            why = (" (the sim reports itself paused: resume it)" if paused else
                   ": is the sim running and unpaused, on the same ROS_DOMAIN_ID and namespace?")
            if JOINT_STATES in self.malformed:  # they came, but none could be decoded: a fault, not a usage error
                return Verdict([self.decoding_result()], title=title,
                               notes=["no joint_states could be decoded: no other check could run"])
            return Verdict.from_usage_error(f"no joint_states received{why}", title=title)
        results, notes = verdict_results(
            js.stamp_ns, js.position, js.velocity, truth.stamp_ns, truth.position, truth.velocity, self.spec,
            images=self.images.metas(), grid_stamps_ns=np.frombuffer(self.joint_stamps, np.int64),
            frames=self.frame_evidence(), with_notes=True)
        audit = checks.audit_buffers(self.joints.slots(), digests=self.joints.digests(),
                                     received=list(self.recent))
        # How the live recording went, beside the audit of its storage (absent from a bag).
        audit.figures.update(messages_realigned_by_name=self.foreign_names,
                             ring_overwrites=js.overwrites)
        results.append(_with_window(audit, checks.by_name(results, "slot_error").figures.get("window")))
        results.append(checks.check_stream_end(
            self.stream_activity(), self.run_states,
            silence_s=max(silence_s(c.spec) for c in self.history)))
        results.append(self.decoding_result())
        if self.spec_updates:  # a spec from another instance: the sim restarted under us
            checks.by_name(results, "tick_grid").figures["sim_restarts_seen"] = self.spec_updates
        if self.bad_run_states:
            notes.append(f"{self.bad_run_states} run-state messages were not valid and were ignored")
        return Verdict(results, title=title, notes=notes)

    def decoding_result(self) -> checks.CheckResult:
        """Serialized messages that could not be decoded: their data is lost, so a failure."""
        return decoding_result({stream: a.n + a.after_end for stream, a in self.activity.items()}, self.malformed)


def silence_s(spec: Spec) -> float:
    return checks.silence_threshold_s(spec.control_dt_s, spec.real_time_factor)


def verdict_results(stamps_ns, positions, velocities, true_stamps_ns, true_positions,
                    true_velocities, spec: Spec, *, images=(), grid_stamps_ns=None,
                    frames: FrameEvidence | None = None, with_notes: bool = False):
    """The checks of a joint_states stream (+ images) against ground truth, live or from a bag.

    Slots outside the span of the ground truth received are left out (and counted): the
    first ticks may arrive before the truth subscription is matched, the last before their
    truth does. Within the span, a slot without truth is a finding. ``grid_stamps_ns``
    (every stamp received, when the rings kept only the newest) feeds the tick grid; the
    slot checks say which window they judged. Returns the results (and, ``with_notes``,
    the sentences saying what was judged).
    """
    dt = spec.control_dt_ns
    stamps = np.asarray(stamps_ns, np.int64)
    true_stamps = np.asarray(true_stamps_ns, np.int64)
    all_stamps = stamps if grid_stamps_ns is None else np.asarray(grid_stamps_ns, np.int64)
    if len(true_stamps):
        inside = (stamps >= true_stamps.min()) & (stamps <= true_stamps.max())
    else:
        inside = np.zeros(len(stamps), bool)
    keep = np.flatnonzero(inside)
    vel = np.asarray(velocities)[keep]
    carries_velocity = bool(len(vel) and np.isfinite(vel).any())
    results = checks.audit_stream(
        stamps[keep], np.asarray(positions)[keep], true_stamps, true_positions, dt,
        velocities=vel if carries_velocity else None, true_velocities=true_velocities,
        decimation=spec.decimation, joint_names=spec.joint_names, grid_stamps_ns=all_stamps)
    grid = checks.by_name(results, "tick_grid")
    grid.figures["slots_outside_truth_span"] = int(len(stamps) - len(keep))
    window, note = _window(all_stamps, stamps, keep)
    results = [_with_window(r, window) if r.name in SLOT_CHECKS else r for r in results]
    notes = [note]
    if not carries_velocity:
        notes.append("joint_states carry no velocity: velocity_reported not run")
    if spec.cameras:
        results.append(_image_result(spec, images, all_stamps, frames, notes))
    return (results, notes) if with_notes else results


def _window(all_stamps: np.ndarray, stamps: np.ndarray, keep: np.ndarray) -> tuple[dict, str]:
    """Which slots the slot checks judged, as figures and as the verdict's sentence."""
    n_all, n_ring, n_kept = len(all_stamps), len(stamps), len(keep)
    lo = int(stamps[keep].min()) if n_kept else None
    hi = int(stamps[keep].max()) if n_kept else None
    overwritten = n_all - n_ring
    window = {"n_received": n_all, "n_in_ring": n_ring, "n_overwritten": overwritten, "n_judged": n_kept,
              "first_stamp_ns": lo, "last_stamp_ns": hi}
    span = f"{checks.fmt_s(lo)}..{checks.fmt_s(hi)}" if n_kept else "nothing"
    if overwritten > 0:
        text = (f"joint_states: checked the newest {n_ring} of {n_all} received; {overwritten} overwritten by "
                f"the ring (raise --capacity to keep all); slot checks judged {n_kept} slots, {span}")
    else:
        text = f"joint_states: checked all {n_all} received; slot checks judged {n_kept} slots, {span}"
    if n_kept < n_ring:
        text += f" ({n_ring - n_kept} outside the ground truth received)"
    return window, text


def _with_window(result: checks.CheckResult, window: dict | None) -> checks.CheckResult:
    if window is None:
        return result
    result.figures["window"] = window
    if window["n_overwritten"] > 0:
        span = (f"{checks.fmt_s(window['first_stamp_ns'])}..{checks.fmt_s(window['last_stamp_ns'])}"
                if window["n_judged"] else "nothing")
        return replace(result, summary=f"{result.summary} [newest {window['n_in_ring']} of "
                                       f"{window['n_received']} received: {span}]")
    return result


def _image_result(spec: Spec, images, all_stamps: np.ndarray, frames: FrameEvidence | None,
                  notes: list[str]) -> checks.CheckResult:
    dt = spec.control_dt_ns
    runs = checks.classify_stamps(all_stamps, dt)[1] if len(all_stamps) else np.zeros(0, np.int64)
    last_run = all_stamps[runs == runs[-1]] if len(all_stamps) else all_stamps
    lo, hi = (int(last_run.min()), int(last_run.max())) if len(last_run) else (0, -1)
    in_span = [im for im in images if lo <= im.stamp_ns <= hi]
    sizes = {c.name: (c.width, c.height) for c in spec.cameras if c.width}
    if frames is None:
        periods = {c.name: camera_period_ns(spec, c.name) for c in spec.cameras if camera_period_ns(spec, c.name)}
        return checks.check_images(in_span, dt, joint_stamps_ns=all_stamps, expected_sizes=sizes,
                                   periods_ns=periods)
    schedules, extra = frame_schedules(frames.history, lo, hi, judged_from_ns=frames.judged_from_ns,
                                       speed=frames.speed)
    result = checks.check_images(in_span, dt, joint_stamps_ns=all_stamps, expected_sizes=sizes,
                                 schedules=schedules, received_ns=frames.received_ns,
                                 skipped_ns=frames.skipped_ns, skips_reported=frames.skips_reported)
    if not in_span and schedules:  # nothing arrived in the window: still account for what was due
        figures, findings = checks.account_frames(schedules, frames.received_ns, frames.skipped_ns, dt,
                                                  skips_reported=frames.skips_reported)
        result = checks.CheckResult("images", "no images in the window; " + frames_summary(figures),
                                    {"n_images": 0, **figures}, tuple(findings), no_data=not findings)
    result.figures.update(extra, frames_of_earlier_runs=frames.earlier_runs)
    changes = live_changes_note(extra.get("period_change_zones", ()))
    if changes:
        notes.append(changes)
    if not frames.skips_reported and any(not s.every_frame for s in schedules):
        notes.append("the sim reports no skipped frames (no cameras/skipped publisher): a missing frame "
                     "cannot be told skipped from lost, and is counted, not failed")
    return result


def offline_frame_evidence(spec: Spec, images, skips: Sequence[tuple[int, str]] | None) -> FrameEvidence:
    """Frame evidence from a bag: frames judged from OFFLINE_SETTLE_PERIODS after each camera's first."""
    received: dict[str, list[int]] = {c.name: [] for c in spec.cameras}
    for im in images:
        received.setdefault(im.camera, []).append(int(im.stamp_ns))
    skipped: dict[str, list[int]] = {c.name: [] for c in spec.cameras}
    for stamp, names in skips or ():
        for cam in names.split(","):
            if cam.strip() in skipped:
                skipped[cam.strip()].append(int(stamp))
    judged_from = {}
    for cam in spec.cameras:
        got = received.get(cam.name)
        period = camera_period_ns(spec, cam.name)
        judged_from[cam.name] = (min(got) + OFFLINE_SETTLE_PERIODS * period) if got else None
    return FrameEvidence(received, skipped, skips is not None, judged_from, [SpecChange(None, spec)])


