"""Stored slots against ground truth: per-slot error, aliasing to the newest slot, stale payloads."""
from __future__ import annotations

from typing import Any

import numpy as np

from .matching import matched_values
from .results import CheckResult, Finding, capped, fmt_list


def check_slot_error(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, *,
                     atol: float = 1e-9, control_dt_ns: int | None = None,
                     name: str = "slot_error") -> CheckResult:
    """Stored positions against ground truth matched by stamp, the oldest slot above all.

    A buffer of references holds the newest value everywhere: its newest slot is exact
    and its oldest is off by the whole motion since, so the oldest slot tells.
    """
    stamps, stored, truth, idx = matched_values(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns)
    ok = idx >= 0
    unmatched = stamps[~ok]
    base = {"n_slots": int(len(stamps)), "n_matched": int(ok.sum()), "n_unmatched": int(len(unmatched)),
            "unmatched_stamps_ns": capped(unmatched), "atol": atol}
    if not ok.any():
        return CheckResult(name, f"no slot stamp found in ground truth ({len(stamps)} slots)", base, no_data=True)
    slots = np.flatnonzero(ok)
    s, t = stored[slots], truth[idx[slots]]
    err = np.abs(s - t)
    n_nan = int(np.isnan(err).any(axis=1).sum())
    err[np.isnan(err)] = np.inf  # a missing value is as wrong as it gets, never silently equal
    slot_err = err.max(axis=1)
    worst_slot, worst_joint = np.unravel_index(int(np.argmax(err)), err.shape)
    joint = int(worst_joint)
    rows_at = list(range(len(slots))) if len(slots) <= 16 else [0, 1, 2, len(slots) - 3, len(slots) - 2, len(slots) - 1]
    figures = {
        **base,
        "n_slots_with_nan": n_nan,
        "oldest_error": float(slot_err[0]),
        "mean_error": float(slot_err.mean()),
        "newest_error": float(slot_err[-1]),
        "max_error": float(slot_err.max()),
        "max_error_slot": int(slots[worst_slot]),
        "max_error_joint": joint,
        "stored_mean": float(s.mean()),
        "true_mean": float(t.mean()),
        "slot_table_joint": joint,
        "slot_table_means": {"true": float(t[:, joint].mean()), "stored": float(s[:, joint].mean()),
                             "error": float(err[:, joint].mean())},
        "slot_table": [{"slot": int(slots[k]), "stamp_ns": int(stamps[slots[k]]), "true": float(t[k, joint]),
                        "stored": float(s[k, joint]), "error": float(err[k, joint])} for k in rows_at],
    }
    findings = []
    if figures["max_error"] > atol:
        tail = (" -- the newest slot is right, so a test of the newest slot alone would pass"
                if figures["newest_error"] <= atol < figures["oldest_error"] else "")
        findings.append(Finding("slot_error", (
            f"oldest slot off by {figures['oldest_error']:.3f} (mean {figures['mean_error']:.3f}, newest "
            f"{figures['newest_error']:.3f}, max {figures['max_error']:.3f} at slot {figures['max_error_slot']} "
            f"joint {joint}); stored mean {figures['stored_mean']:.3f} vs true {figures['true_mean']:.3f}{tail}"),
            {k: figures[k] for k in ("oldest_error", "mean_error", "newest_error", "max_error",
                                     "stored_mean", "true_mean")}))
    if len(unmatched):
        findings.append(Finding("unmatched_stamps", (
            f"{len(unmatched)} of {len(stamps)} slots have a stamp with no ground truth: {fmt_list(unmatched)}"),
            {"n_unmatched": int(len(unmatched)), "stamps_ns": capped(unmatched)}))
    summary = (f"oldest {figures['oldest_error']:.3g}, mean {figures['mean_error']:.3g}, newest "
               f"{figures['newest_error']:.3g}, max {figures['max_error']:.3g} over {len(slots)} slots; "
               f"stored mean {figures['stored_mean']:.3f} vs true {figures['true_mean']:.3f}")
    return CheckResult(name, summary, figures, tuple(findings))


