"""Velocities against ground truth, like with like.

A finite difference is the mean velocity over its tick; the instantaneous velocity at the
tick's ends differs from it whenever the servos settle inside the tick (stiff servos ring at
tens of Hz, and at a long control dt the two disagree by several times). So each estimate is
judged against the reference of the same kind, computed from the truth the same way:

- the FD velocity of stored positions against the truth's own FD over the same tick pairs;
- a reported velocity against the true instantaneous velocity at its stamp ("instant"), or
  against the truth's own backward difference over the control dt ("backward_difference").

On correct data each pair is then equal to rounding, so the tolerances are tight, and a
fault shows as what it is: a gain of 0 (frozen, aliased), of the decimation (a physics dt
where the control dt belongs), or another constant factor. When a reported velocity fails
against its reference, the other reference is tried for the diagnosis: a backward
difference published as JointState.velocity is named as one, with its factor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .arguments import as_dt_ns, as_rows, as_stamps
from .matching import match_by_stamp, matched_values
from .results import CheckResult, Finding, clip

GAIN_RTOL = 0.02  # like with like: a correct stream has gain 1 to rounding
FACTOR_RTOL = 0.05  # how close a gain must be to the decimation (or 1/decimation) to be named so


def compare_velocity(estimate: Any, reference: Any, *, decimation: int | None = None, rtol: float = GAIN_RTOL,
                     still_rad_s: float = 1e-3, joint_names: Sequence[str] | None = None,
                     what: str = "velocity", code: str | None = None,
                     alternatives: Sequence[tuple[str, Any, Any]] = ()) -> tuple[dict[str, Any], list[Finding]]:
    """Compare velocity rows per joint by their least-squares gain, ``estimate ~ gain * reference``.

    A moving joint fails when |gain - 1| > ``rtol``; a still joint (reference rms below
    ``still_rad_s``) when the estimate's rms error exceeds ``still_rad_s``. The gain is what
    the faults change (0 frozen, the decimation for a dt mix-up); the relative rms error is
    reported as a figure. ``alternatives`` are (label, reference, rows) of other kinds of
    velocity (``rows``: a boolean mask of the samples it covers, or None for all), tried only
    to explain a failure (e.g. "a backward difference").
    """
    code = code or what.lower().replace(" ", "_")
    e = np.asarray(estimate, np.float64)
    r = np.asarray(reference, np.float64)
    if e.shape != r.shape or e.ndim != 2 or e.shape[0] == 0:
        raise ValueError(f"estimate and reference must be non-empty (n, n_joints) arrays of one shape, "
                         f"got {e.shape} and {r.shape}")
    names = [clip(n, 40) for n in joint_names] if joint_names is not None and len(joint_names) == r.shape[1] \
        else [str(j) for j in range(r.shape[1])]
    fit = _fit(e, r, still_rad_s)
    moving, factor, rel, err = fit["moving"], fit["gain"], fit["rel"], fit["err"]
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
        joints = (f"{len(bad)} of {int(moving.sum())} moving joints: " + ", ".join(names[j] for j in bad[:6])
                  + (", ..." if len(bad) > 6 else ""))
        figs = {"factor": k, "joints": [names[j] for j in bad], "estimate_mean": figures["estimate_mean"],
                "truth_mean": figures["truth_mean"], "decimation": decimation,
                "gains": [float(g) for g in factor[bad][:20]]}
        findings.append(_diagnose(e, r, fit, bad, k, joints, figs, decimation, rtol, still_rad_s, what, code,
                                  alternatives))
    if bad_still.any():
        bad = np.flatnonzero(bad_still)
        findings.append(Finding(f"{code}_mismatch", (
            f"{what} of still joints ({', '.join(names[j] for j in bad[:6])}) is off by rms up to "
            f"{err[bad].max():.4f} rad/s while the truth is still"),
            {"joints": [names[j] for j in bad], "max_error_rad_s": float(err[bad].max())}))
    return figures, findings


def _fit(e: np.ndarray, r: np.ndarray, still_rad_s: float) -> dict[str, np.ndarray]:
    rms_r = np.sqrt(np.mean(r * r, axis=0))
    err = np.sqrt(np.mean((e - r) ** 2, axis=0))
    moving = rms_r > still_rad_s
    safe = np.where(moving, rms_r, 1.0)
    gain = np.where(moving, np.sum(e * r, axis=0) / np.where(moving, np.sum(r * r, axis=0), 1.0), np.nan)
    resid = np.sqrt(np.mean((e - np.nan_to_num(gain)[None, :] * r) ** 2, axis=0)) / safe
    return {"moving": moving, "gain": gain, "rel": np.where(moving, err / safe, 0.0), "err": err,
            "rms_r": rms_r, "rms_e": np.sqrt(np.mean(e * e, axis=0)), "resid": resid}


def _constant(fit: dict, bad: np.ndarray, k: float) -> bool:
    """The bad joints share one gain, and that gain explains the samples (not only their scale)."""
    g = fit["gain"][bad]
    return bool(abs(k) > 0.05 and np.all(np.abs(g - k) <= FACTOR_RTOL * abs(k))
                and np.all(fit["resid"][bad] <= 0.1 * abs(k)))


def _factor_text(k: float, decimation: int | None, what: str) -> tuple[str, str]:
    """(code suffix, sentence) naming a constant factor ``k``."""
    if decimation and abs(k / decimation - 1) <= FACTOR_RTOL:
        return "factor_decimation", (f"{what} off by {k:.2f}x = decimation ({decimation}): physics dt used "
                                     f"where control dt belongs")
    if decimation and decimation > 1 and abs(k * decimation - 1) <= FACTOR_RTOL:
        return "factor_decimation", (f"{what} off by {k:.2f}x = 1/decimation (1/{decimation}): control dt used "
                                     f"where physics dt belongs")
    note = f" (not the decimation {decimation})" if decimation else ""
    return "factor", f"{what} off by a constant factor {k:.2f}x{note}"


def _diagnose(e, r, fit, bad, k, joints, figs, decimation, rtol, still_rad_s, what, code, alternatives) -> Finding:
    if np.all(fit["rms_e"][bad] <= 0.05 * fit["rms_r"][bad]):
        return Finding(f"{code}_zero", (
            f"{what} {figs['estimate_mean']:.3f} vs true {figs['truth_mean']:.3f} rad/s (rms "
            f"{float(np.sqrt(np.mean(e * e))):.3f} vs {float(np.sqrt(np.mean(r * r))):.3f}): positions do not "
            f"change while the truth moves -- aliased or stale slots ({joints})"), figs)
    primary = _constant(fit, bad, k)
    resid = float(np.max(fit["resid"][bad]) / abs(k)) if abs(k) > 0 else np.inf
    match = _explained_by(e, fit, bad, alternatives, still_rad_s)
    # Another kind of velocity that explains the samples better than a factor on the reference
    # is the diagnosis: e.g. a backward difference over the physics dt has a gain of ~2.06
    # against the instantaneous truth at decimation 2, and exactly 2 against its own kind.
    if match is not None and (not primary or match[2] < 0.5 * resid):
        label, k_alt, _ = match
        gains = ", ".join(f"{g:.2f}" for g in fit["gain"][bad][:6])
        figs = {**figs, "matches": label, "factor_vs_match": k_alt}
        if abs(k_alt - 1) <= rtol:
            return Finding(f"{code}_is_{label.replace(' ', '_')}", (
                f"{what} is {label} (gain {k_alt:.2f} against the truth's own), not what it is judged as "
                f"(gains {gains}; tolerance 1 +- {rtol:.2f}) ({joints})"), figs)
        suffix, text = _factor_text(k_alt, decimation, "FD velocity" if "difference" in label else what)
        return Finding(f"{code}_{suffix}", f"{what} is {label}: {text} ({joints})", {**figs, "factor": k_alt})
    if primary:
        suffix, text = _factor_text(k, decimation, what)
        return Finding(f"{code}_{suffix}", f"{text} ({joints})", figs)
    return Finding(f"{code}_mismatch", (
        f"{what} disagrees with the truth ({joints}): gains {', '.join(f'{g:.2f}' for g in fit['gain'][bad][:6])} "
        f"(tolerance 1 +- {rtol:.2f})"), figs)


def _explained_by(e, fit, bad, alternatives, still_rad_s) -> tuple[str, float, float] | None:
    """(label, factor, relative residual) of the alternative reference that explains ``e`` best."""
    best = None
    for label, alt, rows in alternatives:
        rows = np.ones(len(e), bool) if rows is None else np.asarray(rows, bool)
        if rows.sum() < max(2, len(e) // 2):
            continue
        alt_fit = _fit(e[rows], np.asarray(alt, np.float64)[rows], still_rad_s)
        if not alt_fit["moving"][bad].all():
            continue
        k_alt = float(np.median(alt_fit["gain"][bad]))
        if not _constant(alt_fit, bad, k_alt):
            continue
        resid = float(np.max(alt_fit["resid"][bad]) / abs(k_alt))
        if best is None or resid < best[2]:
            best = (label, k_alt, resid)
    return best


def _step_pairs(stamps: np.ndarray, idx: np.ndarray, dt: int) -> tuple[np.ndarray, int]:
    """Consecutive slot pairs with truth at both ends, one step of the stream apart, and that step.

    The step is the control dt where any pair is one control dt apart; otherwise the most
    common spacing, which then contradicts ``control_dt_ns`` (and is named by the caller).
    """
    diffs = np.diff(stamps)
    both = (idx[1:] >= 0) & (idx[:-1] >= 0) & (diffs > 0)
    if not both.any():
        return np.array([], np.int64), dt
    if np.any(both & (diffs == dt)):
        return np.flatnonzero(both & (diffs == dt)), dt
    values, counts = np.unique(diffs[both], return_counts=True)
    step = int(values[np.argmax(counts)])
    return np.flatnonzero(both & (diffs == step)), step


@dataclass(frozen=True)
class FdPairs:
    """What check_fd_velocity compares, pair by pair (the report draws the same arrays)."""
    stamp_ns: np.ndarray  # (n,) the stamp of each pair's later slot
    fd: np.ndarray  # (n, n_joints) FD of the stored positions / control dt
    reference: np.ndarray  # (n, n_joints) the truth's own FD over the same tick pair
    step_ns: int  # the stamp step the pairs span (the control dt unless the stamps contradict it)


def fd_velocity_pairs(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any,
                      control_dt_ns: int) -> FdPairs:
    """Consecutive slots one control dt apart with truth at both ends: their FD and the truth's.

    Non-finite pairs are kept (check_fd_velocity counts them). See check_fd_velocity for the step.
    """
    dt = as_dt_ns(control_dt_ns)
    stamps, stored, truth, idx = matched_values(stamps_ns, positions, true_stamps_ns, true_positions, dt)
    pairs, step = _step_pairs(stamps, idx, dt)
    fd = (stored[pairs + 1] - stored[pairs]) / (dt * 1e-9)
    ref = (truth[idx[pairs + 1]] - truth[idx[pairs]]) / (step * 1e-9)
    return FdPairs(stamps[pairs + 1], fd, ref, step)


def check_fd_velocity(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any,
                      control_dt_ns: int, *, decimation: int | None = None, rtol: float = GAIN_RTOL,
                      still_rad_s: float = 1e-3, joint_names: Sequence[str] | None = None,
                      name: str = "velocity_fd") -> CheckResult:
    """The FD velocity of stored positions against the truth's own FD over the same tick pairs.

    Reference: ``(q_true[n+1] - q_true[n]) / dt`` for each pair of consecutive slots one
    control dt apart, with the true positions at the slots' own stamps: exactly what the
    stored FD must be, whatever the motion and the decimation. The estimate divides by
    ``control_dt_ns`` as given: if no slot pair is one control dt apart, the pairs one step
    of the stream apart are used and the reference divides by that step, so a control dt
    that contradicts the stamps (the physics dt given for the control dt) shows as its
    factor, e.g. "off by 5.00x = decimation (5)".
    """
    dt = as_dt_ns(control_dt_ns)
    fd_pairs = fd_velocity_pairs(stamps_ns, positions, true_stamps_ns, true_positions, dt)
    fd, ref, step = fd_pairs.fd, fd_pairs.reference, fd_pairs.step_ns
    pairs = np.arange(len(fd))
    if len(pairs) == 0:
        return CheckResult(name, "needs 2 consecutive slots with ground truth", {"n_pairs": 0,
                                                                                "control_dt_ns": dt}, no_data=True)
    finite = np.all(np.isfinite(fd), axis=1) & np.all(np.isfinite(ref), axis=1)
    nan_finding = None
    if not finite.all():
        # NaN compares false with every tolerance and would pass; count it instead.
        nan_finding = Finding("nan_values", f"{int((~finite).sum())} of {len(pairs)} pairs have non-finite "
                                            f"positions", {"n_pairs": int((~finite).sum())})
        pairs, fd, ref = pairs[finite], fd[finite], ref[finite]
        if len(pairs) == 0:
            return CheckResult(name, "no finite slot pair", {"n_pairs": 0}, (nan_finding,))
    figures, findings = compare_velocity(fd, ref, decimation=decimation, rtol=rtol, still_rad_s=still_rad_s,
                                         joint_names=joint_names, what="FD velocity", code="fd_velocity")
    figures = {"n_pairs": int(len(pairs)), "control_dt_ns": dt, "stamp_step_ns": step,
               "reference": "the truth's own finite difference over the same tick pairs", **figures}
    if step != dt and findings:
        f = findings[0]
        findings[0] = Finding(f.code, f"{f.message}; control_dt_ns is {dt / 1e6:g} ms but consecutive stamps are "
                                      f"{step / 1e6:g} ms apart", {**f.figures, "stamp_step_ns": step})
    if nan_finding is not None:
        findings.insert(0, nan_finding)
    summary = (f"FD velocity {figures['estimate_mean']:.3f} vs true FD {figures['truth_mean']:.3f} rad/s (mean; "
               f"rms {figures['estimate_rms']:.3f} vs {figures['truth_rms']:.3f}) over {len(pairs)} pairs; "
               f"max rel error {figures['max_rel_error']:.1%}")
    return CheckResult(name, summary, figures, tuple(findings))


def check_reported_velocity(stamps_ns: Any, velocities: Any, true_stamps_ns: Any, true_velocities: Any = None, *,
                            decimation: int | None = None, rtol: float = GAIN_RTOL, still_rad_s: float = 1e-3,
                            control_dt_ns: int | None = None, estimate: str = "instant",
                            true_positions: Any = None, joint_names: Sequence[str] | None = None,
                            name: str = "velocity_reported") -> CheckResult:
    """A velocity someone reports (a JointState.velocity, a user's own estimate) vs the truth.

    Reference: with ``estimate="instant"``, the true instantaneous velocity at the same
    stamp (``true_velocities``); with ``"backward_difference"``, the truth's own backward
    difference ``(q_true[n] - q_true[n-1]) / control_dt`` (needs ``true_positions`` and
    ``control_dt_ns``), which is what a correct ``(q[n] - q[n-1]) / dt`` equals exactly.
    Given both truths, a failure is also tried against the other kind, to name it (e.g. a
    backward difference over the physics dt published as the instantaneous velocity).
    """
    if estimate not in ("instant", "backward_difference"):
        raise ValueError(f"estimate must be 'instant' or 'backward_difference', got {estimate!r}")
    if estimate == "backward_difference" and (true_positions is None or control_dt_ns is None):
        raise ValueError("estimate='backward_difference' needs true_positions and control_dt_ns: the reference "
                         "is the truth's own backward difference over the control dt")
    if estimate == "instant" and true_velocities is None:
        raise ValueError("estimate='instant' needs true_velocities (the true velocity at each stamp)")
    dt = None if control_dt_ns is None else as_dt_ns(control_dt_ns)
    truth_v = true_velocities if true_velocities is not None else true_positions
    stamps, vel, true_v, idx = matched_values(stamps_ns, velocities, true_stamps_ns, truth_v, dt, what="velocities")
    use = (idx >= 0) & np.all(np.isfinite(vel), axis=1)
    refs: dict[str, np.ndarray] = {}
    if true_velocities is not None:
        refs["instant"] = true_v[np.maximum(idx, 0)]
    if true_positions is not None and dt is not None:
        true_q = as_rows(true_positions, len(as_stamps(true_stamps_ns, "true_stamps_ns")), "true_positions")
        if true_q.shape[1] != vel.shape[1]:
            raise ValueError(f"true_positions have {true_q.shape[1]} columns (joints), velocities "
                             f"{vel.shape[1]}: give both the same joints in the same order")
        prev = match_by_stamp(stamps - dt, true_stamps_ns, control_dt_ns=None)
        bd = (true_q[np.maximum(idx, 0)] - true_q[np.maximum(prev, 0)]) / (dt * 1e-9)
        bd_ok = (prev >= 0) & np.all(np.isfinite(bd), axis=1)
        if estimate == "backward_difference":
            use &= bd_ok
        refs["backward_difference"] = bd
        covered = {"instant": idx >= 0, "backward_difference": bd_ok}
    else:
        covered = {"instant": idx >= 0}
    if not use.any():
        return CheckResult(name, "no reported velocity with ground truth", {"n_samples": 0}, no_data=True)
    labels = {"instant": "the instantaneous velocity", "backward_difference": "a backward difference of positions"}
    alternatives = [(labels[k], ref[use], covered[k][use]) for k, ref in refs.items() if k != estimate]
    what = "FD velocity" if estimate == "backward_difference" else "velocity"
    figures, findings = compare_velocity(vel[use], refs[estimate][use], decimation=decimation, rtol=rtol,
                                         still_rad_s=still_rad_s, joint_names=joint_names, what=what,
                                         code="velocity", alternatives=alternatives)
    reference = ("the true instantaneous velocity at the same stamp" if estimate == "instant" else
                 "the truth's own backward difference over the control dt")
    figures = {"estimate": estimate, "reference": reference, **figures}
    summary = (f"reported velocity {figures['estimate_mean']:.3f} vs true {figures['truth_mean']:.3f} rad/s (mean; "
               f"rms {figures['estimate_rms']:.3f} vs {figures['truth_rms']:.3f}) over {figures['n_samples']} "
               f"samples; max rel error {figures['max_rel_error']:.1%}")
    return CheckResult(name, summary, figures, tuple(findings))
