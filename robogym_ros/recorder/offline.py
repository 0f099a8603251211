"""A bag read back as a recording, and judged: the recorder's offline path (``--bag``), no rclpy.

    rec = read_recording("my_bag")       # BagError says why a bag cannot be read
    rec.data.joint_states, rec.data.ground_truth, rec.spec, rec.data.images
    verdict = judge(rec)                 # or check_bag("my_bag"): every failure becomes a verdict

Ground truth is aligned to joint_states' joint order; the spec is the bag's newest one (in the
same joint order), or inferred from the stamps for a bag without the spec topic. A bag cut
short (a recorder killed while writing) is read up to the cut; ``rec.notes`` says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from robogym_ros import checks, contract
from robogym_ros.checks import clip
from robogym_ros.contract import CameraSpec, JointSpec, Spec
from robogym_ros.recorder.bag.format import BagError, UndecodableBag
from robogym_ros.recorder.bag.reader import read_bag
from robogym_ros.recorder.bag.series import BagData, align_truth
from robogym_ros.recorder.decoding import decoding_result
from robogym_ros.recorder.judge import FrameEvidence, offline_frame_evidence, silence_s, verdict_results
from robogym_ros.recorder.schedules import SpecChange
from robogym_ros.recorder.verdict import TITLE, Verdict


@dataclass(frozen=True)
class BagRecording:
    """One bag as the checks see it."""

    path: str
    data: BagData  # ground_truth (if any) in joint_states' joint order
    spec: Spec  # the newest spec in the bag, joints in joint_states' order; else inferred (spec.inferred)
    notes: list[str] = field(default_factory=list)  # what the verdict must say about the reading (a recovery)

    @property
    def recorder_notes(self) -> dict:
        """What the recorder wrote at its end (empty when another tool recorded the bag)."""
        if self.data.recorder_notes is None:
            return {}
        try:
            notes = json.loads(self.data.recorder_notes[1])
        except ValueError:
            return {}
        return notes if isinstance(notes, dict) else {}


def read_recording(path: str | Path, *, image_digests: bool = False) -> BagRecording:
    """Read a bag (mcap or sqlite3; a truncated mcap up to its cut). Raises BagError (UndecodableBag
    when joint_states came but none decodes), naming what is wrong."""
    data = read_bag(path, recover=True, image_digests=image_digests)
    return _prepared(str(path), data)


def _prepared(path: str, data: BagData) -> BagRecording:
    notes = [data.recovery.describe(path)] if data.recovery is not None else []
    js = data.joint_states
    spec = data.spec or spec_from_stamps(js.names, js.stamp_ns, data.images)
    if data.ground_truth is not None:
        data = replace(data, ground_truth=align_truth(js, data.ground_truth))
        if data.spec is not None and sorted(data.spec.joint_names) != sorted(js.names):
            raise BagError(f"the spec names other joints than {js.topic}: "
                           f"{len(data.spec.joint_names)} vs {len(js.names)} ({clip(data.spec.joint_names, 200)} vs "
                           f"{clip(list(js.names), 200)})")
    if tuple(spec.joint_names) != js.names and sorted(spec.joint_names) == sorted(js.names):
        by_name = {j.name: j for j in spec.joints}
        spec = replace(spec, joints=tuple(by_name[n] for n in js.names))
    return BagRecording(path, data, spec, notes)


def check_bag(path: str | Path) -> Verdict:
    """The verdict on a bag; a bag that cannot be read is a usage error (exit 2) naming why."""
    shown = clip(str(path))
    try:
        data = read_bag(path, recover=True)
    except UndecodableBag as exc:  # joint_states came, none decodes: a fault in the data, not a usage error
        return Verdict([decoding_result({}, exc.malformed)], title=f"{TITLE} ({shown})",
                       notes=[f"{exc}: no other check could run"])
    except BagError as exc:
        return Verdict.from_usage_error(str(exc), title=TITLE)
    notes = [data.recovery.describe(str(path))] if data.recovery is not None else []
    if data.ground_truth is None and data.malformed:
        return Verdict([decoding_result(data.decoded, data.malformed)], title=f"{TITLE} ({shown})",
                       notes=notes + ["no ground truth could be decoded: no other check could run"])
    if data.ground_truth is None:
        return Verdict.from_usage_error(
            f"{shown}: no ground_truth/joint_states topic, nothing to prove the data against; "
            f"the bag has: {', '.join(sorted(clip(t, 80) for t in data.topics)[:20])}", title=TITLE, notes=notes)
    try:
        rec = _prepared(str(path), data)
    except BagError as exc:
        return Verdict.from_usage_error(f"{shown}: {exc}", title=TITLE, notes=notes)
    return judge(rec)


def judge(rec: BagRecording) -> Verdict:
    """Every check on a bag read by :func:`read_recording` (it must have ground truth)."""
    data, spec = rec.data, rec.spec
    js, gt = data.joint_states, data.ground_truth
    if gt is None:
        raise ValueError(f"{clip(rec.path)}: no ground truth to judge the recording against")
    frames = frame_evidence(rec) if spec.cameras and not spec.inferred else None
    results, more = verdict_results(js.stamp_ns, js.position, js.velocity, gt.stamp_ns, gt.position,
                                    gt.velocity, spec, images=data.images, frames=frames, with_notes=True)
    results.append(_stream_end(rec))
    results.append(decoding_result(data.decoded, data.malformed))
    return Verdict(results, title=f"{TITLE} ({clip(rec.path)})", notes=rec.notes + more + camera_pair_notes(data))


def camera_pair_notes(data: BagData) -> list[str]:
    """A sentence per camera whose image_raw and camera_info counts differ in the bag, naming the
    frames that lack their other half (a recording that began or ended between the two messages
    of a frame, which are published one after the other on two topics)."""
    images: dict[str, set[int]] = {}
    for im in data.images:
        images.setdefault(im.camera, set()).add(int(im.stamp_ns))
    notes = []
    for cam, info in sorted(data.camera_info.items()):
        frames, infos = images.get(cam, set()), set(int(v) for v in info.stamp_ns)
        n_images = sum(im.camera == cam for im in data.images)
        if n_images == len(info.stamp_ns) and frames == infos:
            continue
        lone_images, lone_infos = sorted(frames - infos), sorted(infos - frames)
        parts = []
        if lone_images:
            n = len(lone_images)
            parts.append(f"{n} image{'s' * (n != 1)} without {'their' if n != 1 else 'its'} camera_info "
                         f"({checks.fmt_s(lone_images[0])}"
                         f"{', ...' if len(lone_images) > 1 else ''})")
        if lone_infos:
            n = len(lone_infos)
            parts.append(f"{n} camera_info without {'their images' if n != 1 else 'its image'} "
                         f"({checks.fmt_s(lone_infos[0])}"
                         f"{', ...' if len(lone_infos) > 1 else ''})")
        if not parts:
            parts.append("the same stamps, some of them more than once")
        notes.append(f"{cam}: {n_images} image_raw and {len(info.stamp_ns)} camera_info in the bag: "
                     f"{'; '.join(parts)}; the recording began or ended between the two messages of a frame")
    return notes


def frame_evidence(rec: BagRecording) -> FrameEvidence:
    """Frame evidence from a bag: the recorder's own notes when it wrote the bag, else a settle margin."""
    evidence = offline_frame_evidence(rec.spec, rec.data.images, rec.data.camera_skips)
    history = spec_history(rec.data)
    if rec.data.recorder_notes is not None:
        notes = rec.recorder_notes
        try:
            judged = {k: (None if v is None else int(v)) for k, v in notes.get("frames_judged_from_ns", {}).items()}
            return replace(evidence, judged_from_ns={**evidence.judged_from_ns, **judged}, history=history,
                           skips_reported=bool(notes.get("skips_reported", evidence.skips_reported)),
                           speed=float(notes.get("speed", 1.0)),
                           late_starts={str(k): dict(v) for k, v in notes.get("cameras_started_late", {}).items()})
        except (ValueError, TypeError, AttributeError):
            pass
    return replace(evidence, history=history)


