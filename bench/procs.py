"""Process helpers the benches share (run as scripts, bench/ is on sys.path)."""
from __future__ import annotations

import subprocess

from robogym_ros.processes import stop_processes


def stop(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Ctrl-C, as a user would; kill only if it has not stopped within ``timeout_s``."""
    stop_processes([proc], timeout_s)
