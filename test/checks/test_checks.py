"""Positive controls for robogym_ros.checks and robogym_ros.verdict.

Each check must fail on its own fault and pass without it; a clean run has zero findings.
"""
import json

import numpy as np
import pytest

from robogym_ros import checks
from robogym_ros.checks import (
    ImageMeta,
    audit_buffers,
    audit_observations,
    audit_stream,
    check_aliasing,
    check_fd_velocity,
    check_images,
    check_reported_velocity,
    check_slot_error,
    check_stale_payload,
    check_tick_grid,
    classify_stamps,
    digest,
)
from robogym_ros.recorder.verdict import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, Verdict

DT_NS = 10_000_000  # 100 Hz control
DECIMATION = 5  # physics dt 2 ms
N_JOINTS = 12


def sines(n_ticks=400, dt_ns=DT_NS, first_tick=1, freq_hz=None):
    """Smooth motion: one sine per joint, 0.2..1.5 Hz, positions and exact velocities."""
    ticks = np.arange(first_tick, first_tick + n_ticks)
    stamps = ticks * dt_ns
    t = stamps[:, None] * 1e-9
    f = np.linspace(0.2, 1.5, N_JOINTS) if freq_hz is None else np.full(N_JOINTS, freq_hz)
    w = 2 * np.pi * f
    phase = np.linspace(0, 2, N_JOINTS)
    amp = np.linspace(0.3, 0.9, N_JOINTS)
    return stamps, amp * np.sin(w * t + phase), amp * w * np.cos(w * t + phase)


def codes(result):
    return [f.code for f in result.findings]


def one(result, code):
    hits = [f for f in result.findings if f.code == code]
    assert len(hits) == 1, (code, result.findings)
    return hits[0]


# ----------------------------------------------------------------------------- the aliasing example

class Env:
    """An environment that mutates one array and hands it out: a buffer of references."""

    def __init__(self):
        self._q = np.zeros(1)

    def step(self):
        self._q += 0.25
        return self._q


def field_notes_buffer(n_steps=4):
    env = Env()
    dt_ns = 125_000_000  # 0.125 s
    stamps, buffer, truth = [], [], []
    for n in range(1, n_steps + 1):
        obs = env.step()
        stamps.append(n * dt_ns)
        buffer.append(obs)  # the bug: a reference, not a copy
        truth.append(obs.copy())
    true_v = np.full((n_steps, 1), 2.0)  # 0.25 rad per 0.125 s
    return env, dt_ns, np.array(stamps), buffer, np.array(truth), true_v


def test_field_notes_example_figures():
    env, dt_ns, stamps, buffer, truth, true_v = field_notes_buffer()
    assert truth[:, 0].tolist() == [0.25, 0.5, 0.75, 1.0]
    results = {r.name: r for r in audit_observations(stamps, buffer, stamps, truth, control_dt_ns=dt_ns,
                                                     received=[env._q])}
    slot = results["slot_error"].figures
    assert slot["stored_mean"] == 1.0
    assert slot["true_mean"] == 0.625
    assert slot["oldest_error"] == 0.75
    assert slot["newest_error"] == 0.0
    assert slot["max_error"] == 0.75
    assert slot["mean_error"] == 0.375
    assert [r["stored"] for r in slot["slot_table"]] == [1.0] * 4
    assert "a test of the newest slot alone would pass" in one(results["slot_error"], "slot_error").message

    alias = one(results["aliasing"], "every_slot_newest")
    assert "every slot holds the newest value: stored references, not copies" in alias.message
    assert "0.750" in alias.message

    vel = results["velocity_fd"]
    assert vel.figures["estimate_mean"] == 0.0
    assert vel.figures["truth_mean"] == 2.0  # the truth's own FD: 0.25 rad per 0.125 s
    assert codes(vel) == ["fd_velocity_zero"]

    audit = results["buffer_audit"]
    assert {"same_object", "shares_received"} <= set(codes(audit))
    assert audit.figures["n_objects"] == 1
    assert Verdict(results.values()).exit_code == EXIT_FAIL


