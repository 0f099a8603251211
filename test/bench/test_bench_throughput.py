"""bench/bench_throughput.py gives a figure for every row it runs: a recorder's run lasts only as
long as its ticks take, so on a quiet machine (thousands of ticks/s) a run of a second or two left
too few diagnostics samples and the row printed ``nan``. A short run here is such a run."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "bench_throughput.py"


def test_a_short_recorder_run_still_gets_a_figure(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH.parents[1]), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(BENCH), "--only", "rec", "--cameras", "off", "--ticks", "120",
                          "--limit-s", "0.3"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("sim + rec ")]
    assert len(rows) == 1, out.stdout
    ticks_per_s = float(rows[0].split()[4])  # name (3 words), cams, ticks/s
    assert ticks_per_s > 0, rows[0]  # nan fails this too
    assert "nan" not in rows[0] and re.search(r"sim node \d+, physics \d+, recorder \d+", rows[0]), rows[0]


def test_the_window_falls_back_to_the_resume_and_says_so():
    spec = importlib.util.spec_from_file_location("bench_throughput", BENCH)
    sys.path.insert(0, str(BENCH.parent))
    try:
        bench = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = bench  # its dataclasses look their module up
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(BENCH.parent))
    S = bench.Sample
    resumed = S(10.0, 500, {"sim node": 1.0})
    samples = [S(10.2, 900, {"sim node": 1.1}), S(10.4, 1300, {"sim node": 1.2})]
    (a, b), note = bench.measurement_window(resumed, samples)
    assert (a, b) == (resumed, samples[-1]) and "from the resume" in note
    samples.append(S(10.6, 1700, {"sim node": 1.3}))
    assert bench.measurement_window(resumed, samples) == ((samples[1], samples[-1]), "")
    gone = [S(10.2, 900, {"sim node": None})]  # a process gone: its CPU is unknown
    assert bench.measurement_window(resumed, gone) == (None, "no diagnostics sample while the sim ran")
