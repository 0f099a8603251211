"""Process helpers the benches share (run as scripts, bench/ is on sys.path)."""
from __future__ import annotations

import signal
import subprocess


def stop(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Ctrl-C, as a user would; kill only if it has not stopped within ``timeout_s``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
