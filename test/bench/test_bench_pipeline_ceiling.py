"""bench/bench_pipeline_ceiling.py starts three processes of its own that exchange the pipeline's
messages; its rows bound the real pipeline only if those messages flow (a topic name that no
longer matches would make a faster row of less work). A short run here shows the rows and that
the bench refuses a row whose recorder or sim received nothing."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_pipeline_ceiling.py"
ROWS = ("sim", "sim + rec", "sim + motion + rec")


def _run(tmp_path, bench: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH.parent), str(BENCH.parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(bench), "--ticks", "300", "--physics-s", "0.3"], capture_output=True,
                          text=True, timeout=400, env=env, cwd=tmp_path)


def test_a_short_run_prints_every_row_with_its_cpu_bound(tmp_path):
    out = _run(tmp_path, BENCH)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ROWS:
        found = re.search(rf"^  {re.escape(name)}\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%\s", out.stdout, re.MULTILINE)
        assert found and int(found.group(1)) > 0 and float(found.group(3)) > 0, (name, out.stdout)
    assert re.search(r"sim \d+, recorder \d+, motion \d+ \(sum \d+\)", out.stdout), out.stdout


def _faulty(tmp_path, old: str, new: str) -> Path:
    source = BENCH.read_text()
    changed = source.replace(old, new)
    assert changed != source, f"{old!r} is no longer in the bench"
    path = tmp_path / "faulty_pipeline_ceiling.py"
    path.write_text(changed)
    return path


def test_a_sim_that_publishes_nothing_gives_no_figure(tmp_path):
    """Positive control: the sim steps, but its messages never leave it."""
    bench = _faulty(tmp_path, "            pub.publish(encode(tick))", "            pass")
    out = _run(tmp_path, bench)
    assert out.returncode != 0, out.stdout
    assert "the ceiling's recorder received nothing on joint_states" in out.stderr, out.stderr
