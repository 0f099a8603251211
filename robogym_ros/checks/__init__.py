"""Checks on recorded observation streams and on users' own buffers (numpy only, no ROS).

Every check returns a :class:`CheckResult`: a one-line summary, a dict of figures (plain
Python numbers, JSON-ready) and a tuple of :class:`Finding` -- one per fault found, each
with a sentence that carries its figures. A clean input gives zero findings.

Why these checks: a buffer that keeps references instead of copies looks right at its
newest slot and wrong everywhere else, so the oldest slot is compared to ground truth
first; and anything per tick must use the control dt, not the physics dt, so a velocity off
by the decimation is named as such. Each check judges like with like: its docstring says
what its reference is (e.g. a finite difference against the truth's own finite difference).

Bad arguments (wrong shapes, ragged or non-numeric buffers, a dt that is not integer
nanoseconds) raise one ValueError naming the argument; an empty buffer is "no data".

Stamps are integer nanoseconds on the tick grid ``n * control_dt_ns``. Slots and rows are
in stored order, oldest first.
"""
from .buffers import audit_buffers
from .bundles import audit_observations, audit_stream
from .camera_frames import FrameSchedule, account_frames, frame_due_stamps
from .grid import check_tick_grid, classify_stamps
from .her_consistency import GoalBatch, check_her_consistency
from .images import check_images
from .liveness import CUT_UNSEEN_S, RunStateReport, StreamActivity, check_stream_end, silence_threshold_s
from .matching import match_by_stamp
from .results import (
                      AHEAD,
                      BYTES_PER_PIXEL,
                      DIGEST_SIZE,
                      DUPLICATE,
                      LIST_LIMIT,
                      NEW,
                      REORDERED,
                      RESTART,
                      CheckResult,
                      Finding,
                      ImageMeta,
                      by_name,
                      clip,
                      digest,
                      fmt_s,
)
from .slots import check_aliasing, check_slot_error, check_stale_payload
from .velocity import FdPairs, check_fd_velocity, check_reported_velocity, compare_velocity, fd_velocity_pairs

__all__ = [
    "AHEAD", "BYTES_PER_PIXEL", "CUT_UNSEEN_S", "DIGEST_SIZE", "DUPLICATE", "LIST_LIMIT", "NEW", "REORDERED", "RESTART",
    "CheckResult", "Finding", "ImageMeta", "by_name", "clip", "digest", "fmt_s",
    "check_tick_grid", "classify_stamps", "match_by_stamp",
    "check_aliasing", "check_slot_error", "check_stale_payload",
    "check_fd_velocity", "check_reported_velocity", "compare_velocity", "fd_velocity_pairs", "FdPairs",
    "audit_buffers", "check_images", "audit_observations", "audit_stream",
    "FrameSchedule", "account_frames", "frame_due_stamps",
    "RunStateReport", "StreamActivity", "check_stream_end", "silence_threshold_s",
    "GoalBatch", "check_her_consistency",
]