def check_aliasing(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, *,
                   atol: float = 1e-9, control_dt_ns: int | None = None, name: str = "aliasing") -> CheckResult:
    """Slots that hold the newest slot's value while their own truth differs from it."""
    stamps, stored, truth, idx = matched_values(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns)
    slots = np.flatnonzero(idx >= 0)
    if len(slots) < 2:
        return CheckResult(name, "needs at least 2 slots with ground truth", {"n_slots": int(len(stamps))},
                           no_data=True)
    s, t = stored[slots], truth[idx[slots]]
    holds_newest = np.all(np.abs(s[:-1] - s[-1]) <= atol, axis=1)
    truth_differs = np.any(np.abs(t[:-1] - t[-1]) > atol, axis=1)
    aliased = slots[:-1][holds_newest & truth_differs]
    n_older = len(slots) - 1
    oldest_error = float(np.abs(s[0] - t[0]).max())
    figures = {"n_slots": int(len(slots)), "n_holding_newest": int(len(aliased)),
               "aliased_slots": capped(aliased), "oldest_error": oldest_error}
    findings = []
    if len(aliased) == n_older:
        findings.append(Finding("every_slot_newest", (
            f"every slot holds the newest value: stored references, not copies (oldest-slot error "
            f"{oldest_error:.3f} over {len(slots)} slots)"), dict(figures)))
    elif len(aliased):
        findings.append(Finding("slots_hold_newest", (
            f"{len(aliased)} of {len(slots)} slots hold the newest value while their truth differs: "
            f"references kept for some slots (slots {aliased[:5].tolist()}; oldest-slot error {oldest_error:.3f})"),
            dict(figures)))
    summary = f"{len(aliased)} of {n_older} older slots hold the newest value"
    return CheckResult(name, summary, figures, tuple(findings))


def check_stale_payload(stamps_ns: Any, payloads: Any, true_stamps_ns: Any, true_payloads: Any, *,
                        atol: float = 1e-12, control_dt_ns: int | None = None,
                        name: str = "stale_payload") -> CheckResult:
    """A payload equal to the previous slot's under a new stamp, while the truth moved.

    Payloads are rows (stack position/velocity/effort as you like); a robot at rest
    legitimately repeats itself, hence the comparison with the truth.
    """
    stamps, stored, truth, idx = matched_values(stamps_ns, payloads, true_stamps_ns, true_payloads, control_dt_ns,
                                          what="payloads")
    pairs = np.flatnonzero((stamps[1:] != stamps[:-1]) & (idx[1:] >= 0) & (idx[:-1] >= 0)) + 1
    if len(pairs) == 0:
        return CheckResult(name, "no consecutive slot pair with ground truth", {"n_pairs": 0}, no_data=True)
    same = np.all(np.abs(stored[pairs] - stored[pairs - 1]) <= atol, axis=1)
    moved = np.any(np.abs(truth[idx[pairs]] - truth[idx[pairs - 1]]) > atol, axis=1)
    stale = pairs[same & moved]
    figures = {"n_pairs": int(len(pairs)), "n_stale": int(len(stale)), "stale_slots": capped(stale),
               "stale_stamps_ns": capped(stamps[stale]), "n_repeated_at_rest": int((same & ~moved).sum())}
    findings = []
    if len(stale):
        findings.append(Finding("stale_payload", (
            f"{len(stale)} slots repeat the previous slot's payload under a new stamp while the truth moved: "
            f"{fmt_list(stamps[stale])}"), {k: figures[k] for k in ("n_stale", "stale_slots", "stale_stamps_ns")}))
    summary = f"{len(stale)} stale payloads in {len(pairs)} consecutive pairs"
    return CheckResult(name, summary, figures, tuple(findings))