@pytest.mark.parametrize("n_slots", [2, 3, 4, 8, 50])
def test_oldest_error_is_quarter_times_n_minus_1(n_slots):
    _, dt_ns, stamps, buffer, truth, _ = field_notes_buffer(n_slots)
    positions = np.array([np.asarray(o) for o in buffer])
    r = check_slot_error(stamps, positions, stamps, truth)
    assert r.figures["oldest_error"] == pytest.approx(0.25 * (n_slots - 1))
    assert r.figures["newest_error"] == 0.0


def test_field_notes_buffer_of_copies_is_clean():
    env = Env()
    stamps, buffer, truth = [], [], []
    for n in range(1, 5):
        obs = env.step()
        stamps.append(n * 125_000_000)
        buffer.append(obs.copy())
        truth.append(obs.copy())
    digests = [digest(o) for o in buffer]
    results = audit_observations(np.array(stamps), buffer, np.array(stamps), np.array(truth),
                                 control_dt_ns=125_000_000,
                                 digests=digests, received=[env._q])
    assert [f for r in results for f in r.findings] == []
    assert Verdict(results).exit_code == EXIT_PASS


# ----------------------------------------------------------------------------- clean run

def test_clean_stream_has_zero_findings():
    stamps, q, v = sines()
    results = audit_stream(stamps, q, stamps, q, DT_NS, velocities=v, true_velocities=v, decimation=DECIMATION)
    assert [(r.name, f.message) for r in results for f in r.findings] == []
    assert all(r.status == "pass" for r in results)
    grid = results[0].figures
    assert (grid["n_expected"], grid["n_unique"], grid["n_dropped"]) == (400, 400, 0)
    assert grid["period_equals_control_dt"] and grid["monotonic"]
    assert Verdict(results).exit_code == EXIT_PASS


def test_fd_like_with_like_has_no_error_on_fast_smooth_motion():
    # 10 Hz at 100 Hz control: the one-tick FD and the true velocity differ by ~3 %; the FD of
    # the truth over the same ticks does not differ at all, so the tolerance can be tight.
    stamps, q, v = sines(freq_hz=10.0)
    r = check_fd_velocity(stamps, q, stamps, q, DT_NS, decimation=DECIMATION)
    assert r.ok, r.findings
    assert r.figures["max_rel_error"] == 0.0 and r.figures["rtol"] <= 0.02
    assert "finite difference" in r.figures["reference"]


# ----------------------------------------------------------------------------- buffers

def test_views_are_caught_by_shared_memory():
    src = np.zeros(N_JOINTS)
    views = []
    for _ in range(5):
        src += 0.1
        views.append(src[:])  # a new object every time, same memory
    r = audit_buffers(views, received=[src])
    assert len({id(v) for v in views}) == 5
    assert "shared_memory" in codes(r) and "shares_received" in codes(r)
    assert r.figures["n_sharing_slots"] == 5
    assert "distinct objects" in one(r, "shared_memory").message

    asarray = [np.asarray(src) for _ in range(3)]  # np.asarray of an ndarray is the same object
    assert "same_object" in codes(audit_buffers(asarray))


def test_rows_of_one_array_and_copies_pass_the_audit():
    block = np.zeros((6, N_JOINTS))
    received = [np.ones(N_JOINTS) for _ in range(6)]
    assert audit_buffers(list(block), received=received).ok  # rows do not overlap
    assert audit_buffers([r.copy() for r in received], received=received).ok
    # interleaved strided views have overlapping bounds but no shared element
    assert audit_buffers([block[:, ::2], block[:, 1::2]]).ok


def test_digest_catches_a_slot_mutated_after_store():
    slots = [np.full(N_JOINTS, float(k)) for k in range(10)]
    digests = [digest(s) for s in slots]
    assert audit_buffers(slots, digests=digests).ok
    slots[3][5] += 1e-12
    r = audit_buffers(slots, digests=digests)
    f = one(r, "digest_mismatch")
    assert f.figures["slots"] == [3]
    assert r.figures["n_verified"] == 10


