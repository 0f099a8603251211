"""Checks on recorded observation streams and on users' own buffers (numpy only, no ROS).

Every check returns a :class:`CheckResult`: a one-line summary, a dict of figures (plain
Python numbers, JSON-ready) and a tuple of :class:`Finding` -- one per fault found, each
with a sentence that carries its figures. A clean input gives zero findings.

Why these checks: a buffer that keeps references instead of copies looks right at its
newest slot and wrong everywhere else, so the oldest slot is compared to ground truth
first (FIELD_NOTES section 3); and anything per tick must use the control dt, not the
physics dt, so a velocity off by the decimation is named as such (section 4).

Stamps are integer nanoseconds on the tick grid ``n * control_dt_ns``. Slots and rows are
in stored order, oldest first.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.lib.array_utils import byte_bounds

DIGEST_SIZE = 16
LIST_LIMIT = 20  # stamps/slots listed in one figure; counts are always complete

# Codes for classify_stamps: how each message relates to what came before it.
NEW, DUPLICATE, REORDERED, RESTART = 0, 1, 2, 3

BYTES_PER_PIXEL = {
    "rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "mono16": 2,
    "8UC1": 1, "8UC3": 3, "8UC4": 4, "16UC1": 2, "32FC1": 4,
}


@dataclass(frozen=True)
class Finding:
    code: str  # stable machine name, e.g. "dropped_ticks"
    message: str  # one readable sentence with the figures in it
    figures: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    name: str
    summary: str
    figures: Mapping[str, Any]
    findings: tuple[Finding, ...] = ()
    no_data: bool = False  # the check could not run: never counts as a pass

    @property
    def status(self) -> str:
        if self.no_data:
            return "no_data"
        return "fail" if self.findings else "pass"

    @property
    def ok(self) -> bool:
        return self.status == "pass"


@dataclass(frozen=True)
class ImageMeta:
    """What the image checks need from a sensor_msgs/Image, without its pixels."""
    stamp_ns: int
    width: int
    height: int
    step: int
    encoding: str
    data_len: int
    camera: str = ""
    digest: bytes | None = None


# ----------------------------------------------------------------------------- helpers

def digest(values: Any) -> bytes:
    """blake2b of the raw bytes; the same content gives the same digest in Ring and here."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    return hashlib.blake2b(np.ascontiguousarray(arr), digest_size=DIGEST_SIZE).digest()


def fmt_s(stamp_ns: int) -> str:
    """Seconds, with as many decimals as the stamp needs (ms grid -> 3)."""
    stamp_ns = int(stamp_ns)
    decimals = 3 if stamp_ns % 1_000_000 == 0 else 9
    return f"{stamp_ns / 1e9:.{decimals}f} s"


