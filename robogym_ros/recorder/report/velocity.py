"""The report's velocity figure: for the joint that moved most, the arrays the two velocity
checks compared (velocity_fd, velocity_reported), titled with their findings.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from robogym_ros.checks import CheckResult, fd_velocity_pairs
from robogym_ros.contract import NS_PER_S
from robogym_ros.recorder.report.data import ReportData
from robogym_ros.recorder.report.figures import FigureInfo, fail_title, first_message, level, save, seconds


def velocity_figure(out: Path, data: ReportData, fd_result: CheckResult | None,
              reported_result: CheckResult | None) -> FigureInfo:
    """Each panel draws the two arrays its check compared, like with like, and its title states
    only what that check computed: the FD of stored positions against the truth's own FD over the
    same tick pairs (velocity_fd), and the reported JointState.velocity against the true
    instantaneous velocity at the same stamp (velocity_reported, when joint_states carry one)."""
    j = int(np.nanargmax(np.nanstd(data.true_positions, axis=0))) if len(data.true_positions) else 0
    joint = data.joint_names[j]
    pairs = fd_velocity_pairs(data.stamps_ns, data.positions, data.true_stamps_ns, data.true_positions,
                              data.control_dt_ns)
    reported = _reported_velocity(data)
    panels = [("velocity_fd", fd_result)] + ([("velocity_reported", reported_result)] if reported else [])
    fig = Figure(figsize=(10, 3.4 * len(panels)), layout="constrained")
    titles: dict[str, str] = {}
    failed = False
    for k, (name, result) in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, k + 1)
        if name == "velocity_fd":
            t = seconds(pairs.stamp_ns)
            ax.plot(t, pairs.reference[:, j], color="0.55", lw=2.5,
                    label="true: the truth's own finite difference over the same tick pair")
            ax.plot(t, pairs.fd[:, j], color="#1565c0", lw=1.0,
                    label="recorded: finite difference of stored positions / control dt")
            what = f"finite-difference velocity of {joint} [rad/s], the joint that moved most"
        else:
            t, stored_v, true_v = reported
            ax.plot(t, true_v[:, j], color="0.55", lw=2.5, label="true instantaneous velocity at the stamp")
            ax.plot(t, stored_v[:, j], color="#1565c0", lw=1.0, label="reported: JointState.velocity as stored")
            match = result.findings[0].figures.get("matches") if result is not None and result.findings else None
            if match == "a backward difference of positions":  # the diagnosis's own reference, drawn too
                bt, bd = _true_backward_difference(data, j)
                ax.plot(bt, bd, "--", color="#ef6c00", lw=1.2,
                        label="the truth's own backward difference over the control dt (what the finding "
                              "compared it with)")
            what = f"reported velocity of {joint} [rad/s]"
        ax.set_xlabel("sim time [s]")
        ax.set_ylabel("velocity [rad/s]")
        ax.legend(fontsize=7, loc="best")
        titles[name] = f"{what} -- {_check_statement(name, result)}"
        bad = result is not None and result.status == "fail"
        failed |= bad
        fail_title(ax, titles[name], bad)
    path = out / "velocity.png"
    save(fig, path)
    caption = ("Velocity, like with like: the finite difference of stored positions against the truth's own "
               "finite difference over the same tick pairs")
    if reported:
        caption += "; the reported velocity against the true instantaneous velocity at its stamp"
    # the factor a failure's finding names (its diagnosis), as its title states it
    factors = {name: (r.findings[0].figures.get("factor") if r is not None and r.findings else None)
               for name, r in panels}
    return FigureInfo("velocity", path, caption, level(failed),
                      {"joint": joint, "pairs": int(len(pairs.fd)), "titles": titles, "factors": factors},
                      checks=tuple(name for name, _ in panels))


def _reported_velocity(data: ReportData) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(sim time, stored velocity, true instantaneous velocity) at the stamps where both exist."""
    if data.velocities is None or data.true_velocities is None or not np.isfinite(data.velocities).any():
        return None
    order = np.argsort(data.true_stamps_ns, kind="stable")
    sorted_stamps = data.true_stamps_ns[order]
    if not len(sorted_stamps):
        return None
    pos = np.clip(np.searchsorted(sorted_stamps, data.stamps_ns), 0, len(sorted_stamps) - 1)
    rows = np.flatnonzero(sorted_stamps[pos] == data.stamps_ns)
    return seconds(data.stamps_ns[rows]), data.velocities[rows], data.true_velocities[order[pos[rows]]]


def _true_backward_difference(data: ReportData, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(sim time, (q_true[n] - q_true[n-1]) / control dt) of joint ``j`` where both ticks have truth."""
    order = np.argsort(data.true_stamps_ns, kind="stable")
    stamps, q = data.true_stamps_ns[order], data.true_positions[order, j]
    rows = np.flatnonzero(np.diff(stamps) == data.control_dt_ns)
    return seconds(stamps[rows + 1]), (q[rows + 1] - q[rows]) / (data.control_dt_ns / NS_PER_S)


def _check_statement(name: str, result: CheckResult | None) -> str:
    """What the check said, in its own figures: a failure's finding, a pass's worst relative error."""
    if result is None:
        return f"{name}: not run"
    if result.status == "fail":
        return f"{name} FAIL: {first_message(result)}"
    if result.status != "pass":
        return f"{name} {result.status.upper().replace('_', ' ')}: {result.summary}"
    f = result.figures
    span = f"{f.get('n_pairs', f.get('n_samples'))} {'tick pairs' if 'n_pairs' in f else 'samples'}"
    return (f"{name} PASS: largest relative error {f.get('max_rel_error', math.nan):.2g} over "
            f"{f.get('n_moving_joints', '?')} moving joints ({span})")
