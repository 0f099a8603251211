"""The verdict as a web page: ``report.html`` with PNG plots, headless (matplotlib's Agg).

One figure per question the checks answer, each drawn from the recorded arrays, and a
failed check's figure shows where it failed:

- ``positions.png``: per joint, stored vs true position over sim time, the oldest slot
  marked; slots that hold the newest value while their truth differs (aliasing) in red;
- ``slot_error.png``: the error of every slot against ground truth over its sim time, with the
  check's tolerance, on a log axis that draws an exact slot at a labelled 0; slots beyond it in red;
- ``tick_grid.png``: the time between consecutive stamps over sim time, with each dropped tick
  at its own sim time, duplicates and reorders marked;
- ``streams.png``: each stream over sim time, from its first to its last stamp; a stream that
  stopped before the recording ended is red from its last stamp to the end (in sim time), and
  each camera's judged frames with the lost ones crossed (robogym_ros.recorder.report.streams);
- ``velocity.png``: for the joint that moved most, the FD velocity of stored positions vs the
  truth's own FD over the same tick pairs, and the reported velocity vs the true instantaneous
  velocity at its stamp: the arrays the two velocity checks compared, titled with their findings;
- ``lateness.png`` (with diagnostics): the physics lateness histogram and late steps, stated and
  not flagged: no check of the verdict judges the sim's pacing;
- ``cameras.png`` (with kept pixels): the first, middle and last kept frame of each camera inside
  the window the verdict judged (live: of the newest frames within ``--keep-pixels-mb``, 16 MiB by
  default with ``--report``); without pixels the page says why there is no sheet.

A figure whose check failed is outlined in red (``<figure class="figure fail">``); each row of the
check table names the figure that draws the check, and a failed check without one says so.

The arrays come in a :class:`ReportData`, which the live recorder (its ring snapshots) and
the bag reader (:class:`~robogym_ros.recorder.bag.series.BagData`) both fill. No rclpy here.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from robogym_ros.recorder.report.data import ReportData
from robogym_ros.recorder.report.figures import (  # noqa: F401 - lateness_histogram, FigureInfo: API
    FAIL_RGB,
    OK_RGB,
    WARN_RGB,
    FigureInfo,
    contact_sheet,
    lateness_figure,
    lateness_histogram,
    positions_figure,
    slot_error_figure,
    tick_grid_figure,
)
from robogym_ros.recorder.report.inputs import (  # noqa: F401 - frames_from_*, verdict_from_dict: API
    frames_from_bag,
    frames_from_ring,
    judged_window_ns,
    verdict_from_dict,
)
from robogym_ros.recorder.report.streams import streams_figure
from robogym_ros.recorder.report.velocity import velocity_figure
from robogym_ros.recorder.ring_memory import REPORT_PIXELS_MB
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
        figures.append(positions_figure(out, data, results.get("aliasing")))
        figures.append(slot_error_figure(out, data, results.get("slot_error")))
        figures.append(tick_grid_figure(out, data, results.get("tick_grid")))
        if data.true_velocities is not None:
            figures.append(velocity_figure(out, data, results.get("velocity_fd"), results.get("velocity_reported")))
    if "streams" in results:
        figures.append(streams_figure(out, results["streams"], results.get("images")))
    if diagnostics:
        figures.append(lateness_figure(out, diagnostics))
    sheet_note = ""
    window = judged_window_ns(verdict)
    if data is not None and any(data.frames.values()):
        figures.append(contact_sheet(out, data.frames, results.get("images"), window))
    elif data is not None and data.frames:  # frames arrived, but none kept its pixels (in the window)
        inside = (f" inside the judged window {window[0] / 1e9:.3f}..{window[1] / 1e9:.3f} s" if window else "")
        sheet_note = (f"No camera contact sheet: frames of {', '.join(sorted(data.frames))} arrived but the recorder "
                      f"kept no pixels{inside} (--keep-pixels-mb 0 keeps none; with --report it keeps "
                      f"{REPORT_PIXELS_MB:g} MiB of the newest frames unless told otherwise)")
    page = out / REPORT_HTML
    page.write_text(_html(verdict, figures, title or verdict.title, diagnostics, sheet_note))
    return Report(page, tuple(figures))


def _html(verdict: Verdict, figures: Sequence[FigureInfo], title: str,
          diagnostics: Mapping[str, Any] | None, sheet_note: str = "") -> str:
    esc = html.escape
    status = verdict.status
    colour = OK_RGB if status == "pass" else FAIL_RGB
    drawn_by: dict[str, list[FigureInfo]] = {}
    for f in figures:
        for name in f.checks:
            drawn_by.setdefault(name, []).append(f)
    rows = []
    for r in verdict.results:
        cls = "pass" if r.status == "pass" else "fail"
        where = (", ".join(f'<a href="#fig-{esc(f.name)}">{esc(f.name)}</a>' for f in drawn_by.get(r.name, ()))
                 or ("no figure: see the findings" if r.status == "fail" else ""))
        rows.append(f'<tr class="{cls}" id="check-{esc(r.name)}"><td>{esc(r.name)}</td>'
                    f'<td class="status">{esc(r.status.upper())}</td><td>{esc(r.summary)}</td>'
                    f'<td class="figure-link">{where}</td></tr>')
    findings = "".join(f'<li class="fail" data-check="{esc(name)}"><b>{esc(name)}</b>: {esc(f.message)}'
                       + "".join(f' <a href="#fig-{esc(g.name)}">[{esc(g.name)}]</a>' for g in drawn_by.get(name, ()))
                       + "</li>" for name, f in verdict.findings)
    figs = []
    for f in sorted(figures, key=lambda f: f.level != "fail"):  # failed figures first, each in drawing order
        cls = "figure" if f.level == "ok" else f"figure {f.level}"
        prefix = "" if f.level == "ok" else f"{f.level.upper()}: "
        failures = f.marks.get("failures") or []
        spans = esc(json.dumps([{k: v for k, v in s.items() if k != "y"} for s in failures]), quote=True)
        # the img carries what the figure draws: its checks, and each failure placed in sim seconds
        figs.append(f'<figure class="{cls}" id="fig-{esc(f.name)}"><img src="{esc(f.path.name)}" '
                    f'alt="{esc(f.caption)}" data-checks="{esc(" ".join(f.checks))}" data-failures="{spans}">'
                    f'<figcaption>{prefix}{esc(f.caption)}</figcaption></figure>')
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
<table><tr><th>check</th><th>status</th><th>figures</th><th>drawn in</th></tr>
{"".join(rows)}
</table>
{"<h2>Findings</h2><ul>" + findings + "</ul>" if findings else ""}
{"".join(figs)}
{f'<p class="note" id="no-contact-sheet">{esc(sheet_note)}</p>' if sheet_note else ""}
{diag}
</body></html>
"""
