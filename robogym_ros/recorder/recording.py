"""What the live recorder keeps, and the evidence it hands to the judge (robogym_ros.recorder.judge)
for the verdict. No ROS here: messages are duck-typed
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
from dataclasses import replace
from typing import Callable

import numpy as np

from robogym_ros import checks
from robogym_ros.checks import RunStateReport, StreamActivity
from robogym_ros.contract import NS_PER_S, RunState, Spec, header_stamp_ns, join_stamp
from robogym_ros.recorder.decoding import Malformed, decoding_result
from robogym_ros.recorder.judge import FrameEvidence, silence_s, verdict_results, with_window
from robogym_ros.recorder.ring import ImageRing, Ring
from robogym_ros.recorder.schedules import SpecChange, camera_period_ns
from robogym_ros.recorder.verdict import Verdict
from robogym_ros.wire.decode import JointStateDecoder, decode_header, decode_image, decode_joint_state

RECENT_FOR_AUDIT = 256  # received message arrays kept to prove no slot shares their memory
RESTART_JUMP_TICKS = 50  # checks.classify_stamps' reorder_window_ticks
MATCH_SETTLE_S = 0.5  # after a subscription matched, how long until its publisher surely matched it too
# A camera whose first frame comes this long (wall) after its image topic matched, while joint_states
# went on over more sim time than that: the frames due meanwhile were never sent (a late camera).
CAMERA_LATE_START_S = 1.0
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
        self.instances_seen = [spec.instance] if spec.instance else []
        self.other_publishers: set[str] = set()  # instances that came back: two sims publish here
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
        # Newest image and camera_info stamp per camera, once camera_info is watched (with --record):
        # the end waits for each image's camera_info, so a bag holds them in pairs.
        self.newest_image_ns: dict[str, int] = {}
        self.newest_info_ns: dict[str, int] | None = None
        self.frames_earlier_runs = 0
        self._live_since: dict[str, float] = {}  # topic key -> wall time its publishers last matched
        self._judged_from: dict[str, tuple[float, int] | None] = {c.name: None for c in spec.cameras}
        # camera -> (wall s its image topic matched, newest joint stamp then): until its first frame
        self._camera_live: dict[str, tuple[float, int]] = {}
        self.late_starts: dict[str, dict] = {}  # camera -> figures of a first frame that came late
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
            for cam in self.frames:  # a camera turned on live: frames are due from now on
                if not camera_period_ns(current, cam) and camera_period_ns(spec, cam) and not self.frames[cam]:
                    self._camera_live[cam] = (self._now(), self.last_joint_ns)
            self.spec = spec
            return "update"
        # Another instance, or a sim that names none: a restarted sim (its stamps start over), unless
        # an instance seen before comes back, which a restarted sim never does: two sims publish here.
        if spec.instance and spec.instance in self.instances_seen:
            self.other_publishers.update({spec.instance, current.instance} - {""})
        elif spec.instance:
            self.instances_seen.append(spec.instance)
        self.spec_updates += 1
        self.spec = spec
        self.history = [SpecChange(None, spec)]
        for cam in list(self.frames):
            self.frames_earlier_runs += len(self.frames[cam])
            self.frames[cam], self.skipped[cam] = array("q"), array("q")
            self._judged_from[cam] = None
        self._camera_live.clear()
        self.late_starts.clear()
        self.newest_image_ns.clear()
        if self.newest_info_ns is not None:
            self.newest_info_ns.clear()
        return "restart"

    def note_publishers(self, key: str, count: int, previous: int) -> None:
        """The node saw the publisher count of a subscription rise (``key``: "skips" or a camera)."""
        self.live_info = True
        if count > previous:
            self._live_since[key] = self._now()
            if key in self.frames and not self.frames[key] and camera_period_ns(self.spec, key):
                self._camera_live.setdefault(key, (self._now(), self.last_joint_ns))

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
        self.newest_image_ns[camera] = max(self.newest_image_ns.get(camera, stamp), stamp)
        if camera in self.frames:
            if not self.frames[camera]:
                self._check_first_frame(camera, stamp)
            self.frames[camera].append(stamp)
            self._maybe_judge_from(camera, stamp)

    def _check_first_frame(self, camera: str, stamp: int) -> None:
        """A camera's first frame: late if it came CAMERA_LATE_START_S (wall) after its topic was
        live (matched, and settled) while the joints went on for longer than that in sim time,
        and the frame is stamped that much after them (rendered late, not delivered late)."""
        live = self._camera_live.pop(camera, None)
        joints = self.activity[JOINT_STATES]
        if live is None or joints.first_s is None:
            return
        live_s, live_joint_ns = live
        if live_joint_ns < 0:  # no joints yet when the topic matched: from the first joint tick
            live_s, live_joint_ns = max(live_s, joints.first_s), joints.first_stamp_ns
        waited_s = self._now() - live_s - MATCH_SETTLE_S
        missed_ns = stamp - live_joint_ns
        late_ns = max(2 * camera_period_ns(self.spec, camera),
                      round(self.speed() * (CAMERA_LATE_START_S + MATCH_SETTLE_S) * NS_PER_S))
        if waited_s > CAMERA_LATE_START_S and missed_ns > late_ns:
            self.late_starts[camera] = {"waited_s": round(waited_s, 3), "first_frame_ns": int(stamp),
                                        "joints_when_live_ns": int(live_joint_ns), "missed_s": missed_ns / NS_PER_S}

    def store_camera_info_cdr(self, data: bytes, camera: str) -> bool:
        """A serialized sensor_msgs/CameraInfo (recorded for the bag): only its stamp is kept, so the
        end can wait for the camera_info of each camera's newest image. Malformed: counted, False."""
        try:
            stamp, _ = decode_header(data)
        except ValueError as exc:
            self.malformed.setdefault(f"cameras/{camera}/camera_info", Malformed()).add(str(exc))
            return False
        if self.newest_info_ns is None:
            self.newest_info_ns = {}
        self.newest_info_ns[camera] = max(self.newest_info_ns.get(camera, stamp), stamp)
        return True

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
        """Truth of the last joint tick, a joint_states after the end (the stream is alive), a frame
        after the last joint tick from every camera, and (camera_info watched) each camera's newest
        image and camera_info of one stamp: nothing more to wait for."""
        joints = self.activity[JOINT_STATES]
        if self.last_truth_ns < self.last_joint_ns or (joints.n and not joints.after_end):
            return False
        infos = self.newest_info_ns
        # Either may come first (two topics, two readers): a newest image without its camera_info,
        # or a camera_info whose image is still on its way, leaves the bag one frame out of pair.
        if infos is not None and any(cam in infos and infos[cam] != newest
                                     for cam, newest in self.newest_image_ns.items()):
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
            history=list(self.history), speed=self.speed(), earlier_runs=self.frames_earlier_runs,
            late_starts=dict(self.late_starts))

    def speed(self) -> float:
        """Sim seconds per wall second over the recording (1.0 until there is enough to tell)."""
        a = self.activity[JOINT_STATES]
        if a.n < 2 or a.last_s is None or a.last_s - a.first_s < 0.2:
            return 1.0
        return max(0.0, (a.last_stamp_ns - a.first_stamp_ns) / NS_PER_S / (a.last_s - a.first_s))

    def stream_activity(self) -> list[StreamActivity]:
        end = self.ended_s if self.ended_s is not None else self._now()
        return [StreamActivity(topic, a.n, a.last_stamp_ns, a.last_s, end, a.after_end > 0, a.after_end,
                               a.first_stamp_ns, a.first_s)
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
            truth_grid_stamps_ns=np.frombuffer(self.truth_stamps, np.int64),
            frames=self.frame_evidence(), with_notes=True)
        audit = checks.audit_buffers(self.joints.slots(), digests=self.joints.digests(),
                                     received=list(self.recent))
        # How the live recording went, beside the audit of its storage (absent from a bag).
        audit.figures.update(messages_realigned_by_name=self.foreign_names,
                             ring_overwrites=js.overwrites)
        results.append(with_window(audit, checks.by_name(results, "slot_error").figures.get("window")))
        results.append(checks.check_stream_end(
            self.stream_activity(), self.run_states,
            silence_s=max(silence_s(c.spec) for c in self.history)))
        results.append(self.decoding_result())
        if self.spec_updates:  # a spec from another instance: the sim restarted under us
            checks.by_name(results, "tick_grid").figures["sim_restarts_seen"] = self.spec_updates
        if self.other_publishers:
            grid = checks.by_name(results, "tick_grid")
            names = sorted(self.other_publishers)
            finding = checks.Finding("two_publishers", (
                f"two sims publish in this namespace: specs of instances {', '.join(names)} alternate (a restarted "
                f"sim never comes back as an earlier instance); the ticks below mix both"), {"instances": names})
            results[results.index(grid)] = replace(grid, findings=(finding, *grid.findings))
        if self.bad_run_states:
            notes.append(f"{self.bad_run_states} run-state messages were not valid and were ignored")
        return Verdict(results, title=title, notes=notes)

    def decoding_result(self) -> checks.CheckResult:
        """Serialized messages that could not be decoded: their data is lost, so a failure."""
        return decoding_result({stream: a.n + a.after_end for stream, a in self.activity.items()}, self.malformed,
                               after_end={stream: a.after_end for stream, a in self.activity.items()})
