"""Velocities against ground truth: finite differences of stored positions and reported velocities."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .matching import _matched, match_by_stamp
from .results import CheckResult, Finding


def compare_velocity(estimate: Any, reference: Any, *, decimation: int | None = None, rtol: float = 0.2,
                     still_rad_s: float = 1e-3, joint_names: Sequence[str] | None = None,
                     what: str = "velocity") -> tuple[dict[str, Any], list[Finding]]:
    """Compare velocity rows per joint by their least-squares gain, estimate ~ gain * reference.

    A joint fails when |gain - 1| > rtol. The gain is what the faults change -- a frozen
    (aliased) velocity has gain 0, a dt mix-up has gain = decimation -- while sample-wise
    disagreement that is not a scale does not move it: stiff servos ring at tens of Hz,
    where a one-tick finite difference and the trapezoid of the tick's end velocities
    differ by ~50 % rms on real motion (measured on the SO-101 scene at 100 Hz) with a gain
    still within 2 % of 1. The relative rms error is reported as a figure, not judged.
    """
    e = np.asarray(estimate, np.float64)
    r = np.asarray(reference, np.float64)
    names = list(joint_names) if joint_names is not None else [str(j) for j in range(r.shape[1])]
    rms_r = np.sqrt(np.mean(r * r, axis=0))
    rms_e = np.sqrt(np.mean(e * e, axis=0))
    err = np.sqrt(np.mean((e - r) ** 2, axis=0))
    moving = rms_r > still_rad_s
    rel = np.where(moving, err / np.where(moving, rms_r, 1.0), 0.0)
    rr = np.sum(r * r, axis=0)
    factor = np.where(moving, np.sum(e * r, axis=0) / np.where(moving, rr, 1.0), np.nan)
    bad_moving = moving & (np.abs(factor - 1.0) > rtol)
    bad_still = ~moving & (err > still_rad_s)
    worst = int(np.argmax(np.where(moving, rel, -1.0))) if moving.any() else None
    figures: dict[str, Any] = {
        "n_samples": int(r.shape[0]), "n_joints": int(r.shape[1]), "n_moving_joints": int(moving.sum()),
        "estimate_mean": float(e.mean()), "truth_mean": float(r.mean()),
        "estimate_rms": float(np.sqrt(np.mean(e * e))), "truth_rms": float(np.sqrt(np.mean(r * r))),
        "max_rel_error": float(rel.max()) if moving.any() else 0.0,
        "gain_range": [float(np.nanmin(factor)), float(np.nanmax(factor))] if moving.any() else None,
        "worst_joint": names[worst] if worst is not None else None,
        "rtol": rtol, "factor": None,
    }
    findings: list[Finding] = []
    if bad_moving.any():
        bad = np.flatnonzero(bad_moving)
        k = float(np.median(factor[bad]))
        figures["factor"] = k
        resid = np.sqrt(np.mean((e[:, bad] - k * r[:, bad]) ** 2, axis=0)) / rms_r[bad]
        frozen = np.all(rms_e[bad] <= 0.05 * rms_r[bad])
        constant = abs(k) > 0.05 and np.all(np.abs(factor[bad] - k) <= 0.05 * abs(k)) and np.all(resid <= rtol * abs(k))
        joints = (f"{len(bad)} of {int(moving.sum())} moving joints: " + ", ".join(names[j] for j in bad[:6])
                  + (", ..." if len(bad) > 6 else ""))
        figs = {"factor": k, "joints": [names[j] for j in bad], "estimate_mean": figures["estimate_mean"],
                "truth_mean": figures["truth_mean"], "decimation": decimation}
        if frozen:
            findings.append(Finding(f"{what}_zero", (
                f"{what} {figures['estimate_mean']:.3f} vs true {figures['truth_mean']:.3f} rad/s (rms "
                f"{figures['estimate_rms']:.3f} vs {figures['truth_rms']:.3f}): positions do not change while "
                f"the truth moves -- aliased or stale slots ({joints})"), figs))
        elif constant and decimation and abs(k / decimation - 1) <= 0.05:
            findings.append(Finding(f"{what}_factor_decimation", (
                f"{what} off by {k:.2f}x = decimation ({decimation}): physics dt used where control dt belongs "
                f"({joints})"), figs))
        elif constant and decimation and abs(k * decimation - 1) <= 0.05:
            findings.append(Finding(f"{what}_factor_decimation", (
                f"{what} off by {k:.2f}x = 1/decimation (1/{decimation}): control dt used where physics dt "
                f"belongs ({joints})"), figs))
        elif constant:
            note = f" (not the decimation {decimation})" if decimation else ""
            findings.append(Finding(f"{what}_factor", (
                f"{what} off by a constant factor {k:.2f}x{note} ({joints})"), figs))
        else:
            findings.append(Finding(f"{what}_mismatch", (
                f"{what} disagrees with the truth ({joints}): gains "
                f"{', '.join(f'{g:.2f}' for g in factor[bad][:6])} (tolerance 1 +- {rtol:.2f})"), figs))
    if bad_still.any():
        bad = np.flatnonzero(bad_still)
        findings.append(Finding(f"{what}_mismatch", (
            f"{what} of still joints ({', '.join(names[j] for j in bad[:6])}) is off by rms up to "
            f"{err[bad].max():.4f} rad/s while the truth is still"),
            {"joints": [names[j] for j in bad], "max_error_rad_s": float(err[bad].max())}))
    return figures, findings


def check_fd_velocity(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_velocities: Any,
                      control_dt_ns: int, *, decimation: int | None = None, rtol: float = 0.5,
                      still_rad_s: float = 1e-3, joint_names: Sequence[str] | None = None,
                      name: str = "velocity_fd") -> CheckResult:
    """Finite difference of consecutive stored positions over the control dt vs the truth.

    A one-tick difference is the mean velocity over that tick, so it is compared with
    the mean of the true velocities at its two ends (trapezoid), not with either end.
    Only slot pairs exactly one tick apart are used. The tolerance on the gain is wide
    (0.5) because the trapezoid is only an estimate of a tick's mean velocity: a target
    step at the start of a tick makes the servo's velocity peak inside the tick, above both
    ends, and real motion measured on the SO-101 scene gave gains of 1.07-1.27. The faults
    this check exists for are far outside: 0 (frozen, aliased) and the decimation (>= 2).
    """
    stamps, stored, true_v, idx = _matched(stamps_ns, positions, true_stamps_ns, true_velocities,
                                           control_dt_ns, what="positions")
    dt = int(control_dt_ns)
    pairs = np.flatnonzero((np.diff(stamps) == dt) & (idx[1:] >= 0) & (idx[:-1] >= 0))
    if len(pairs) == 0:
        return CheckResult(name, "no slot pair one tick apart with ground truth", {"n_pairs": 0}, no_data=True)
    fd = (stored[pairs + 1] - stored[pairs]) / (dt * 1e-9)
    ref = 0.5 * (true_v[idx[pairs]] + true_v[idx[pairs + 1]])
    finite = np.all(np.isfinite(fd), axis=1) & np.all(np.isfinite(ref), axis=1)
    if not finite.all():
        # NaN compares false with every tolerance and would pass; count it instead.
        nan_finding = Finding("nan_values", f"{int((~finite).sum())} of {len(pairs)} pairs have non-finite "
                                            f"positions or true velocities", {"n_pairs": int((~finite).sum())})
        pairs, fd, ref = pairs[finite], fd[finite], ref[finite]
        if len(pairs) == 0:
            return CheckResult(name, "no finite slot pair", {"n_pairs": 0}, (nan_finding,))
    else:
        nan_finding = None
    figures, findings = compare_velocity(fd, ref, decimation=decimation, rtol=rtol, still_rad_s=still_rad_s,
                                         joint_names=joint_names, what="FD velocity")
    figures = {"n_pairs": int(len(pairs)), "control_dt_ns": dt, **figures}
    if nan_finding is not None:
        findings.insert(0, nan_finding)
    summary = (f"FD velocity {figures['estimate_mean']:.3f} vs true {figures['truth_mean']:.3f} rad/s (mean; rms "
               f"{figures['estimate_rms']:.3f} vs {figures['truth_rms']:.3f}) over {len(pairs)} pairs; "
               f"max rel error {figures['max_rel_error']:.1%}")
    return CheckResult(name, summary, figures, tuple(findings))


def check_reported_velocity(stamps_ns: Any, velocities: Any, true_stamps_ns: Any, true_velocities: Any, *,
                            decimation: int | None = None, rtol: float = 0.2, still_rad_s: float = 1e-3,
                            control_dt_ns: int | None = None, estimate: str = "instant",
                            joint_names: Sequence[str] | None = None,
                            name: str = "velocity_reported") -> CheckResult:
    """A velocity someone reports (a JointState.velocity, a user's own estimate) vs the truth.

    ``estimate="instant"`` compares with the true velocity at the same stamp;
    ``"backward_difference"`` with the trapezoid mean over the tick that ends at the stamp,
    which is what (q[n] - q[n-1]) / dt estimates (needs ``control_dt_ns``).
    """
    if estimate not in ("instant", "backward_difference"):
        raise ValueError(f"estimate must be 'instant' or 'backward_difference', got {estimate!r}")
    if estimate == "backward_difference" and control_dt_ns is None:
        raise ValueError("estimate='backward_difference' needs control_dt_ns")
    stamps, vel, true_v, idx = _matched(stamps_ns, velocities, true_stamps_ns, true_velocities,
                                        control_dt_ns, what="velocities")
    use = (idx >= 0) & np.all(np.isfinite(vel), axis=1)
    if estimate == "backward_difference":
        prev = match_by_stamp(stamps - int(control_dt_ns), true_stamps_ns, control_dt_ns=None)
        use &= prev >= 0
        ref_all = 0.5 * (true_v[idx] + true_v[prev])
    else:
        ref_all = true_v[idx]
    if not use.any():
        return CheckResult(name, "no reported velocity with ground truth", {"n_samples": 0}, no_data=True)
    figures, findings = compare_velocity(vel[use], ref_all[use], decimation=decimation, rtol=rtol,
                                         still_rad_s=still_rad_s, joint_names=joint_names, what="velocity")
    figures = {"estimate": estimate, **figures}
    summary = (f"reported velocity {figures['estimate_mean']:.3f} vs true {figures['truth_mean']:.3f} rad/s (mean; "
               f"rms {figures['estimate_rms']:.3f} vs {figures['truth_rms']:.3f}) over {figures['n_samples']} "
               f"samples; max rel error {figures['max_rel_error']:.1%}")
    return CheckResult(name, summary, figures, tuple(findings))
