"""Stopping the child processes a program started (sims, recorders, helpers), as a user would.

Ctrl-C first (SIGINT: a node's clean stop, so it says goodbye on the ROS graph and closes its
files), SIGKILL only for one that has not ended within the timeout: never a process left behind
to talk to the next run."""
from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable


def stop_processes(procs: Iterable[subprocess.Popen], timeout_s: float = 15.0) -> list[int]:
    """SIGINT to every process still running, then their exit codes; one that has not ended
    ``timeout_s`` after the signal is killed (its code is then -9). All are signalled before any
    is waited for, so stopping N takes the longest stop, not the sum."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(max(deadline - time.monotonic(), 0.0)))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes
