"""What the recorder keeps, and the verdict on it. No ROS here: messages are duck-typed
(``header.stamp.sec/nanosec``, ``name``, ``position``, ...), so this runs on live messages,
on bag contents and in tests alike.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from robogym_ros import checks
from robogym_ros.contract import Spec, header_stamp_ns
from robogym_ros.recorder.ring import ImageRing, Ring
from robogym_ros.recorder.verdict import Verdict

RECENT_FOR_AUDIT = 256  # received message arrays kept to prove no slot shares their memory
RESTART_JUMP_TICKS = 50  # checks.classify_stamps' reorder_window_ticks


class Recording:
    """Ring buffers, copy on store, for one sim described by its spec."""

    def __init__(self, spec: Spec, capacity: int, *, image_capacity: int = 10_000,
                 pixel_budget_bytes: int = 0):
        self.spec = spec
        self.names = spec.joint_names
        self.joints = Ring(capacity, len(self.names))
        self.truth = Ring(capacity, len(self.names))
        self.images = ImageRing(image_capacity, pixel_budget_bytes=pixel_budget_bytes)
        self.recent: deque = deque(maxlen=RECENT_FOR_AUDIT)
        self.foreign_names = 0  # messages whose joint names differ from the spec's
        self.spec_updates = 0
        self.last_joint_ns = -1  # newest stamps seen in the current run of the sim,
        self.last_truth_ns = -1  # without copying a ring
        # A jump back this far is a restarted sim (as in checks.classify_stamps): its stamps
        # start over, so "newest" starts over too, or the truth of the new run's last ticks
        # would count as caught up by the old run's stamps.
        self._restart_jump_ns = RESTART_JUMP_TICKS * spec.control_dt_ns

    def _columns(self, msg) -> tuple:
        if list(msg.name) == self.names:
            return msg.position, msg.velocity, msg.effort
        self.foreign_names += 1  # realign by name; a joint the spec lacks is dropped
        index = {n: i for i, n in enumerate(msg.name)}
        cols = []
        for field in (msg.position, msg.velocity, msg.effort):
            cols.append([field[index[n]] if n in index and len(field) > index[n] else np.nan
                         for n in self.names] if len(field) else field)
        return tuple(cols)

    def store_joint_state(self, msg) -> None:
        position, velocity, effort = self._columns(msg)
        stamp = header_stamp_ns(msg)
        self.joints.store(stamp, position, velocity, effort)
        self.recent.append(msg.position)
        self.last_joint_ns = self._newest(self.last_joint_ns, stamp)

    def store_truth(self, msg) -> None:
        position, velocity, effort = self._columns(msg)
        stamp = header_stamp_ns(msg)
        self.truth.store(stamp, position, velocity, effort)
        self.last_truth_ns = self._newest(self.last_truth_ns, stamp)

    def _newest(self, newest: int, stamp: int) -> int:
        return stamp if stamp < newest - self._restart_jump_ns else max(newest, stamp)

    def store_image(self, msg, camera: str) -> None:
        self.images.store(header_stamp_ns(msg), msg.width, msg.height, msg.step, msg.encoding,
                          msg.data, camera)

    def verdict(self, *, title: str = "robogym_recorder verdict") -> Verdict:
        js, truth = self.joints.snapshot(), self.truth.snapshot()
        if len(js.stamp_ns) == 0:
            return Verdict.from_usage_error("no joint_states received: is the sim running and "
                                            "unpaused, on the same ROS_DOMAIN_ID and namespace?",
                                            title=title)
        results = verdict_results(js.stamp_ns, js.position, js.velocity, truth.stamp_ns,
                                  truth.position, truth.velocity, self.spec,
                                  images=self.images.metas())
        audit = checks.audit_buffers(self.joints.slots(), digests=self.joints.digests(),
                                     received=list(self.recent))
        # How the live recording went, beside the audit of its storage (absent from a bag).
        audit.figures.update(messages_realigned_by_name=self.foreign_names,
                             ring_overwrites=js.overwrites)
        results.append(audit)
        if self.spec_updates:  # a second latched spec: the sim restarted under us
            checks.by_name(results, "tick_grid").figures["sim_restarts_seen"] = self.spec_updates
        return Verdict(results, title=title)


def verdict_results(stamps_ns, positions, velocities, true_stamps_ns, true_positions,
                    true_velocities, spec: Spec, *, images=()) -> list[checks.CheckResult]:
    """The checks of a joint_states stream (+ images) against ground truth, live or from a bag.

    Slots outside the span of the ground truth received are left out (and counted): the
    first ticks may arrive before the truth subscription is matched, the last before their
    truth does. Within the span, a slot without truth is a finding.
    """
    dt = spec.control_dt_ns
    stamps = np.asarray(stamps_ns, np.int64)
    true_stamps = np.asarray(true_stamps_ns, np.int64)
    if len(true_stamps):
        inside = (stamps >= true_stamps.min()) & (stamps <= true_stamps.max())
    else:
        inside = np.zeros(len(stamps), bool)
    keep = np.flatnonzero(inside)
    results = checks.audit_stream(
        stamps[keep], np.asarray(positions)[keep], true_stamps, true_positions, dt,
        velocities=np.asarray(velocities)[keep], true_velocities=true_velocities,
        decimation=spec.decimation, joint_names=spec.joint_names)
    checks.by_name(results, "tick_grid").figures["slots_outside_truth_span"] = int(len(stamps) - len(keep))
    cameras = spec.cameras
    if cameras:
        lo, hi = (int(stamps[keep].min()), int(stamps[keep].max())) if len(keep) else (0, -1)
        in_span = [im for im in images if lo <= im.stamp_ns <= hi]
        periods = {c.name: round(c.period_s * 1e9) for c in cameras
                   if c.period_s and round(c.period_s * 1e9) % dt == 0}  # else it jitters
        results.append(checks.check_images(
            in_span, dt, joint_stamps_ns=stamps[keep],
            expected_sizes={c.name: (c.width, c.height) for c in cameras if c.width},
            periods_ns=periods))
    return results
