"""The verdict as a web page: ``report.html`` with PNG plots, headless (matplotlib's Agg).

One figure per question the checks answer, each drawn from the recorded arrays, and a
failed check's figure shows where it failed:

- ``positions.png``: per joint, stored vs true position over sim time, the oldest slot
  marked; slots that hold the newest value while their truth differs (aliasing) in red;
- ``slot_error.png``: the error of every slot against ground truth, oldest first, with the
  check's tolerance; slots beyond it in red;
- ``tick_grid.png``: the time between consecutive stamps, message by message, with drops,
  duplicates and reorders marked;
- ``velocity.png``: for the joint that moved most, the FD velocity of stored positions vs the
  truth's own FD over the same tick pairs, and the reported velocity vs the true instantaneous
  velocity at its stamp: the arrays the two velocity checks compared, titled with their findings;
- ``lateness.png`` (with diagnostics): the physics lateness histogram and late steps;
- ``cameras.png`` (with kept pixels): the first, middle and last kept frame of each camera (live:
  the newest frames within ``--keep-pixels-mb``, 16 MiB by default with ``--report``); without
  pixels the page says why there is no sheet.

The arrays come in a :class:`ReportData`, which the live recorder (its ring snapshots) and
the bag reader (:class:`~robogym_ros.recorder.bagio.BagData`) both fill. No rclpy here.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from robogym_ros.recorder.memory import REPORT_PIXELS_MB
from robogym_ros.recorder.report_data import ReportData
from robogym_ros.recorder.report_figures import (  # noqa: F401 - lateness_histogram, FigureInfo: API
    FAIL_RGB,
    OK_RGB,
    WARN_RGB,
    FigureInfo,
    _contact_sheet,
    _lateness,
    _positions,
    _slot_error,
    _tick_grid,
    lateness_histogram,
)
from robogym_ros.recorder.report_inputs import frames_from_bag, frames_from_ring, verdict_from_dict  # noqa: F401
from robogym_ros.recorder.report_velocity import _velocity
from robogym_ros.recorder.verdict import Verdict

REPORT_HTML = "report.html"


@dataclass(frozen=True)
class Report:
    """The written report: its page and each figure with its level."""

    html: Path
    figures: tuple[FigureInfo, ...]

    def figure(self, name: str) -> FigureInfo:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(f"no figure {name!r}; figures: {[f.name for f in self.figures]}")


def write_report(out_dir: str | Path, verdict: Verdict, data: ReportData | None, *,
                 diagnostics: Mapping[str, Any] | None = None, title: str | None = None) -> Report:
    """Write ``report.html`` and its PNGs into ``out_dir`` (created); returns what it wrote.

    ``diagnostics``: the sim's /diagnostics values (strings or numbers), optional:
    ``late_steps``, ``max_lateness_s``, ``steps`` and ``lateness_histogram`` (JSON or a
    mapping ``{"edges_s": [...], "counts": [...]}``, one count per bin between edges; a last
    edge of null is +infinity).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = {r.name: r for r in verdict.results}
    figures: list[FigureInfo] = []
    if data is not None and len(data.stamps_ns):
        figures.append(_positions(out, data, results.get("aliasing")))
        figures.append(_slot_error(out, data, results.get("slot_error")))
        figures.append(_tick_grid(out, data, results.get("tick_grid")))
        if data.true_velocities is not None:
            figures.append(_velocity(out, data, results.get("velocity_fd"), results.get("velocity_reported")))
    if diagnostics:
        figures.append(_lateness(out, diagnostics))
    sheet_note = ""
    if data is not None and any(data.frames.values()):
        figures.append(_contact_sheet(out, data.frames, results.get("images")))
    elif data is not None and data.frames:  # frames arrived, but none kept its pixels
        sheet_note = (f"No camera contact sheet: frames of {', '.join(sorted(data.frames))} arrived but the recorder "
                      f"kept no pixels (--keep-pixels-mb 0; with --report it keeps {REPORT_PIXELS_MB:g} MiB of the "
                      f"newest frames unless told otherwise)")
    page = out / REPORT_HTML
    page.write_text(_html(verdict, figures, title or verdict.title, diagnostics, sheet_note))
    return Report(page, tuple(figures))


def _html(verdict: Verdict, figures: Sequence[FigureInfo], title: str,
          diagnostics: Mapping[str, Any] | None, sheet_note: str = "") -> str:
    esc = html.escape
    status = verdict.status
    colour = OK_RGB if status == "pass" else FAIL_RGB
    rows = []
    for r in verdict.results:
        cls = "pass" if r.status == "pass" else "fail"
        rows.append(f'<tr class="{cls}" id="check-{esc(r.name)}"><td>{esc(r.name)}</td>'
                    f'<td class="status">{esc(r.status.upper())}</td><td>{esc(r.summary)}</td></tr>')
    findings = "".join(f'<li class="fail" data-check="{esc(name)}"><b>{esc(name)}</b>: {esc(f.message)}</li>'
                       for name, f in verdict.findings)
    figs = []
    for f in figures:
        cls = "figure" if f.level == "ok" else f"figure {f.level}"
        prefix = "" if f.level == "ok" else f"{f.level.upper()}: "
        figs.append(f'<figure class="{cls}" id="fig-{esc(f.name)}"><img src="{esc(f.path.name)}" '
                    f'alt="{esc(f.caption)}"><figcaption>{prefix}{esc(f.caption)}</figcaption></figure>')
    usage = f'<p class="fail">{esc(verdict.usage_error)}</p>' if verdict.usage_error else ""
    diag = ""
    if diagnostics:
        items = "".join(f"<tr><td>{esc(str(k))}</td><td>{esc(str(v))[:200]}</td></tr>"
                        for k, v in diagnostics.items() if k != "lateness_histogram")
        diag = f"<h2>Sim diagnostics</h2><table>{items}</table>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
h1 .status {{ color: {colour}; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.6em; font-size: 0.9em; vertical-align: top; }}
tr.fail td.status, li.fail b, p.fail, figure.fail figcaption {{ color: {FAIL_RGB}; font-weight: bold; }}
tr.pass td.status {{ color: {OK_RGB}; }}
figure {{ margin: 1em 0 2em; }} figure.fail img {{ outline: 3px solid {FAIL_RGB}; }}
figure.warn figcaption {{ color: {WARN_RGB}; font-weight: bold; }}
img {{ max-width: 100%; }}
</style></head>
<body>
<h1>{esc(title)}: <span class="status" id="verdict-status">{esc(status.upper().replace("_", " "))}</span>
 (exit {verdict.exit_code})</h1>
{usage}
<table><tr><th>check</th><th>status</th><th>figures</th></tr>
{"".join(rows)}
</table>
{"<h2>Findings</h2><ul>" + findings + "</ul>" if findings else ""}
{"".join(figs)}
{f'<p class="note" id="no-contact-sheet">{esc(sheet_note)}</p>' if sheet_note else ""}
{diag}
</body></html>
"""
