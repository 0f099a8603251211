"""Whether the recorder's rings fit in memory, and what to say when they do not.

The rings are allocated at once (a recorder that runs out of memory an hour in has lost the
hour), so a ``--capacity`` that cannot fit is refused before anything is recorded: first with
the least the rings can need (one joint: the sim's spec, which names the joints, has not come
yet), then with the spec's own joint count.
"""
from __future__ import annotations

import os

from robogym_ros.recorder.ring import recording_bytes, ring_bytes

MEMORY_SHARE = 0.5  # the rings may take at most this share of the memory available now
# Pixels the live recorder keeps with --report unless --keep-pixels-mb says otherwise, for the
# report's contact sheet: the newest ~70 frames at 320x240 (~18 at 640x480), a few per camera;
# a copy of ~0.2 MB per frame. Without it a live report had no camera pictures at all.
REPORT_PIXELS_MB = 16.0


def available_memory_bytes() -> int:
    """Memory available to a new allocation now (MemAvailable), or the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - exotic platforms
        return 2 ** 40


def memory_problem(capacity: int, keep_pixels_mb: float, n_joints: int | None,
                   available_bytes: int | None = None) -> str | None:
    """Why rings of ``capacity`` slots do not fit (one line naming the figures), or None if they do.

    ``n_joints`` None: the joints are not known yet, so the least the rings can need (one joint)
    is judged and said to be a lower bound.
    """
    joints = 1 if n_joints is None else n_joints
    need = recording_bytes(capacity, joints, keep_pixels_mb)
    available = available_memory_bytes() if available_bytes is None else available_bytes
    allowed = MEMORY_SHARE * available
    if need <= allowed:
        return None
    slot_pair = 2 * ring_bytes(1, joints)  # one slot in each ring: joint_states and ground truth
    fixed = recording_bytes(0, joints, keep_pixels_mb)  # image metadata and kept pixels
    largest = int((allowed - fixed) // slot_pair) if allowed > fixed else 0
    pixels = f" and kept pixels ({keep_pixels_mb:g} MiB)" if keep_pixels_mb else ""
    if n_joints is None:
        per_joint = 2 * (ring_bytes(1, 2) - ring_bytes(1, 1))
        size = (f"at least {_gib(need)} of rings{pixels} ({slot_pair} bytes a slot for one joint, {per_joint} more "
                f"for each further joint the sim has)")
        fits = f"even one joint fits only --capacity {largest}"
    else:
        size = (f"{_gib(need)} of rings{pixels} for {n_joints} joints, as the sim's spec names them "
                f"({slot_pair} bytes a slot)")
        fits = f"use --capacity {largest} or less"
    if largest < 1:
        fits = "lower --keep-pixels-mb" if keep_pixels_mb else "free some memory"
    return (f"--capacity {capacity} needs {size}; {_gib(available)} available, at most {MEMORY_SHARE:.0%} used: "
            f"{fits}")


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"