def test_plain_list_slots_referenced_twice_are_one_object():
    row = [0.0] * 3
    r = audit_buffers([row, row, [1.0, 2.0, 3.0]])
    assert one(r, "same_object").figures["slots"] == [0, 1]


# ----------------------------------------------------------------------------- tick grid

def test_dropped_tick():
    stamps, _, _ = sines(100)
    r = check_tick_grid(np.delete(stamps, 40), DT_NS)
    f = one(r, "dropped_ticks")
    assert f.figures["stamps_ns"] == [int(stamps[40])]
    assert (r.figures["n_expected"], r.figures["n_unique"]) == (100, 99)
    assert codes(r) == ["dropped_ticks"]


def test_duplicated_tick():
    stamps, _, _ = sines(100)
    r = check_tick_grid(np.insert(stamps, 41, stamps[40]), DT_NS)
    assert codes(r) == ["duplicated_ticks"]
    assert r.figures["duplicated_stamps_ns"] == [int(stamps[40])]
    assert not r.figures["monotonic"] and r.figures["n_dropped"] == 0


def test_reordered_tick():
    stamps, _, _ = sines(100)
    s = stamps.copy()
    s[40], s[41] = s[41], s[40]
    r = check_tick_grid(s, DT_NS)
    assert codes(r) == ["reordered_ticks"]
    assert r.figures["reordered_stamps_ns"] == [int(stamps[40])]
    assert "arrived after" in r.findings[0].message


def test_time_jump_backwards_is_reported_and_runs_are_accounted_apart():
    first, _, _ = sines(300)
    second = np.arange(0, 200) * DT_NS  # sim restarted: time from 0 again
    r = check_tick_grid(np.concatenate([first, second]), DT_NS)
    f = one(r, "time_jump_backwards")
    assert (f.figures["from_stamp_ns"], f.figures["to_stamp_ns"]) == (int(first[-1]), 0)
    assert "restarted" in f.message
    assert r.figures["n_runs"] == 2 and r.figures["n_dropped"] == 0 and r.figures["n_duplicated"] == 0
    # a short first run (within the reorder window) is still a restart, not 5 duplicates
    kinds, segments = classify_stamps(np.r_[np.arange(5), np.arange(10)] * DT_NS, DT_NS)
    assert kinds.tolist().count(checks.RESTART) == 1 and segments[-1] == 1


def test_off_grid_stamp_and_period_multiple():
    stamps, _, _ = sines(50)
    s = stamps.copy()
    s[10] += 1
    assert "off_grid_stamps" in codes(check_tick_grid(s, DT_NS))
    r = check_tick_grid(stamps[::2], DT_NS)
    assert {"period_mismatch", "dropped_ticks"} == set(codes(r))
    assert "2.00 x control dt" in one(r, "period_mismatch").message


def test_restart_is_matched_run_by_run():
    stamps, q, _ = sines(100, first_tick=0)
    s = np.concatenate([stamps, stamps[:50]])
    truth = np.concatenate([q, q[:50] + 1.0])  # second run differs at the same stamps
    ok = check_slot_error(s, truth, s, truth, control_dt_ns=DT_NS)
    assert ok.ok and ok.figures["n_matched"] == 150


# ----------------------------------------------------------------------------- stale, velocity

def test_stale_payload_repeated_under_new_stamp():
    stamps, q, _ = sines()
    stale = q.copy()
    stale[101] = stale[100]
    r = check_stale_payload(stamps, stale, stamps, q)
    f = one(r, "stale_payload")
    assert f.figures["stale_slots"] == [101]
    assert check_stale_payload(stamps, q, stamps, q).ok
    # a robot at rest repeats itself: not stale
    still = np.zeros_like(q)
    assert check_stale_payload(stamps, still, stamps, still).ok


def test_reported_velocity_off_by_decimation_names_it():
    stamps, q, v = sines()
    r = check_reported_velocity(stamps, v * DECIMATION, stamps, v, decimation=DECIMATION)
    f = one(r, "velocity_factor_decimation")
    assert "velocity off by 5.00x = decimation (5): physics dt used where control dt belongs" in f.message
    assert f.figures["factor"] == pytest.approx(5.0)
    assert check_reported_velocity(stamps, v, stamps, v, decimation=DECIMATION).ok


