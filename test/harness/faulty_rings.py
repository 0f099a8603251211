"""Rings that alias, for positive controls of the buffer audit and the aliasing check: in a test's
own recording, and patched into a real recorder process (``VIEW_RING``: ``python -c VIEW_RING ...``
with this folder on PYTHONPATH runs robogym_recorder with a joint_states ring of views)."""
from __future__ import annotations

import numpy as np

from robogym_ros import checks
from robogym_ros.recorder.recording import Recording
from robogym_ros.recorder.ring import Ring, RingSnapshot

VIEW_RING = ("import sys; import robogym_ros.nodes.recorder.node as rn; from robogym_ros.nodes.recorder import cli; "
             "from faulty_rings import ViewRecording; rn.Recording = ViewRecording; sys.exit(cli.main(sys.argv))")


class ViewRing(Ring):
    """A ring that "stores" views: each slot is ``scratch[:]`` over one reused array."""

    def __init__(self, capacity: int, n_joints: int):
        super().__init__(1, n_joints)
        self._scratch = np.full((3, n_joints), np.nan)
        self._views: list[np.ndarray] = []
        self._stamps: list[int] = []
        self._digs: list[bytes] = []

    def store(self, stamp_ns, position, velocity=None, effort=None):
        self._scratch[0] = position
        self._scratch[1] = velocity if velocity is not None and len(velocity) else np.nan
        self._scratch[2] = effort if effort is not None and len(effort) else np.nan
        self._views.append(self._scratch[:])  # a new object, the same memory
        self._stamps.append(int(stamp_ns))
        self._digs.append(checks.digest(self._scratch))
        self.stores += 1
        return len(self._views) - 1

    def store_rows(self, stamp_ns, rows):  # the recorder's CDR path: the same fault
        return self.store(stamp_ns, rows[0], rows[1], rows[2])

    def snapshot(self) -> RingSnapshot:
        rows = np.array(self._views).reshape(-1, 3, self.n_joints)
        return RingSnapshot(np.array(self._stamps, np.int64), rows[:, 0], rows[:, 1], rows[:, 2],
                            tuple(self._digs), self.stores, 0)

    def slots(self):
        return list(self._views)

    def digests(self):
        return list(self._digs)

    def __len__(self):
        return len(self._views)


class ReferenceRing(ViewRing):
    """A ring that keeps the arrays it is handed (message.position), as ``list.append`` would."""

    def store(self, stamp_ns, position, velocity=None, effort=None):
        self._views.append(position)
        self._stamps.append(int(stamp_ns))
        self._digs.append(checks.digest(position))
        self.stores += 1
        return len(self._views) - 1

    def snapshot(self) -> RingSnapshot:
        pos = np.array([np.asarray(p, np.float64) for p in self._views])
        nan = np.full_like(pos, np.nan)
        return RingSnapshot(np.array(self._stamps, np.int64), pos, nan, nan, tuple(self._digs), self.stores, 0)


class ViewRecording(Recording):
    """Recording whose joint_states ring stores views (used inside the recorder process too)."""

    def __init__(self, spec, capacity, **kwargs):
        super().__init__(spec, capacity, **kwargs)
        self.joints = ViewRing(capacity, len(self.names))
