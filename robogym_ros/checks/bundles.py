"""The checks bundled: a user's own buffer of observations, and a recorded joint_states stream."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .arguments import why_not_an_array
from .buffers import audit_buffers
from .grid import check_tick_grid
from .results import CheckResult
from .slots import check_aliasing, check_slot_error, check_stale_payload
from .velocity import check_fd_velocity, check_reported_velocity


def audit_observations(stamps_ns: Any, observations: Sequence[Any], true_stamps_ns: Any, true_positions: Any, *,
                       control_dt_ns: int | None = None,
                       decimation: int | None = None, digests: Sequence[bytes | None] | None = None,
                       received: Sequence[Any] = (), atol: float = 1e-9) -> list[CheckResult]:
    """The oldest-slot audit for a user's own buffer: a list of observation arrays, oldest first.

    The buffer is audited as objects first (identity, shared memory, digests) and only
    then stacked, since stacking copies and would hide the references. With
    ``control_dt_ns`` the FD velocity of the observations is checked against the truth's
    own FD.
    """
    results = [audit_buffers(observations, digests=digests, received=received)]
    positions = _stack(observations)
    results.append(check_slot_error(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                    control_dt_ns=control_dt_ns))
    results.append(check_aliasing(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                  control_dt_ns=control_dt_ns))
    results.append(check_stale_payload(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                                       control_dt_ns=control_dt_ns))
    if control_dt_ns is not None:
        results.append(check_fd_velocity(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns,
                                         decimation=decimation))
    return results


def _stack(observations: Sequence[Any]) -> np.ndarray:
    """One row per observation; ragged or non-numeric observations are a ValueError naming the slot."""
    try:
        rows = [np.asarray(o, dtype=np.float64).ravel() for o in observations]
    except (ValueError, TypeError) as exc:
        raise ValueError(f"observations: {why_not_an_array(observations, exc)}") from None
    if not rows:
        return np.zeros((0, 0))
    sizes = [len(r) for r in rows]
    if len(set(sizes)) > 1:
        bad = next(i for i, n in enumerate(sizes) if n != sizes[0])
        raise ValueError(f"observations: slot 0 holds {sizes[0]} values, slot {bad} holds {sizes[bad]}: every "
                         f"slot must hold the same joints")
    return np.array(rows)


def audit_stream(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, control_dt_ns: int, *,
                 velocities: Any = None, true_velocities: Any = None, decimation: int | None = None,
                 joint_names: Sequence[str] | None = None, atol: float = 1e-9,
                 grid_stamps_ns: Any = None) -> list[CheckResult]:
    """The checks for a recorded joint_states stream against ground truth (e.g. from a bag).

    ``grid_stamps_ns``: every stamp received, when ``stamps_ns`` holds only the newest of them
    (a ring that overwrote): the tick grid accounts for all, the slot checks judge the rest.
    """
    results = [
        check_tick_grid(stamps_ns if grid_stamps_ns is None else grid_stamps_ns, control_dt_ns),
        check_slot_error(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                         control_dt_ns=control_dt_ns),
        check_aliasing(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol, control_dt_ns=control_dt_ns),
        check_stale_payload(stamps_ns, positions, true_stamps_ns, true_positions, atol=atol,
                            control_dt_ns=control_dt_ns),
        check_fd_velocity(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns,
                          decimation=decimation, joint_names=joint_names),
    ]
    if velocities is not None and true_velocities is not None:
        results.append(check_reported_velocity(stamps_ns, velocities, true_stamps_ns, true_velocities,
                                               decimation=decimation, control_dt_ns=control_dt_ns,
                                               true_positions=true_positions, joint_names=joint_names))
    return results
