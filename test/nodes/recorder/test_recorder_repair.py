"""A recording cut short (the recorder killed while writing) made whole: ``--bag CUT --repair NEW``
writes a finalised copy (mcap with summary + metadata.yaml) that rosbags' Reader and
``mcap_ros2.reader.read_ros2_messages`` open, which they could not do with the cut file."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from bag_messages import ros2_messages
from rosbags.interfaces import QosDurability
from rosbags.rosbag2 import Reader
from sim_bags import write_sim_bag

from robogym_ros.recorder.bag.format import BagError
from robogym_ros.recorder.bag.reader import read_bag
from robogym_ros.recorder.bag.repair import repair_bag

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # mcap_ros2.reader: the reader
N_TICKS = 3000  # ~7 MiB: several 1 MiB chunks, so the cut falls inside one


def recorder_cli(*args: str) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "robogym_ros.nodes.recorder", *args], capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr




@pytest.fixture(scope="module")
def cut_bag(tmp_path_factory):
    """What kill -9 leaves: no metadata.yaml, an mcap cut inside a chunk, no summary."""
    bag = tmp_path_factory.mktemp("cut") / "bag"
    write_sim_bag(bag, n_ticks=N_TICKS)
    (bag / "metadata.yaml").unlink()
    mcap = bag / "bag.mcap"
    data = mcap.read_bytes()
    mcap.write_bytes(data[:int(len(data) * 0.8)])
    return bag


def test_the_cut_file_defeats_other_readers(cut_bag):
    """The control: what the repair is for."""
    with pytest.raises(Exception):  # noqa: B017 - whatever rosbags raises: it cannot open it
        with Reader(cut_bag / "bag.mcap"):
            pass
    try:
        n = ros2_messages(cut_bag)
    except Exception:  # noqa: BLE001 - mcap_ros2 raises on the cut, or reads nothing
        n = 0
    assert n == 0


def test_a_cut_recording_is_repaired_into_a_bag_every_reader_opens(cut_bag, tmp_path):
    recovered = read_bag(cut_bag, recover=True).recovery
    fixed = tmp_path / "fixed"
    rc, out = recorder_cli("--bag", str(cut_bag), "--repair", str(fixed), "--json", str(tmp_path / "cut.json"))
    assert rc == 0, out
    assert f"repaired copy: {fixed} ({recovered.n_messages} messages on 6 topics, finalised)" in out, out
    assert (fixed / "metadata.yaml").is_file()
    with Reader(fixed) as reader:
        assert reader.message_count == recovered.n_messages
        assert {c.topic: c.msgcount for c in reader.connections} == recovered.message_counts
        qos = {c.topic: c.ext.offered_qos_profiles[0].durability for c in reader.connections}
    assert qos["/robogym_sim/spec"] == QosDurability.TRANSIENT_LOCAL  # latched stays latched on replay
    assert qos["/joint_states"] == QosDurability.VOLATILE
    assert ros2_messages(fixed) == recovered.n_messages
    # the copy is the same data, now whole: the same verdict, without the truncation note
    rc, out = recorder_cli("--bag", str(fixed), "--json", str(tmp_path / "fixed.json"))
    cut_verdict, fixed_verdict = (json.loads((tmp_path / f).read_text()) for f in ("cut.json", "fixed.json"))
    assert rc == 0 and fixed_verdict["status"] == "pass", out
    assert "is truncated" in cut_verdict["notes"][0] and "--repair" in cut_verdict["notes"][0]
    assert not any("truncated" in n for n in fixed_verdict["notes"])
    grid = [next(c for c in v["checks"] if c["name"] == "tick_grid")["figures"] for v in (cut_verdict, fixed_verdict)]
    assert grid[0] == grid[1] and grid[0]["n_received"] < N_TICKS


def test_repair_refuses_what_it_cannot_do_and_writes_nothing(cut_bag, tmp_path):
    complete = tmp_path / "complete"
    write_sim_bag(complete, n_ticks=10)
    with pytest.raises(BagError, match="is complete .*nothing to repair"):
        repair_bag(complete, tmp_path / "out")
    (tmp_path / "taken").mkdir()
    with pytest.raises(BagError, match="exists already"):
        repair_bag(cut_bag, tmp_path / "taken")
    assert not (tmp_path / "out").exists() and list((tmp_path / "taken").iterdir()) == []
    rc, out = recorder_cli("--repair", str(tmp_path / "x"))
    assert rc == 2 and "--repair writes a finalised copy of the bag given with --bag" in out, out
