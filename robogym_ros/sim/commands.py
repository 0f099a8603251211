"""Validation of joint commands: a command is accepted whole or rejected whole, with a reason."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


MAX_NAME_CHARS = 64  # of a joint name quoted in a reason: a 5 MB name must not become a 5 MB log line
MAX_REASON_CHARS = 400


class CommandRejected(ValueError):
    """The reason says what was wrong; nothing was changed. Bounded in length, whatever came in."""

    def __init__(self, reason: str):
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[:MAX_REASON_CHARS - 15] + " ... (cut short)"
        super().__init__(reason)


def quoted(name: str) -> str:
    """A joint name as a reason quotes it: at most MAX_NAME_CHARS characters, never unbounded."""
    name = str(name)
    if len(name) > MAX_NAME_CHARS:
        return f"'{name[:MAX_NAME_CHARS]}...' ({len(name)} characters)"
    return f"'{name}'"


def validate_command(
    names: Sequence[str],
    positions: Sequence[float],
    velocities: Sequence[float],
    efforts: Sequence[float],
    ranges: Mapping[str, tuple[float, float]],
) -> dict[str, float]:
    """Targets from a JointState command, or CommandRejected naming the first fault found.

    ``ranges`` maps each commandable joint to its (lower, upper) target range.
    """
    if len(velocities) or len(efforts):
        raise CommandRejected(
            "velocity and effort commands are not supported: send positions only "
            f"(got {len(velocities)} velocities, {len(efforts)} efforts)")
    if len(positions) != len(names):
        raise CommandRejected(
            f"len(position) = {len(positions)} but len(name) = {len(names)}: they must match")
    if not names:
        raise CommandRejected("the command names no joints")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CommandRejected(f"joint {quoted(name)} appears more than once")
        seen.add(name)
        if name not in ranges:
            raise CommandRejected(
                f"unknown joint {quoted(name)}; known joints: {', '.join(ranges)}")
    targets = {}
    for name, value in zip(names, positions):
        value = float(value)
        if not math.isfinite(value):
            raise CommandRejected(f"target for {quoted(name)} is not finite ({value})")
        lower, upper = ranges[name]
        if not lower <= value <= upper:
            raise CommandRejected(
                f"target for {quoted(name)} is {value:.6g}, outside its range "
                f"[{lower:.6g}, {upper:.6g}]")
        targets[name] = value
    return targets
