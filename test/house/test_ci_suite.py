"""A CI suite ends within its time, whatever hangs in it (.ci/suite.sh, pytest.ini's timeout).

CI's job is killed at 5400 s with nothing said; so a hung test fails on its own after pytest.ini's
``timeout``, and a suite that still overruns its share of CI's time prints where its threads are,
is interrupted, killed with every process it started, and fails CI by name.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE_SH = ROOT / ".ci" / "suite.sh"

HANGS = textwrap.dedent("""
    import signal, subprocess, threading

    def test_hangs_where_no_interrupt_reaches():
        child = subprocess.Popen(["sleep", "1000"])
        open("{pid_file}", "w").write(str(child.pid))
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a wait in C that SIGINT never ends
        threading.Event().wait()
""")

LEAVES_A_PROCESS = textwrap.dedent("""
    import subprocess

    def test_passes_and_leaves_a_process_running():
        child = subprocess.Popen(["sleep", "1000"])
        open("{pid_file}", "w").write(str(child.pid))
""")


def alive(pid: int) -> bool:
    """Running: a zombie (killed, not yet reaped by its new parent) is not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def run_suites(tmp_path: Path, calls: str, budget_s: int = 4800, timeout_s: float = 120) -> tuple[str, float]:
    """bash sourcing .ci/suite.sh, then CALLS; its output and how long it took."""
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    script = (f"results={results}; CI_BUDGET_S={budget_s}; AFTER_SUITES_S=0; INTERRUPT_GRACE_S=5; "
              f"source {SUITE_SH}; {calls}; echo \"overran=${{overran[*]}}\"; echo \"suites=${{suites[*]}}\"")
    # the test suite's own conftest as a plugin: what registers SIGUSR1 there is what is checked
    env = {**os.environ, "PYTHONPATH": str(ROOT / "test")}
    t0 = time.monotonic()
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=timeout_s, env=env,
                         cwd=tmp_path)
    return run.stdout + run.stderr, time.monotonic() - t0


def pytest_command(test_file: Path) -> str:
    return f"{sys.executable} -m pytest {test_file} -p conftest -p no:cacheprovider -o timeout=0"


@pytest.mark.long
def test_a_suite_that_hangs_past_its_time_says_where_and_is_ended_with_its_processes(tmp_path):
    pid_file = tmp_path / "child.pid"
    test_file = tmp_path / "test_hang.py"
    test_file.write_text(HANGS.format(pid_file=pid_file))
    out, took_s = run_suites(tmp_path, f"run_suite hang 8 {pytest_command(test_file)}")
    assert "== hang: still running after 8 s" in out, out
    # faulthandler's dump of every thread names the test function where it hangs
    assert "test_hangs_where_no_interrupt_reaches" in out and "thread 0x" in out, out
    assert "== hang: exit " in out and "overran=hang" in out, out
    assert took_s < 8 + 5 + 5 + 15, f"{took_s:.0f} s: not ended within its budget and grace\n{out}"
    pid = int(pid_file.read_text())
    assert not alive(pid), f"the suite's child {pid} outlived it"


def test_a_suite_that_passes_is_not_overrun_and_what_it_left_running_is_ended(tmp_path):
    pid_file = tmp_path / "child.pid"
    test_file = tmp_path / "test_leaves.py"
    test_file.write_text(LEAVES_A_PROCESS.format(pid_file=pid_file))
    out, _ = run_suites(tmp_path, f"run_suite fine 60 {pytest_command(test_file)}")
    assert "== fine: exit 0 in" in out and "overran=\n" in out, out
    assert f"suites=fine={tmp_path / 'results' / 'fine.xml'}" in out, out
    assert (tmp_path / "results" / "fine.xml").stat().st_size > 0
    time.sleep(0.2)
    pid = int(pid_file.read_text())
    assert not alive(pid), f"the process {pid} the suite left running still runs"


def test_a_suite_with_no_time_left_is_not_run_and_fails_ci(tmp_path):
    out, _ = run_suites(tmp_path, "run_suite late 600 false", budget_s=30)
    assert "== late: not run" in out and "overran=late" in out, out


def test_a_hung_test_fails_after_pytest_ini_timeout_and_the_suite_goes_on(tmp_path):
    ini = (ROOT / "pytest.ini").read_text()
    assert "\ntimeout = " in ini, "pytest.ini sets no per-test timeout"
    test_file = tmp_path / "test_sleeps.py"
    test_file.write_text("import time\n\ndef test_sleeps():\n    time.sleep(60)\n\ndef test_after():\n    pass\n")
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", str(test_file), "-c", str(ROOT / "pytest.ini"),
                          "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-o", "timeout=2"],
                         capture_output=True, text=True, timeout=50)
    assert time.monotonic() - t0 < 40
    assert run.returncode == 1 and "Timeout" in run.stdout, run.stdout[-3000:]
    assert "1 failed, 1 passed" in run.stdout, run.stdout[-3000:]
