"""Reading the recorder's printed verdict table."""
from __future__ import annotations

import re

FRAMES_LINE = re.compile(r"frames due (\d+) over (\S+ s)\.\.(\S+ s): received (\d+), skipped by the sim (\d+), "
                         r"lost (\d+)(?:, missing (\d+) \([^)]*\))?(?:, in flight at the end (\d+) \([^)]*\))?"
                         r"(?:, after the camera stopped (\d+) \(camera_stopped\))?")


def frames_line(summary: str) -> dict:
    """The frames line of an images summary, parsed; it must add up: due = every category named."""
    m = FRAMES_LINE.search(summary)
    assert m, summary
    due, lo, hi, *rest = m.groups()
    received, skipped, lost, missing, in_flight, after_stop = (int(v or 0) for v in rest)
    assert int(due) == received + skipped + lost + missing + in_flight + after_stop, summary
    return {"due": int(due), "window": (lo, hi), "received": received, "in_flight": in_flight,
            "missing": missing, "after_stop": after_stop}
