"""The checks bundled: a user's own buffer of observations, and a recorded joint_states stream."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .buffers import audit_buffers
from .grid import check_tick_grid
from .results import CheckResult
from .slots import check_aliasing, check_slot_error, check_stale_payload
from .velocity import check_fd_velocity, check_reported_velocity


def audit_observations(stamps_ns: Any, observations: Sequence[Any], true_stamps_ns: Any, true_positions: Any, *,
                       control_dt_ns: int | None = None, true_velocities: Any = None,
                       decimation: int | None = None, digests: Sequence[bytes | None] | None = None,
                       received: Sequence[Any] = (), atol: float = 1e-9) -> list[CheckResult]:
    """The oldest-slot audit for a user's own buffer: a list of observation arrays, oldest first.

    The buffer is audited as objects first (identity, shared memory, digests) and only
    then stacked, since stacking copies and would hide the references.
    """
    results = [audit_buffers(observations, digests=digests, received=received)]
    positions = np.array([np.asarray(o, dtype=np.float64).ravel() for o in observations])
    results.append(check_slot_error(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                    control_dt_ns=control_dt_ns))
    results.append(check_aliasing(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                  control_dt_ns=control_dt_ns))
    results.append(check_stale_payload(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                       control_dt_ns=control_dt_ns))
    if true_velocities is not None and control_dt_ns is not None:
        results.append(check_fd_velocity(stamps_ns, positions, true_stamps_ns, true_velocities, control_dt_ns,
                                         decimation=decimation))
    return results


def audit_stream(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, control_dt_ns: int, *,
                 velocities: Any = None, true_velocities: Any = None, decimation: int | None = None,
                 joint_names: Sequence[str] | None = None, atol: float = 1e-9) -> list[CheckResult]:
    """The checks for a recorded joint_states stream against ground truth (e.g. from a bag)."""
    results = [
        check_tick_grid(stamps_ns, control_dt_ns),
        check_slot_error(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                         control_dt_ns=control_dt_ns),
        check_aliasing(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol, control_dt_ns=control_dt_ns),
        check_stale_payload(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                            control_dt_ns=control_dt_ns),
    ]
    if true_velocities is not None:
        results.append(check_fd_velocity(stamps_ns, positions, true_stamps_ns, true_velocities, control_dt_ns,
                                         decimation=decimation, joint_names=joint_names))
        if velocities is not None:
            results.append(check_reported_velocity(stamps_ns, velocities, true_stamps_ns, true_velocities,
                                                   decimation=decimation, control_dt_ns=control_dt_ns,
                                                   joint_names=joint_names))
    return results