def test_user_fd_with_physics_dt_is_5x():
    stamps, q, v = sines()
    physics_dt_s = DT_NS * 1e-9 / DECIMATION
    user_v = np.diff(q, axis=0) / physics_dt_s  # the bug: physics dt where control dt belongs
    r = check_reported_velocity(stamps[1:], user_v, stamps, v, decimation=DECIMATION, control_dt_ns=DT_NS,
                                estimate="backward_difference", true_positions=q)
    assert "FD velocity off by 5.00x = decimation (5): physics dt used where control dt belongs" in \
        r.findings[0].message
    right = np.diff(q, axis=0) / (DT_NS * 1e-9)
    ok = check_reported_velocity(stamps[1:], right, stamps, v, control_dt_ns=DT_NS,
                                 estimate="backward_difference", true_positions=q)
    assert ok.ok and ok.figures["max_rel_error"] < 1e-9


def test_constant_factor_that_is_not_the_decimation():
    stamps, q, v = sines()
    r = check_reported_velocity(stamps, v * 3, stamps, v, decimation=DECIMATION)
    f = one(r, "velocity_factor")
    assert "velocity off by a constant factor 3.00x (not the decimation 5)" in f.message
    r = check_reported_velocity(stamps, v / DECIMATION, stamps, v, decimation=DECIMATION)
    assert "0.20x = 1/decimation" in one(r, "velocity_factor_decimation").message


def test_fd_velocity_of_positions_scaled_is_factor_and_frozen_is_zero():
    stamps, q, v = sines()
    r = check_fd_velocity(stamps, q * DECIMATION, stamps, q, DT_NS, decimation=DECIMATION)
    assert "FD velocity off by 5.00x = decimation" in r.findings[0].message
    assert codes(r) == ["fd_velocity_factor_decimation"]
    frozen = np.repeat(q[-1:], len(q), axis=0)
    r = check_fd_velocity(stamps, frozen, stamps, q, DT_NS)
    assert codes(r) == ["fd_velocity_zero"]


def test_velocity_of_one_still_joint_wrong():
    stamps, q, v = sines()
    q[:, 0] = 0.3
    v[:, 0] = 0.0
    bad = v.copy()
    bad[:, 0] = 0.5
    r = check_reported_velocity(stamps, bad, stamps, v)
    assert codes(r) == ["velocity_mismatch"]


# ----------------------------------------------------------------------------- aliasing partial

def test_some_slots_hold_newest():
    stamps, q, _ = sines(20)
    stored = q.copy()
    stored[[3, 7]] = stored[-1]
    r = check_aliasing(stamps, stored, stamps, q)
    assert one(r, "slots_hold_newest").figures["aliased_slots"] == [3, 7]
    assert check_aliasing(stamps, q, stamps, q).ok


# ----------------------------------------------------------------------------- images

def good_images(stamps):
    """Where the sim's camera clock (period 3 ticks) makes frames due: stamps on multiples of 30 ms."""
    return [ImageMeta(int(s), 640, 480, 640 * 3, "rgb8", 640 * 3 * 480, "overhead") for s in stamps
            if s % (3 * DT_NS) == 0]


def test_clean_images():
    stamps, _, _ = sines(60)
    r = check_images(good_images(stamps), DT_NS, joint_stamps_ns=stamps, expected_sizes={"overhead": (640, 480)},
                     periods_ns={"overhead": 3 * DT_NS})
    assert r.ok, r.findings
    assert r.figures["per_camera"] == {"overhead": 20}