def _fmt_list(stamps_ns: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(fmt_s(s) for s in list(stamps_ns)[:limit])
    return shown + (f", ... ({len(stamps_ns)} in all)" if len(stamps_ns) > limit else "")


def _stamps(stamps_ns: Any, name: str = "stamps_ns") -> np.ndarray:
    arr = np.asarray(stamps_ns)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "f":
        # float64 is exact only to 2**53 ns; accept integral floats, refuse fractional ones.
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be integer nanoseconds")
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integer nanoseconds, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _rows(values: Any, n_rows: int, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows, got shape {arr.shape}")
    return arr


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def _capped(values: Any, limit: int = LIST_LIMIT) -> list[int]:
    return _ints(list(values)[:limit])


# ----------------------------------------------------------------------------- tick grid

def classify_stamps(stamps_ns: Any, control_dt_ns: int, *,
                    reorder_window_ticks: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Kind of each message (NEW, DUPLICATE, REORDERED, RESTART) and its run (segment) id.

    Sim time never goes backwards within one sim process, so a step back is a late
    message, a repeat, or a restarted sim. A restart is told apart by distance (more than
    ``reorder_window_ticks`` back) or by the stream carrying on from the earlier stamp
    (the next two stamps continue it tick by tick below the previous maximum); a message
    followed straight away by one beyond the previous maximum was only late.
    """
    stamps = _stamps(stamps_ns)
    dt = int(control_dt_ns)
    if dt <= 0:
        raise ValueError(f"control_dt_ns must be positive, got {control_dt_ns}")
    window_ns = reorder_window_ticks * dt
    kinds = np.zeros(len(stamps), dtype=np.int8)
    segments = np.zeros(len(stamps), dtype=np.int64)
    seen: set[int] = set()
    top: int | None = None
    seg = 0
    s_list = stamps.tolist()
    for i, s in enumerate(s_list):
        if top is None or s > top:
            kind = NEW
        else:
            ahead = s_list[i + 1:i + 3]
            carries_on = s < top and len(ahead) == 2 and all(
                a == s + (k + 1) * dt and a <= top for k, a in enumerate(ahead))
            returns = bool(ahead) and ahead[0] > top  # back to the frontier: a late message
            if carries_on or (top - s > window_ns and not returns):
                kind = RESTART
            elif s in seen:
                kind = DUPLICATE
            else:
                kind = REORDERED
        if kind == RESTART:
            seg += 1
            seen = set()
            top = None
        kinds[i] = kind
        segments[i] = seg
        seen.add(s)
        top = s if top is None else max(top, s)
    return kinds, segments


def check_tick_grid(stamps_ns: Any, control_dt_ns: int, *, reorder_window_ticks: int = 50,
                    name: str = "tick_grid") -> CheckResult:
    """Account for every tick between the first and last stamp of each run of the sim."""
    stamps = _stamps(stamps_ns)
    dt = int(control_dt_ns)
    if len(stamps) == 0:
        return CheckResult(name, "no stamps received", {"n_received": 0}, no_data=True)
    kinds, segments = classify_stamps(stamps, dt, reorder_window_ticks=reorder_window_ticks)

    off_grid = stamps[stamps % dt != 0]
    n_expected = 0
    dropped: list[int] = []
    periods: list[np.ndarray] = []
    n_unique = 0
    for seg in np.unique(segments):
        s = stamps[segments == seg]
        ticks = np.unique(np.round(s / dt).astype(np.int64))
        n_unique += len(ticks)
        n_expected += int(ticks[-1] - ticks[0] + 1)
        missing = np.setdiff1d(np.arange(ticks[0], ticks[-1] + 1), ticks, assume_unique=True)
        dropped.extend(int(t) * dt for t in missing)
        in_order = s[kinds[segments == seg] == NEW]
        periods.append(np.diff(in_order))
    all_periods = np.concatenate(periods) if periods else np.array([], np.int64)
    period_ns = int(np.median(all_periods)) if len(all_periods) else None
    dups = stamps[kinds == DUPLICATE]
    reord = stamps[kinds == REORDERED]
    jump_idx = np.flatnonzero(kinds == RESTART)
    jumps = [{"index": int(i), "from_stamp_ns": int(stamps[i - 1]), "to_stamp_ns": int(stamps[i])}
             for i in jump_idx]

    figures: dict[str, Any] = {
        "control_dt_ns": dt,
        "n_received": int(len(stamps)),
        "n_unique": n_unique,
        "n_expected": n_expected,
        "first_stamp_ns": int(stamps[0]),
        "last_stamp_ns": int(stamps[-1]),
        "n_dropped": len(dropped),
        "dropped_stamps_ns": _capped(dropped),
        "n_duplicated": int(len(dups)),
        "duplicated_stamps_ns": _capped(dups),
        "n_reordered": int(len(reord)),
        "reordered_stamps_ns": _capped(reord),
        "n_time_jumps_back": len(jumps),
        "time_jumps": jumps[:LIST_LIMIT],
        "n_runs": int(segments[-1] + 1),
        "monotonic": bool(np.all(np.diff(stamps) > 0)),
        "period_ns": period_ns,
        "period_equals_control_dt": period_ns == dt,
        "n_off_grid": int(len(off_grid)),
        "off_grid_stamps_ns": _capped(off_grid),
    }
    findings: list[Finding] = []
    if dropped:
        findings.append(Finding("dropped_ticks", (
            f"dropped {len(dropped)} of {n_expected} expected ticks: {_fmt_list(dropped)}"),
            {"n_dropped": len(dropped), "stamps_ns": _capped(dropped)}))
    if len(dups):
        findings.append(Finding("duplicated_ticks", (
            f"{len(dups)} ticks received more than once: {_fmt_list(dups)}"),
            {"n_duplicated": int(len(dups)), "stamps_ns": _capped(dups)}))
    if len(reord):
        after = [int(stamps[:i][segments[:i] == segments[i]].max()) for i in np.flatnonzero(kinds == REORDERED)]
        findings.append(Finding("reordered_ticks", (
            f"{len(reord)} ticks arrived out of order: {fmt_s(reord[0])} arrived after "
            f"{fmt_s(after[0])}" + (f" (and {len(reord) - 1} more)" if len(reord) > 1 else "")),
            {"n_reordered": int(len(reord)), "stamps_ns": _capped(reord)}))
    for j in jumps:
        findings.append(Finding("time_jump_backwards", (
            f"sim time jumped backwards at message {j['index']}: {fmt_s(j['from_stamp_ns'])} -> "
            f"{fmt_s(j['to_stamp_ns'])} (sim restarted mid-run?); ticks are accounted per run"),
            dict(j)))
    if len(off_grid):
        findings.append(Finding("off_grid_stamps", (
            f"{len(off_grid)} stamps are not multiples of control dt {dt / 1e6:g} ms: "
            f"{_fmt_list(off_grid)}"), {"n_off_grid": int(len(off_grid)), "stamps_ns": _capped(off_grid)}))
    if period_ns is not None and period_ns != dt:
        ratio = period_ns / dt
        findings.append(Finding("period_mismatch", (
            f"median period {period_ns / 1e6:g} ms = {ratio:.2f} x control dt {dt / 1e6:g} ms"),
            {"period_ns": period_ns, "control_dt_ns": dt, "ratio": ratio}))

    period_txt = "period n/a" if period_ns is None else (
        f"period {period_ns / 1e6:g} ms" + (" = control dt" if period_ns == dt else f" != control dt {dt / 1e6:g} ms"))
    summary = (f"received {n_unique} of {n_expected} expected ticks ({fmt_s(stamps.min())}..{fmt_s(stamps.max())}"
               f"{', ' + str(figures['n_runs']) + ' runs' if figures['n_runs'] > 1 else ''}); dropped {len(dropped)}, "
               f"duplicated {len(dups)}, reordered {len(reord)}, jumps back {len(jumps)}, off-grid {len(off_grid)}; "
               f"{period_txt}; {'monotonic' if figures['monotonic'] else 'not monotonic'}")
    return CheckResult(name, summary, figures, tuple(findings))


# ----------------------------------------------------------------------------- matching

def match_by_stamp(stamps_ns: Any, true_stamps_ns: Any, *, control_dt_ns: int | None = None) -> np.ndarray:
    """Index of the ground-truth row with the same stamp for each slot; -1 where none.

    With ``control_dt_ns`` both streams are split into runs at a sim restart and matched
    run by run, since a restarted sim reuses the stamps of the first run.
    """
    stamps = _stamps(stamps_ns)
    true_stamps = _stamps(true_stamps_ns, "true_stamps_ns")
    if control_dt_ns is None:
        seg = np.zeros(len(stamps), np.int64)
        true_seg = np.zeros(len(true_stamps), np.int64)
    else:
        seg = classify_stamps(stamps, control_dt_ns)[1]
        true_seg = classify_stamps(true_stamps, control_dt_ns)[1]
    index: dict[tuple[int, int], int] = {}
    for i, key in enumerate(zip(true_seg.tolist(), true_stamps.tolist())):
        index.setdefault(key, i)
    return np.array([index.get(key, -1) for key in zip(seg.tolist(), stamps.tolist())], dtype=np.int64)


def _matched(stamps, values, true_stamps, true_values, control_dt_ns, what="positions"):
    stamps = _stamps(stamps)
    values = _rows(values, len(stamps), what)
    true_stamps = _stamps(true_stamps, "true_stamps_ns")
    true_values = _rows(true_values, len(true_stamps), f"true_{what}")
    if values.shape[1] != true_values.shape[1]:
        raise ValueError(f"{what} have {values.shape[1]} columns, truth has {true_values.shape[1]}")
    idx = match_by_stamp(stamps, true_stamps, control_dt_ns=control_dt_ns)
    return stamps, values, true_values, idx


# ----------------------------------------------------------------------------- slot error

def check_slot_error(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, *,
                     atol: float = 1e-9, control_dt_ns: int | None = None,
                     name: str = "slot_error") -> CheckResult:
    """Stored positions against ground truth matched by stamp, the oldest slot above all.

    A buffer of references holds the newest value everywhere: its newest slot is exact
    and its oldest is off by the whole motion since, so the oldest slot tells.
    """
    stamps, stored, truth, idx = _matched(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns)
    ok = idx >= 0
    unmatched = stamps[~ok]
    base = {"n_slots": int(len(stamps)), "n_matched": int(ok.sum()), "n_unmatched": int(len(unmatched)),
            "unmatched_stamps_ns": _capped(unmatched), "atol": atol}
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
            f"{len(unmatched)} of {len(stamps)} slots have a stamp with no ground truth: {_fmt_list(unmatched)}"),
            {"n_unmatched": int(len(unmatched)), "stamps_ns": _capped(unmatched)}))
    summary = (f"oldest {figures['oldest_error']:.3g}, mean {figures['mean_error']:.3g}, newest "
               f"{figures['newest_error']:.3g}, max {figures['max_error']:.3g} over {len(slots)} slots; "
               f"stored mean {figures['stored_mean']:.3f} vs true {figures['true_mean']:.3f}")
    return CheckResult(name, summary, figures, tuple(findings))


def check_aliasing(stamps_ns: Any, positions: Any, true_stamps_ns: Any, true_positions: Any, *,
                   atol: float = 1e-9, control_dt_ns: int | None = None, name: str = "aliasing") -> CheckResult:
    """Slots that hold the newest slot's value while their own truth differs from it."""
    stamps, stored, truth, idx = _matched(stamps_ns, positions, true_stamps_ns, true_positions, control_dt_ns)
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
               "aliased_slots": _capped(aliased), "oldest_error": oldest_error}
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
    stamps, stored, truth, idx = _matched(stamps_ns, payloads, true_stamps_ns, true_payloads, control_dt_ns,
                                          what="payloads")
    pairs = np.flatnonzero((stamps[1:] != stamps[:-1]) & (idx[1:] >= 0) & (idx[:-1] >= 0)) + 1
    if len(pairs) == 0:
        return CheckResult(name, "no consecutive slot pair with ground truth", {"n_pairs": 0}, no_data=True)
    same = np.all(np.abs(stored[pairs] - stored[pairs - 1]) <= atol, axis=1)
    moved = np.any(np.abs(truth[idx[pairs]] - truth[idx[pairs - 1]]) > atol, axis=1)
    stale = pairs[same & moved]
    figures = {"n_pairs": int(len(pairs)), "n_stale": int(len(stale)), "stale_slots": _capped(stale),
               "stale_stamps_ns": _capped(stamps[stale]), "n_repeated_at_rest": int((same & ~moved).sum())}
    findings = []
    if len(stale):
        findings.append(Finding("stale_payload", (
            f"{len(stale)} slots repeat the previous slot's payload under a new stamp while the truth moved: "
            f"{_fmt_list(stamps[stale])}"), {k: figures[k] for k in ("n_stale", "stale_slots", "stale_stamps_ns")}))
    summary = f"{len(stale)} stale payloads in {len(pairs)} consecutive pairs"
    return CheckResult(name, summary, figures, tuple(findings))


# ----------------------------------------------------------------------------- velocity

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


# ----------------------------------------------------------------------------- buffer audit

def _buffer_of(obj: Any) -> np.ndarray | None:
    """The memory an object exposes, without copying; None for objects with no buffer."""
    if isinstance(obj, np.ndarray):
        return obj
    try:
        memoryview(obj)
    except TypeError:
        return None
    return np.asarray(obj) if not isinstance(obj, (bytes, bytearray, memoryview)) else np.frombuffer(obj, np.uint8)


def audit_buffers(slots: Sequence[Any], *, digests: Sequence[bytes | None] | None = None,
                  received: Sequence[Any] = (), name: str = "buffer_audit") -> CheckResult:
    """Every slot its own memory, none shared with received messages, none changed since store.

    Counting objects misses views (``obs[:]`` is a new object over the same memory), so
    memory is compared with ``np.shares_memory``; candidates are found by byte bounds
    first so a long buffer costs O(n log n), not n**2.
    """
    n = len(slots)
    if n == 0:
        return CheckResult(name, "no slots to audit", {"n_slots": 0}, no_data=True)
    by_id: dict[int, list[int]] = {}
    for i, obj in enumerate(slots):
        by_id.setdefault(id(obj), []).append(i)
    same_object = [g for g in by_id.values() if len(g) > 1]

    # (lo, hi, is_received, index, array) for everything that has memory
    spans = []
    for kind, objs in ((0, slots), (1, received)):
        for i, obj in enumerate(objs):
            arr = _buffer_of(obj)
            if arr is not None and arr.nbytes > 0:
                lo, hi = byte_bounds(arr)
                spans.append((lo, hi, kind, i, arr))
    spans.sort(key=lambda s: s[0])
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    received_pairs: list[tuple[int, int]] = []
    cluster: list = []
    cluster_hi = -1

    def settle(members: list) -> None:
        # Same pointer/shape/strides means same memory; only distinct layouts need shares_memory.
        layouts: dict[tuple, list] = {}
        for m in members:
            a = m[4]
            layouts.setdefault((a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str), []).append(m)
        groups = sorted(layouts.values(), key=lambda g: g[0][0])
        linked = [(g, g) for g in groups]
        for gi, g in enumerate(groups):
            for h in groups[gi + 1:]:
                if h[0][0] >= g[0][1]:  # sorted by start: nothing further overlaps g
                    break
                if np.shares_memory(g[0][4], h[0][4]):
                    linked.append((g, h))
        for g, h in linked:
            g_slots = [m[3] for m in g if m[2] == 0]
            h_slots = [m[3] for m in h if m[2] == 0] if h is not g else []
            all_slots = g_slots + h_slots
            for s in all_slots[1:]:
                parent[root(s)] = root(all_slots[0])
            # One example pair per slot keeps this linear when thousands of slots alias one array.
            for slots_, other in ((g_slots, h), (h_slots, g)):
                rec = next((m[3] for m in other if m[2] == 1), None)
                if rec is not None:
                    received_pairs.extend((s, rec) for s in slots_)

    for span in spans:
        if cluster and span[0] >= cluster_hi:
            if len(cluster) > 1:
                settle(cluster)
            cluster, cluster_hi = [], -1
        cluster.append(span)
        cluster_hi = max(cluster_hi, span[1])
    if len(cluster) > 1:
        settle(cluster)

    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    sharing = [g for g in groups.values() if len(g) > 1]
    identical = {frozenset(g) for g in same_object}
    view_groups = [g for g in sharing if frozenset(g) not in identical]
    received_pairs = sorted(set(received_pairs))
    slots_sharing_received = sorted({s for s, _ in received_pairs})

    mismatched: list[int] = []
    n_verified = 0
    if digests is not None:
        if len(digests) != n:
            raise ValueError(f"{len(digests)} digests for {n} slots")
        for i, (obj, d) in enumerate(zip(slots, digests)):
            if d is not None:
                n_verified += 1
                if digest(obj) != d:
                    mismatched.append(i)

    figures = {
        "n_slots": n, "n_objects": len(by_id),
        "n_same_object_slots": sum(len(g) for g in same_object),
        "n_sharing_slots": sum(len(g) for g in sharing),
        "sharing_groups": [_capped(g) for g in sharing[:LIST_LIMIT]],
        "n_slots_sharing_received": len(slots_sharing_received),
        "received_pairs": [list(p) for p in received_pairs[:LIST_LIMIT]],
        "n_verified": n_verified, "n_digest_mismatch": len(mismatched), "mismatch_slots": _capped(mismatched),
    }
    findings = []
    for g in same_object[:LIST_LIMIT]:
        findings.append(Finding("same_object", (
            f"{len(g)} slots are one and the same object (slots {_short(g)}): the buffer stores references, "
            f"not copies"), {"slots": _capped(g)}))
    for g in view_groups[:LIST_LIMIT]:
        findings.append(Finding("shared_memory", (
            f"{len(g)} slots share memory though they are {len({id(slots[i]) for i in g})} distinct objects "
            f"(slots {_short(g)}): views such as obs[:] or np.asarray(obs) -- copy on store"),
            {"slots": _capped(g)}))
    if received_pairs:
        findings.append(Finding("shares_received", (
            f"{len(slots_sharing_received)} slots share memory with received message arrays (slots "
            f"{_short(slots_sharing_received)}): the buffer keeps the sender's arrays, not copies"),
            {"n_slots": len(slots_sharing_received), "pairs": [list(p) for p in received_pairs[:LIST_LIMIT]]}))
    if mismatched:
        findings.append(Finding("digest_mismatch", (
            f"{len(mismatched)} of {n_verified} slots changed after store (content no longer matches the "
            f"digest taken at store time): slots {_short(mismatched)}"),
            {"n_mismatch": len(mismatched), "slots": _capped(mismatched)}))
    verified = (f"{len(mismatched)} of {n_verified} changed since store" if n_verified
                else "no store-time digests to verify")
    summary = (f"{n} slots in {len(by_id)} objects; {figures['n_sharing_slots']} share memory with another slot, "
               f"{len(slots_sharing_received)} with received arrays; {verified}")
    return CheckResult(name, summary, figures, tuple(findings))


def _short(indices: Sequence[int]) -> str:
    idx = list(indices)
    if len(idx) > 2 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{idx[0]}..{idx[-1]}"
    return ", ".join(map(str, idx[:8])) + (", ..." if len(idx) > 8 else "")


# ----------------------------------------------------------------------------- images

def check_images(images: Sequence[ImageMeta], control_dt_ns: int, *, joint_stamps_ns: Any = None,
                 expected_sizes: Mapping[str, tuple[int, int]] | None = None,
                 periods_ns: Mapping[str, int] | None = None, name: str = "images") -> CheckResult:
    """Size, step and data length agree; stamps on the tick grid and on a received joint tick.

    ``expected_sizes`` maps camera -> (width, height) and ``periods_ns`` camera -> period,
    both as the spec gives them; cameras missing from a mapping skip that part.
    """
    dt = int(control_dt_ns)
    if not images:
        return CheckResult(name, "no images", {"n_images": 0}, no_data=True)
    joint_ticks = None if joint_stamps_ns is None else set(_stamps(joint_stamps_ns, "joint_stamps_ns").tolist())
    bad: dict[str, list[tuple[int, str]]] = {k: [] for k in
                                             ("image_step", "image_data_len", "image_size", "image_encoding",
                                              "image_off_grid", "image_unmatched_tick")}
    per_camera: dict[str, list[int]] = {}
    for im in images:
        cam = im.camera or "?"
        per_camera.setdefault(cam, []).append(int(im.stamp_ns))
        bpp = BYTES_PER_PIXEL.get(im.encoding)
        if bpp is None:
            bad["image_encoding"].append((im.stamp_ns, f"{cam}: unknown encoding {im.encoding!r}"))
        elif im.step != im.width * bpp:
            bad["image_step"].append((im.stamp_ns, f"{cam}: step {im.step} != width*{bpp} = {im.width * bpp} "
                                                   f"({im.encoding})"))
        if im.data_len != im.step * im.height:
            bad["image_data_len"].append((im.stamp_ns, f"{cam}: len(data) {im.data_len} != step*height = "
                                                       f"{im.step * im.height}"))
        want = (expected_sizes or {}).get(im.camera)
        if im.width <= 0 or im.height <= 0 or (want is not None and (im.width, im.height) != tuple(want)):
            bad["image_size"].append((im.stamp_ns, f"{cam}: {im.width}x{im.height}"
                                                   + (f" != {want[0]}x{want[1]}" if want else "")))
        if im.stamp_ns % dt:
            bad["image_off_grid"].append((im.stamp_ns, f"{cam}: stamp {fmt_s(im.stamp_ns)} is off the tick grid "
                                                       f"(control dt {dt / 1e6:g} ms)"))
        elif joint_ticks is not None and im.stamp_ns not in joint_ticks:
            bad["image_unmatched_tick"].append((im.stamp_ns, f"{cam}: stamp {fmt_s(im.stamp_ns)} matches no "
                                                             f"received joint_states tick"))
    findings = []
    for code, items in bad.items():
        if items:
            findings.append(Finding(code, f"{len(items)} of {len(images)} images: {items[0][1]}"
                                    + (f" (and {len(items) - 1} more)" if len(items) > 1 else ""),
                                    {"n_images": len(items), "stamps_ns": _capped(s for s, _ in items)}))
    periods = {}
    for cam, stamps in per_camera.items():
        diffs = np.diff(np.sort(np.array(stamps, np.int64)))
        periods[cam] = int(np.median(diffs)) if len(diffs) else None
        want = (periods_ns or {}).get(cam)
        if want is not None and periods[cam] is not None and periods[cam] != int(want):
            findings.append(Finding("image_period", (
                f"{cam}: median image period {periods[cam] / 1e6:g} ms != {int(want) / 1e6:g} ms from the spec"),
                {"camera": cam, "period_ns": periods[cam], "expected_period_ns": int(want)}))
    figures = {"n_images": len(images), "per_camera": {c: len(s) for c, s in per_camera.items()},
               "period_ns": periods, **{f"n_{k}": len(v) for k, v in bad.items()}}
    summary = (f"{len(images)} images from {len(per_camera)} cameras; bad step {len(bad['image_step'])}, "
               f"bad length {len(bad['image_data_len'])}, off-grid {len(bad['image_off_grid'])}, no joint tick "
               f"{len(bad['image_unmatched_tick'])}")
    return CheckResult(name, summary, figures, tuple(findings))


# ----------------------------------------------------------------------------- bundles

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