def spec_history(data: BagData) -> list[SpecChange]:
    """The specs in force in the bag's last sim run: live changes noticed at the newest joint stamp logged."""
    history: list[SpecChange] = []
    js = data.joint_states
    for log_ns, spec in data.specs:
        if history and spec.instance and spec.instance == history[-1].spec.instance:
            if spec != history[-1].spec:
                before = js.stamp_ns[js.log_time_ns <= log_ns]
                history.append(SpecChange(int(before.max()) if len(before) else None, spec))
        else:
            history = [SpecChange(None, spec)]
    return history or [SpecChange(None, data.spec)]


def _stream_end(rec: BagRecording) -> checks.CheckResult:
    """Stream stops seen in a bag: the end is the recorder's end note, else the bag's newest message,
    whose last seconds a cut recording cannot show (checks.CUT_UNSEEN_S)."""
    data, notes = rec.data, rec.recorder_notes
    end_ns = notes.get("end_time_ns") or data.end_log_time_ns
    alive = notes.get("alive_after_end", {})
    start_ns = int(data.joint_states.log_time_ns.min())
    streams = []
    for topic, series in (("joint_states", data.joint_states), ("ground_truth/joint_states", data.ground_truth)):
        last_s = (int(series.log_time_ns.max()) - start_ns) / 1e9
        first_s = (int(series.log_time_ns.min()) - start_ns) / 1e9
        streams.append(checks.StreamActivity(topic, len(series), int(series.stamp_ns[-1]), last_s,
                                             max(last_s, (int(end_ns) - start_ns) / 1e9),
                                             bool(alive.get(topic, False)), first_stamp_ns=int(series.stamp_ns[0]),
                                             first_arrival_s=first_s))
    states = []
    for _, text in data.run_states:
        try:
            s = contract.RunState.from_json(text)
        except ValueError:
            continue
        states.append(checks.RunStateReport(s.paused, s.stamp_ns, s.reason))
    # no end note: the recorder never reached its end (killed), so the bag's last seconds are not all written
    cut = "end_time_ns" not in notes
    return checks.check_stream_end(streams, states, silence_s=silence_s(rec.spec),
                                   end_unseen_s=checks.CUT_UNSEEN_S if cut else 0.0)


def spec_from_stamps(names, stamps_ns, images) -> Spec:
    """A bag from ``ros2 bag record`` without the spec topic: the control dt from the stamps."""
    diffs = np.diff(np.unique(np.asarray(stamps_ns, np.int64)))
    return Spec(joints=tuple(JointSpec(n) for n in names),
                control_dt_ns=int(np.median(diffs)) if len(diffs) and np.median(diffs) > 0 else 1,
                cameras=tuple(CameraSpec(c) for c in sorted({im.camera for im in images})),
                inferred=True)


def report_data(path: str | Path, verdict: Verdict | None = None):
    """The arrays a report draws, from a bag (None when the bag has no ground truth to draw); the
    contact sheet's frames inside the window ``verdict`` judged."""
    from robogym_ros.recorder.report.data import ReportData
    from robogym_ros.recorder.report.inputs import frames_from_bag, judged_window_ns
    try:
        rec = read_recording(path)
        if rec.data.ground_truth is None:
            return None
        window = judged_window_ns(verdict) if verdict is not None else None
        return ReportData.from_bag(rec.data, rec.spec,
                                   frames=frames_from_bag(path, rec.data.images, window_ns=window))
    except (BagError, ValueError):
        return None  # the verdict already says what is wrong with the bag
