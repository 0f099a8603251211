"""Serialized messages that could not be decoded: counted per stream, judged as lost data.

Live (the recorder's raw subscriptions) and offline (a bag re-checked) report them the same
way, in a check named ``decoding``: a malformed message is data that never reached the
checks, so it is a failure, never a crash and never silence.
"""
from __future__ import annotations

from typing import Mapping

from robogym_ros import checks


class Malformed:
    """Serialized messages of one stream that could not be decoded: how many, and why the first."""

    def __init__(self):
        self.n = 0
        self.first_error = ""

    def add(self, error: str) -> None:
        self.n += 1
        if not self.first_error:
            self.first_error = error


def decoding_result(decoded: Mapping[str, int], malformed: Mapping[str, Malformed], *,
                    after_end: Mapping[str, int] | None = None) -> checks.CheckResult:
    """The ``decoding`` check: ``decoded`` messages per stream, ``malformed`` ones (lost) per stream.

    ``after_end``: of the decoded, those that came after the recording ended (live: the grace in
    which the last ticks' truth catches up). The streams check counts messages until the end and
    names these apart; the summary says the split, so the two counts of a stream add up.
    """
    bad = {stream: m.n for stream, m in malformed.items()}
    after = {stream: int(n) for stream, n in (after_end or {}).items() if n}
    figures = {"n_decoded": dict(decoded), "n_malformed": bad, "n_after_end": after,
               "first_error": {stream: m.first_error for stream, m in malformed.items()}}
    findings = tuple(checks.Finding(
        "malformed_messages",
        f"{stream}: {n} malformed message{'s' * (n != 1)}, lost; the first: "
        f"{checks.clip(malformed[stream].first_error, 300)}",
        {"stream": stream, "n_malformed": n}) for stream, n in bad.items())
    if findings:
        summary = ", ".join(f"{n} {stream} malformed" for stream, n in bad.items())
    else:
        summary = "every message decoded: " + ", ".join(
            f"{n} {stream}" + (f" ({n - after[stream]} until the end + {after[stream]} after it)" if stream in after
                               else "") for stream, n in decoded.items())
    return checks.CheckResult("decoding", summary, figures, findings)
