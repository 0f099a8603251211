"""The recorder's files besides the bag: the verdict as JSON and the report, each with its exit code.

A file that cannot be written is one line on stderr and exit 2 (the verdict was printed already).
"""
from __future__ import annotations

import sys
from pathlib import Path

from robogym_ros.checks import clip
from robogym_ros.recorder.verdict import EXIT_USAGE, Verdict


def write_report_of(folder: str, verdict: Verdict, data, diagnostics=None) -> int:
    """Write report.html (matplotlib, imported only now: it costs start-up time); the exit code,
    2 if the report cannot be written. ``data`` is a ReportData or a callable that makes one."""
    from robogym_ros.recorder.report.page import write_report
    try:
        report = write_report(folder, verdict, data() if callable(data) else data, diagnostics=diagnostics)
    except (OSError, ValueError) as exc:
        print(f"robogym_recorder: cannot write --report {clip(folder, 200)}: {clip(exc, 300)}", file=sys.stderr,
              flush=True)
        return EXIT_USAGE
    print(f"report: {report.html}", flush=True)
    return verdict.exit_code


def write_json(verdict: Verdict, path: str | None) -> int:
    """Write the verdict JSON (if asked); the exit code, 2 if the file cannot be written."""
    if not path:
        return verdict.exit_code
    try:
        Path(path).write_text(verdict.to_json())
    except OSError as exc:
        print(f"robogym_recorder: cannot write --json {clip(path, 200)}: {exc.strerror or exc}", file=sys.stderr,
              flush=True)
        return EXIT_USAGE
    return verdict.exit_code
