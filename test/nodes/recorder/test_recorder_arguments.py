"""Recorder arguments are validated before anything is recorded: one clear line, exit 2, the bad
value never echoed unbounded. The first group needs no ROS graph (they stop before rclpy starts)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from recorder_runs import RecorderRun, assert_no_traceback, fresh_ns, make_spec
from stand_in_sim import StandInSim

from robogym_ros.recorder.ring_memory import available_memory_bytes


def run_recorder(*args: str, timeout_s: float = 60.0) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "robogym_ros.nodes.recorder", *args], capture_output=True,
                       text=True, timeout=timeout_s)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("args, message", [
    (["--duration", "nan"], "argument --duration: a finite number of seconds > 0, got 'nan'"),
    (["--duration", "inf"], "argument --duration: a finite number of seconds > 0, got 'inf'"),
    (["--duration", "-1"], "argument --duration: a finite number of seconds > 0, got '-1'"),
    (["--ticks", "2.5"], "argument --ticks: a whole number > 0, got '2.5'"),
    (["--capacity", "1e10"], "--capacity 10000000000 needs"),
    (["--capacity", "0"], "argument --capacity: a whole number > 0, got '0'"),
    (["--keep-pixels-mb", "1e12"], "needs"),
    (["--spec-timeout", "nan"], "argument --spec-timeout: a finite number of seconds > 0"),
    (["--json", "/proc/no/such/verdict.json"], "--json /proc/no/such/verdict.json: cannot be written"),
    (["--json", "/"], "--json /: is a folder"),
    (["--record", "/proc/no/such/bag"], "--record /proc/no/such/bag: folder /proc/no/such does not exist"),
    (["--bag", "x", "--duration", "3"], "--bag checks a recording offline"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_arguments_are_one_line_and_exit_2_before_recording(args, message):
    rc, out = run_recorder(*args)
    assert_no_traceback(out)
    assert rc == 2, out
    assert message in out, out
    assert len(out.strip().splitlines()) == 1, out  # one line: no usage block, no log
    assert "spec" not in out.lower() or "spec-timeout" in out  # never got as far as waiting for a spec


@pytest.mark.parametrize("flag", ["--duration", "--capacity", "--json", "--frobnicate"])
def test_a_huge_argument_is_not_echoed(flag):
    huge = "9" * 100_000 if flag != "--json" else "/nonexistent/" + "x" * 100_000  # an argument is at most 128 KiB
    rc, out = run_recorder(flag, huge)
    assert rc == 2 and len(out) < 1000, out[:2000]


def test_a_capacity_too_large_for_the_spec_joints_is_refused_before_subscribing(ros, long_ticks, tmp_path):
    """Fits for one joint, not for the spec's twelve: refused once the spec names them."""
    physics, _ = long_ticks
    capacity = int(0.5 * available_memory_bytes() / 300)  # ~0.3 of memory at 1 joint, ~1.2 at 12
    ns = fresh_ns("capacity")
    sim = StandInSim(ns, make_spec(ns, physics))
    run = RecorderRun(tmp_path, "--duration", "30", "--capacity", str(capacity), ns=ns)
    try:
        rc, out, verdict = run.wait(30)
        assert sim.pub["js"].get_subscription_count() == 0  # it never subscribed to the streams
    finally:
        run.stop()
        sim.close()
    assert_no_traceback(out)
    assert rc == 2 and verdict["status"] == "usage_error", out
    assert f"--capacity {capacity} needs" in out and "for 12 joints" in out


def test_the_memory_message_names_the_real_figures():
    """`--capacity 1e10` said "rings for 1 joints" before the joints were known: now the least the
    rings need (said to be a lower bound), what is available, and the largest capacity that fits."""
    from robogym_ros.recorder.ring import recording_bytes
    from robogym_ros.recorder.ring_memory import memory_problem
    available = 8 * 2**30
    early = memory_problem(10**10, 0.0, None, available_bytes=available)
    need = recording_bytes(10**10, 1) / 2**30
    assert early.startswith(f"--capacity 10000000000 needs at least {need:.1f} GiB of rings (")
    assert "8.0 GiB available, at most 50% used" in early and "1 joints" not in early
    largest = int(early.rsplit(" ", 1)[1])
    assert recording_bytes(largest, 1) <= available / 2 < recording_bytes(largest + 1, 1)
    known = memory_problem(10**8, 0.0, 12, available_bytes=available)
    assert f"{recording_bytes(10**8, 12) / 2**30:.1f} GiB of rings for 12 joints" in known
    largest = int(known.split("use --capacity ")[1].split()[0])
    assert recording_bytes(largest, 12) <= available / 2 < recording_bytes(largest + 1, 12)
    assert memory_problem(largest, 0.0, 12, available_bytes=available) is None
