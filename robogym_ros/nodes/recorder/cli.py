"""``robogym_recorder``: store what a sim publishes, prove it against ground truth.

    ros2 run robogym_ros robogym_recorder [--duration S | --ticks N] [--record BAG] [--json F] [--report DIR]
    ros2 run robogym_ros robogym_recorder --bag BAG [--json F] [--report DIR]   # offline, no ROS graph
    ros2 run robogym_ros robogym_recorder --bag CUT_BAG --repair NEW_BAG        # a killed recording made whole
    python -m robogym_ros.nodes.recorder ...                                    # the same

The command line: arguments checked before anything is subscribed (one line, exit 2), then
either the live node (robogym_ros.nodes.recorder.node) or the offline check of a bag
(robogym_ros.recorder.offline). Exit code: 0 pass, 1 fail, 2 usage error or no data.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import rclpy

from robogym_ros.checks import clip
from robogym_ros.nodes.recorder.node import RecorderNode
from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.repair import repair_bag
from robogym_ros.recorder.offline import check_bag, report_data
from robogym_ros.recorder.ring_memory import REPORT_PIXELS_MB, memory_problem
from robogym_ros.recorder.verdict import EXIT_USAGE, TITLE, Verdict
from robogym_ros.recorder.verdict_files import write_json, write_report_of
from robogym_ros.ros.arguments import ArgumentParser
from robogym_ros.ros.node_runner import events_executor, run_node


def _number(kind: str, *, integer: bool = False, minimum: float = 0.0, inclusive: bool = False):
    def parse(text: str):
        shown = clip(repr(text), 40)
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{kind}, got {shown}") from None
        if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"{kind}, got {shown}")
        if integer:
            if value != int(value):
                raise argparse.ArgumentTypeError(f"{kind}, got {shown}")
            return int(value)
        return value
    return parse


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="robogym_recorder", description=__doc__.split("\n\n")[0])
    stop = parser.add_mutually_exclusive_group()
    stop.add_argument("--duration", type=_number("a finite number of seconds > 0"),
                      help="record this long after the spec arrives [s]")
    stop.add_argument("--ticks", type=_number("a whole number > 0", integer=True),
                      help="stop after this many joint_states")
    parser.add_argument("--record", metavar="BAG", help="write what is received to this mcap bag")
    parser.add_argument("--bag", metavar="BAG", help="offline: check a bag (mcap or sqlite3)")
    parser.add_argument("--repair", metavar="NEW_BAG",
                        help="with --bag, for a recording cut short (killed while writing): write a finalised copy "
                             "of what can be read (mcap + metadata.yaml) that ros2 bag and other readers open")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON")
    parser.add_argument("--report", metavar="DIR", help="also write report.html with plots into this folder")
    parser.add_argument("--capacity", type=_number("a whole number > 0", integer=True), default=120_000,
                        help="ring slots for joint_states and truth each (20 min at 100 Hz)")
    parser.add_argument("--keep-pixels-mb", type=_number("a finite number >= 0", inclusive=True), default=None,
                        help="keep the newest image pixels up to this budget [MiB] (default: digests only; "
                             f"with --report, {REPORT_PIXELS_MB:g} MiB for the report's contact sheet)")
    parser.add_argument("--spec-timeout", type=_number("a finite number of seconds > 0"), default=15.0,
                        help="give up if the sim's spec has not arrived after this long [s]")
    args = parser.parse_args(argv)
    if args.keep_pixels_mb is None:
        args.keep_pixels_mb = REPORT_PIXELS_MB if args.report and not args.bag else 0.0
    if args.bag and (args.record or args.duration is not None or args.ticks is not None):
        parser.error("--bag checks a recording offline; it takes no --record/--duration/--ticks")
    if args.repair and not args.bag:
        parser.error("--repair writes a finalised copy of the bag given with --bag; give --bag")
    for flag, path in (("--record", args.record), ("--repair", args.repair)):
        problem = _unwritable_new_path(path) if path else None
        if problem:
            parser.error(f"{flag} {clip(path, 200)}: {problem}")
    if args.json:
        problem = _unwritable_file(args.json)
        if problem:
            parser.error(f"--json {clip(args.json, 200)}: {problem}")
    if args.report:
        problem = _unwritable_folder(args.report)
        if problem:
            parser.error(f"--report {clip(args.report, 200)}: {problem}")
    if not args.bag:
        # The rings are allocated once the spec names the joints; judged here with the least they can need.
        problem = memory_problem(args.capacity, args.keep_pixels_mb, None)
        if problem:
            parser.error(problem)
    return args


def _unwritable_folder(path: str) -> str | None:
    """Why a report folder cannot be written (it may exist; it is created if not), or None."""
    p = Path(path)
    try:
        if p.exists():
            return None if p.is_dir() and os.access(p, os.W_OK | os.X_OK) else "is not a writable folder"
        return _unwritable_new_path(path)
    except OSError as exc:
        return exc.strerror or str(exc)


def _unwritable_new_path(path: str) -> str | None:
    p = Path(path)
    try:
        if p.exists():
            return "exists already; a bag is never overwritten"
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            return f"folder {clip(str(parent), 200)} does not exist"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"folder {clip(str(parent), 200)} is not writable"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _unwritable_file(path: str) -> str | None:
    """None if ``path`` can be written; tried for real (created and removed if it was not there)."""
    p = Path(path)
    try:
        if p.is_dir():
            return "is a folder"
        existed = p.exists()
        with open(p, "a"):
            pass
        if not existed:
            p.unlink()
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    return None


def run_offline(args: argparse.Namespace) -> int:
    try:
        if args.repair:
            try:
                print(repair_bag(args.bag, args.repair).describe(), flush=True)
            except BagError as exc:  # nothing written; the verdict says why
                verdict = Verdict.from_usage_error(str(exc), title=TITLE)
                print(verdict.table(), flush=True)
                return max(write_json(verdict, args.json), EXIT_USAGE)
        verdict = check_bag(args.bag)
    except KeyboardInterrupt:
        print("robogym_recorder: interrupted while reading the bag; no verdict", file=sys.stderr, flush=True)
        return EXIT_USAGE
    print(verdict.table(), flush=True)
    code = write_json(verdict, args.json)
    if args.report:
        code = max(code, write_report_of(args.report, verdict, lambda: report_data(args.bag, verdict)))
    return code


def main(argv=None) -> int:
    argv = sys.argv if argv is None else argv
    user_args = rclpy.utilities.remove_ros_args(argv)[1:]
    try:
        args = parse_args(user_args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.bag:
        return run_offline(args)
    return run_node(lambda: RecorderNode(args), argv, errors=(ValueError, OSError, BagError),
                    executor_factory=events_executor, stopped_before_start=EXIT_USAGE)

