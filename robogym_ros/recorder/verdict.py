"""One verdict from many check results: a readable table, JSON, and an exit code.

Exit codes: 0 every check passed; 1 a check found a fault; 2 usage error or no data.
A check that could not run is never a pass: with nothing to look at, a clean table
would be a false reassurance.
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

from robogym_ros.checks import CheckResult, Finding, fmt_s

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
TITLE = "robogym_recorder verdict"  # the recorder's verdicts, live and offline


class Verdict:
    """Check results as one verdict: a table, JSON and an exit code."""

    def __init__(self, results: Iterable[CheckResult], *, title: str = "robogym_ros verdict",
                 usage_error: str | None = None, notes: Iterable[str] = ()):
        self.results = list(results)
        self.title = title
        self.usage_error = usage_error
        # What the checks saw of the data and what they could not see (a ring that overwrote,
        # a recovered bag): printed under the head line, so a PASS never hides its window.
        self.notes = list(notes)

    @classmethod
    def from_usage_error(cls, message: str, *, title: str = "robogym_ros verdict",
                         notes: Iterable[str] = ()) -> "Verdict":
        return cls([], title=title, usage_error=message, notes=notes)

    @property
    def status(self) -> str:
        if self.usage_error is not None:
            return "usage_error"
        if any(r.status == "fail" for r in self.results):
            return "fail"  # a fault found outweighs a check that could not run
        if not self.results or any(r.status == "no_data" for r in self.results):
            return "no_data"
        return "pass"

    @property
    def exit_code(self) -> int:
        return {"pass": EXIT_PASS, "fail": EXIT_FAIL}.get(self.status, EXIT_USAGE)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def findings(self) -> list[tuple[str, Finding]]:
        return [(r.name, f) for r in self.results for f in r.findings]

    def table(self) -> str:
        n_fail = sum(r.status == "fail" for r in self.results)
        head = f"{self.title}: {self.status.upper().replace('_', ' ')} (exit {self.exit_code})"
        notes = [f"  note: {n}" for n in self.notes]
        if self.usage_error is not None:
            return "\n".join([head, f"  {self.usage_error}", *notes])
        head += f" -- {len(self.findings)} findings in {n_fail} of {len(self.results)} checks"
        width = max([len(r.name) for r in self.results] + [5])
        lines = [head, *notes, f"  {'CHECK'.ljust(width)}  STATUS   FIGURES"]
        for r in self.results:
            status = r.status if r.status == "pass" else r.status.upper()
            lines.append(f"  {r.name.ljust(width)}  {status:<7}  {r.summary}")
        for r in self.results:
            table = r.figures.get("slot_table")
            if table:
                lines.append("")
                lines.extend(_slot_table(r))
        if self.findings:
            lines.append("")
            lines.append("Findings:")
            lines.extend(f"  [{name}] {f.message}" for name, f in self.findings)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return _plain({
            "title": self.title,
            "status": self.status,
            "exit_code": self.exit_code,
            "usage_error": self.usage_error,
            "notes": list(self.notes),
            "checks": [{"name": r.name, "status": r.status, "summary": r.summary, "figures": dict(r.figures),
                        "findings": [{"code": f.code, "message": f.message, "figures": dict(f.figures)}
                                     for f in r.findings]} for r in self.results],
        })

    def to_json(self, indent: int | None = 2) -> str:
        # allow_nan=False: NaN is not JSON; _plain already turned it into null.
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _slot_table(r: CheckResult) -> list[str]:
    """The aliasing table: per slot true, stored, error; oldest first (where aliasing shows)."""
    f = r.figures
    rows = f["slot_table"]
    out = [f"{r.name}: joint {f['slot_table_joint']}, oldest slot first",
           f"  {'slot':>6}  {'stamp':>14}  {'true':>10}  {'stored':>10}  {'error':>10}"]
    prev = None
    for row in rows:
        if prev is not None and row["slot"] != prev + 1:
            out.append(f"  {'...':>6}")
        tag = "  oldest" if row is rows[0] else ("  newest" if row is rows[-1] else "")
        out.append(f"  {row['slot']:>6}  {fmt_s(row['stamp_ns']):>14}  {row['true']:>10.3f}  {row['stored']:>10.3f}"
                   f"  {row['error']:>10.3f}{tag}")
        prev = row["slot"]
    m = f["slot_table_means"]
    out.append(f"  {'mean':>6}  {'':>14}  {m['true']:>10.3f}  {m['stored']:>10.3f}  {m['error']:>10.3f}")
    return out


def _plain(value: Any) -> Any:
    """JSON-ready copy: numpy scalars/arrays to Python, NaN/inf to None, bytes to hex."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
