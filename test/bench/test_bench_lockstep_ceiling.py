"""bench/bench_lockstep_ceiling.py swaps a local env's backend for a link to a server process and
rebuilds the backend's interface there. A figure is only a ceiling of lockstep if that env does
the local env's work; the bench checks it (observations and infos bit for bit) before timing.
A short run here shows that the check passes as the bench is, and that it refuses a server
that does other work."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_lockstep_ceiling.py"


def _run(tmp_path, bench: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH.parent), str(BENCH.parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(bench), "--steps", "40", "--repeats", "1", "--action-repeat", "2",
                           "--no-lockstep"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_a_short_run_prints_each_ceiling_against_local_single(tmp_path):
    out = _run(tmp_path, BENCH)
    assert out.returncode == 0, out.stdout + out.stderr
    for row in ("local single", "ceiling", "ceiling + ticks"):
        found = re.search(rf"^  {re.escape(row)}\s+(\d+)\s+(\d+)%$", out.stdout, re.MULTILINE)
        assert found and int(found.group(1)) > 0, (row, out.stdout)
    assert "target for ros lockstep: >= 30 %" in out.stdout, out.stdout


def test_a_server_that_steps_other_physics_gives_no_figure(tmp_path):
    """The positive control of the bench's own check: a server that drops the env's targets."""
    faulty = tmp_path / "faulty_ceiling.py"
    source = BENCH.read_text()
    dropped = source.replace("physics.set_all_targets(request[2:].copy())", "pass")
    assert dropped != source, "the server no longer sets its targets as this test expects"
    faulty.write_text(dropped)
    out = _run(tmp_path, faulty)
    assert out.returncode != 0, out.stdout
    assert "differs from local single's: not the same work, no figure" in out.stdout + out.stderr, out.stderr
