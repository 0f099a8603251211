"""A recording cut short (the recorder killed while writing): the stream check must not call a
stream that was alive "stopped" because the recorder had not yet written its last second, and
must still fail a stream that really stopped mid-bag. Real mcap files, ground truth written late
(as on a loaded machine: the file holds joint_states up to the cut and ground truth up to a
second before it), cut at ten byte offsets and read as the recorder reads a cut bag
(robogym_ros.recorder.bag.recovery)."""
from __future__ import annotations

import numpy as np
import pytest
from sim_bags import NAMES, SPEC, trajectory

from robogym_ros.checks import CUT_UNSEEN_S
from robogym_ros.recorder.bag.writer import BagWriter
from robogym_ros.recorder.offline import check_bag, read_recording

N_TICKS = 1000  # 10 s of sim time at 100 Hz, written at sim pace
GT_LAG_S = 1.1  # ground truth written this far behind joint_states (the issue saw 1.02 s)
CUTS = np.linspace(0.35, 0.97, 10)  # the fraction of the file kept
PADDING_BYTES = 100_000  # every 50 ms: ~2 MB/s, as cameras fill a real bag, so chunks (1 MiB) close every ~0.5 s


def write_bag(path, *, gt_stops_at_tick: int | None = None) -> None:
    """A bag as a recorder killed mid-run leaves it, before the cut: no end note; every message
    logged when it came, ground truth's written ``GT_LAG_S`` later (file order is write order)."""
    stamps, q, v, e = trajectory(N_TICKS)
    lag_ns = int(GT_LAG_S * 1e9)
    events = [(int(s), 0, k) for k, s in enumerate(stamps)]
    events += [(int(s) + lag_ns, 1, k) for k, s in enumerate(stamps)
               if gt_stops_at_tick is None or k < gt_stops_at_tick]
    events += [(int(s), 2, k) for k, s in enumerate(stamps) if k % 5 == 0]
    with BagWriter(path) as bag:
        bag.write_spec("/robogym_sim/spec", SPEC)
        for _written_ns, kind, k in sorted(events):
            if kind == 2:
                bag.write_string("/padding", "x" * PADDING_BYTES, log_time_ns=int(stamps[k]))
                continue
            topic = "/joint_states" if kind == 0 else "/ground_truth/joint_states"
            bag.write_joint_state(topic, int(stamps[k]), NAMES, q[k], v[k], e[k], log_time_ns=int(stamps[k]))


def cut(path, keep: float) -> None:
    file = path / f"{path.name}.mcap"
    data = file.read_bytes()
    file.write_bytes(data[:int(len(data) * keep)])


def streams_findings(verdict) -> list[str]:
    return [f.code for check, f in verdict.findings if check == "streams"]


@pytest.mark.parametrize("keep", CUTS, ids=[f"keep{k:.2f}" for k in CUTS])
def test_a_bag_cut_at_any_moment_is_end_not_seen_never_a_stopped_stream(tmp_path, keep):
    bag = tmp_path / "cut"
    write_bag(bag)
    cut(bag, keep)
    rec = read_recording(bag)
    assert rec.data.recovery is not None  # really read as a cut file
    gt, js = rec.data.ground_truth, rec.data.joint_states
    lag_s = (int(js.log_time_ns.max()) - int(gt.log_time_ns.max())) / 1e9
    assert lag_s > 1.0  # what the old rule called a stopped stream (silence threshold 1 s)
    verdict = check_bag(str(bag))
    assert streams_findings(verdict) == [], verdict.to_dict()
    summary = next(c for c in verdict.to_dict()["checks"] if c["name"] == "streams")["summary"]
    assert "end not seen" in summary and f"last {CUT_UNSEEN_S:g} s are not judged" in summary, summary


@pytest.mark.parametrize("keep", CUTS[5:], ids=[f"keep{k:.2f}" for k in CUTS[5:]])
def test_a_stream_that_really_stopped_mid_bag_still_fails_in_a_cut_bag(tmp_path, keep):
    bag = tmp_path / "stopped"
    write_bag(bag, gt_stops_at_tick=250)  # ground truth ends at 2.5 s (+ its lag); the bag goes on
    cut(bag, keep)
    verdict = check_bag(str(bag))
    assert "stream_stopped" in streams_findings(verdict), verdict.to_dict()
    message = next(f.message for check, f in verdict.findings if f.code == "stream_stopped")
    assert "ground_truth/joint_states stopped at sim time 2.50" in message, message
