"""bench/bench_env_profile.py reaches inside the env: it replaces the info, the contact scan, the
observation and the action map of a local env, and times the parts of a batched env's step by
their method names. A rename in the env would leave the profile silently measuring nothing (or
crash on a quiet machine, where it is run rarely); a short run here finds it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_env_profile.py"
NUMBER = r"-?\d+\.\d"


def test_a_short_profile_prints_a_figure_for_every_part(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH.parents[1]), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(BENCH), "--steps", "60", "--repeats", "1", "--action-repeat", "4",
                          "--batched", "2"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "share an object" not in out.stderr, out.stderr  # a replaced part must not alias what the env returns
    for row in ("physics (inside mj_step)", "the env's own work", "info", "contact scan (inside the info)",
                "observation", "action map", "stepping, the tick's snapshot, wrappers",
                "scenes stepped (thread pool)", "after it, on the calling thread alone", "targets", "observe",
                "placement", "infos", "the step's own arithmetic"):
        assert re.search(rf"^\s+{re.escape(row)}\s+{NUMBER}\s", text, re.MULTILINE), (row, text)
    physics = float(re.search(rf"physics \(inside mj_step\)\s+({NUMBER})", text).group(1))
    assert physics > 0, text  # the env's physics went through the timed mj_step
