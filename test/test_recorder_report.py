"""The live recorder's ``--report``: a camera contact sheet without being asked for pixels.

``--report`` alone keeps the newest frames' pixels (REPORT_PIXELS_MB) for the sheet; an explicit
``--keep-pixels-mb 0`` keeps none, and the page then says why it has no sheet."""
from __future__ import annotations

import time

import pytest
from test_recorder import fresh_ns
from test_recorder_faults import camera_spec, run_stand_in

from robogym_ros.nodes.recorder_cli import parse_args
from robogym_ros.recorder.memory import REPORT_PIXELS_MB

N_TICKS = 60


@pytest.mark.parametrize("argv, kept_mb", [
    (["--report", "r"], REPORT_PIXELS_MB),
    (["--report", "r", "--keep-pixels-mb", "0"], 0.0),
    (["--report", "r", "--keep-pixels-mb", "2.5"], 2.5),
    ([], 0.0),
    (["--bag", "b", "--report", "r"], 0.0),  # offline: the sheet comes from the bag's own images
])
def test_report_keeps_pixels_unless_told(argv, kept_mb, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_args(argv).keep_pixels_mb == kept_mb


def test_a_live_report_has_a_contact_sheet_by_default(ros, long_ticks, tmp_path):
    physics, ticks = long_ticks
    names = physics.joint_names
    ns = fresh_ns("sheet")
    part = ticks[1:1 + N_TICKS]

    def script(sim):
        sim.state(False, 0, "start")
        for t in part:
            sim.tick(t, names)
            time.sleep(0.005)

    report = tmp_path / "report"
    rc, out, _ = run_stand_in(tmp_path, camera_spec(ns, physics), ns, script, "--ticks", str(N_TICKS),
                              "--report", str(report))
    page = (report / "report.html").read_text()
    assert 'id="fig-cameras"' in page and (report / "cameras.png").is_file(), out
    assert 'id="no-contact-sheet"' not in page