@pytest.mark.parametrize("change, code", [
    (dict(step=640 * 3 + 4), "image_step"),
    (dict(data_len=640 * 3 * 480 - 1), "image_data_len"),
    (dict(stamp_ns=30 * DT_NS + 1), "image_off_grid"),
    (dict(stamp_ns=1000 * DT_NS), "image_unmatched_tick"),
    (dict(width=320), "image_step"),
    (dict(encoding="yuv422_yuy2"), "image_encoding"),
])
def test_bad_image(change, code):
    stamps, _, _ = sines(60)
    ims = good_images(stamps)
    fields = {**ims[4].__dict__, **change}
    ims[4] = ImageMeta(**fields)
    r = check_images(ims, DT_NS, joint_stamps_ns=stamps)
    assert code in codes(r), r.findings
    assert r.findings[0].figures["n_images"] == 1


def test_image_size_differs_from_spec():
    stamps, _, _ = sines(60)
    r = check_images(good_images(stamps), DT_NS, expected_sizes={"overhead": (320, 240)})
    assert "640x480 != 320x240" in one(r, "image_size").message


# ----------------------------------------------------------------------------- verdict

def test_verdict_exit_codes_table_and_json():
    _, dt_ns, stamps, buffer, truth, true_v = field_notes_buffer()
    results = audit_observations(stamps, buffer, stamps, truth, control_dt_ns=dt_ns)
    v = Verdict(results)
    assert v.exit_code == EXIT_FAIL and v.status == "fail"
    table = v.table()
    assert "FAIL (exit 1)" in table
    assert "oldest 0.75, mean 0.375, newest 0, max 0.75" in table
    assert "stored mean 1.000 vs true 0.625" in table
    assert "FD velocity 0.000 vs true 2.000 rad/s" in table
    # per slot, oldest first: true 0.25/0.5/0.75/1.0, stored 1.0 x4
    rows = [line.split() for line in table.splitlines() if line.strip().startswith(("0 ", "1 ", "2 ", "3 "))]
    assert [(r[3], r[4], r[5]) for r in rows] == [("0.250", "1.000", "0.750"), ("0.500", "1.000", "0.500"),
                                                 ("0.750", "1.000", "0.250"), ("1.000", "1.000", "0.000")]
    data = json.loads(v.to_json())
    assert data["exit_code"] == 1
    slot = next(c for c in data["checks"] if c["name"] == "slot_error")
    assert slot["figures"]["oldest_error"] == 0.75

    stamps, q, vv = sines()
    assert Verdict(audit_stream(stamps, q, stamps, q, DT_NS, true_velocities=vv)).exit_code == EXIT_PASS
    assert Verdict([]).exit_code == EXIT_USAGE
    assert Verdict([check_tick_grid([], DT_NS)]).exit_code == EXIT_USAGE
    usage = Verdict.from_usage_error("no such bag: /x")
    assert usage.exit_code == EXIT_USAGE and "no such bag" in usage.table()
    assert json.loads(usage.to_json())["status"] == "usage_error"


def test_verdict_json_has_no_nan():
    r = checks.CheckResult("x", "s", {"v": float("nan"), "a": np.arange(2), "d": b"\x01"})
    assert json.loads(Verdict([r]).to_json())["checks"][0]["figures"] == {"v": None, "a": [0, 1], "d": "01"}


def test_stamps_must_be_integer_ns():
    with pytest.raises(ValueError, match="integer nanoseconds"):
        check_tick_grid([0.0, 0.5], DT_NS)


def test_very_late_tick_is_reordered_not_a_restart():
    stamps, _, _ = sines(200)
    late = np.insert(np.delete(stamps, 50), 150, stamps[50])  # tick 50 arrives 100 ticks late
    r = check_tick_grid(late, DT_NS)
    assert codes(r) == ["reordered_ticks"] and r.figures["n_runs"] == 1
    # a big step back at the very end, with nothing after it, is a restart
    r = check_tick_grid(np.r_[stamps, 0], DT_NS)
    assert "time_jump_backwards" in codes(r)


def test_nan_positions_are_errors_not_passes():
    stamps, q, v = sines(50)
    bad = q.copy()
    bad[0, 3] = np.nan
    r = check_slot_error(stamps, bad, stamps, q)
    assert codes(r) == ["slot_error"] and r.figures["n_slots_with_nan"] == 1
    r = check_fd_velocity(stamps, bad, stamps, q, DT_NS)
    assert codes(r) == ["nan_values"]
