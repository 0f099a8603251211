"""robogym_ros.processes.stop_processes: Ctrl-C to all, a kill only for one that ignores it."""
from __future__ import annotations

import subprocess
import sys
import time

from robogym_ros.processes import stop_processes

UP = "print('up', flush=True)\ntime.sleep(60)"
CLEAN = f"import signal, sys, time\nsignal.signal(signal.SIGINT, lambda *_: sys.exit(0))\n{UP}"
DEAF = f"import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n{UP}"


def start(code: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"  # its handler is installed
    return proc


def test_a_clean_stop_and_a_deaf_process_killed_within_one_timeout():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    procs = [start(CLEAN), start(DEAF), start(DEAF), done]
    started = time.monotonic()
    codes = stop_processes(procs, timeout_s=2.0)
    took = time.monotonic() - started
    assert codes == [0, -9, -9, 0]  # SIGINT honoured; ignored -> SIGKILL; already ended: its code
    assert all(p.poll() is not None for p in procs)
    assert took < 2 * 2.0, took  # the two deaf ones waited out one shared timeout, not one each
    for p in procs[:3]:
        p.stdout.close()
