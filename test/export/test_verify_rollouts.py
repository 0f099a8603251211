"""recipes/verify_rollouts.py checks every action of a rollouts dataset: each one through the
next frame's replay, an episode's last one (a training target no replay frame shows) against the
export's record of where it led; a dataset without that record has its last actions named unchecked."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

lerobot_reason = "needs the optional lerobot extra (Python >= 3.12)"


def _verifier():
    spec = importlib.util.spec_from_file_location("verify_rollouts", Path(__file__).parents[2] / "recipes" /
                                                  "verify_rollouts.py")
    verify = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verify)
    return verify


def _tamper_action(dataset: Path, row: int) -> None:
    """Move every target of one parquet row 10 % towards 0 (as a hand edit of the file would)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    (path,) = sorted((dataset / "data").rglob("*.parquet"))
    table = pq.read_table(path)
    actions = table.column("action").to_pylist()
    actions[row] = [0.9 * a for a in actions[row]]
    i = table.schema.get_field_index("action")
    table = table.set_column(i, table.schema.field(i), pa.array(actions, type=table.schema.field(i).type))
    pq.write_table(table, path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import main
    out = tmp_path_factory.mktemp("verify") / "ds"
    assert main(["--rollouts", "2", "--policy", "sweep", "--max-steps", "60", "--task", "t", "--no-cameras",
                 "--environment-state", "--out", str(out)]) == 0
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil
    shutil.copytree(src, dst)
    return dst


def test_an_untouched_dataset_checks_every_action(exported, capsys):
    assert _verifier().main(["--dataset", str(exported)]) == 0
    out = capsys.readouterr().out
    assert "OK: every episode replays" in out and "UNCHECKED" not in out


@pytest.mark.parametrize("row", [59, 119, 30])  # episode 0's last action, episode 1's last, one mid-episode
def test_a_changed_action_is_found_the_last_one_included(exported, tmp_path, capsys, row):
    ds = _copy(exported, tmp_path / "ds")
    _tamper_action(ds, row)
    assert _verifier().main(["--dataset", str(ds)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    if row in (59, 119):
        assert f"episode {row // 60}: after its last action the replay is not where the export was" in out


def test_without_the_record_of_the_ends_the_last_actions_are_named_unchecked(exported, tmp_path, capsys):
    from robogym_ros.export.rollouts import ROLLOUT_ENDS
    ds = _copy(exported, tmp_path / "ds")
    (ds / ROLLOUT_ENDS).unlink()
    assert _verifier().main(["--dataset", str(ds)]) == 0
    out = capsys.readouterr().out
    assert "UNCHECKED: each episode's last action" in out


@pytest.fixture(scope="module")
def exported_grasp_relative(tmp_path_factory):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import main
    out = tmp_path_factory.mktemp("verify_layouts") / "ds"
    assert main(["--rollouts", "2", "--policy", "sweep", "--max-steps", "40", "--task", "t", "--no-cameras",
                 "--environment-state", "--grasp-frames", "--relative-actions", "--out", str(out)]) == 0
    return out


def test_grasp_frames_and_relative_actions_are_replayed_and_checked(exported_grasp_relative, capsys):
    import json
    layout = json.loads((exported_grasp_relative / "meta" / "robogym.json").read_text())
    assert layout["environment_state"] == "objects_grasp" and layout["action_mode"] == "relative"
    assert _verifier().main(["--dataset", str(exported_grasp_relative)]) == 0
    out = capsys.readouterr().out
    assert "(objects_grasp), relative actions" in out and "OK: every episode replays" in out


def test_a_changed_relative_action_or_grasp_frame_is_found(exported_grasp_relative, tmp_path, capsys):
    """Positive controls: a relative label that no longer adds up to the target sent, and a grasp
    frame that is not the replayed joints' kinematics."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for column in ("action", "observation.environment_state"):
        ds = _copy(exported_grasp_relative, tmp_path / column)
        (path,) = sorted((ds / "data").rglob("*.parquet"))
        table = pq.read_table(path)
        values = table.column(column).to_pylist()
        values[5] = [v + 1e-3 for v in values[5][:-1]] + [values[5][-1] + 1e-3]
        if column == "observation.environment_state":
            values[5] = values[5][:14] + [v + 1e-3 for v in values[5][14:]]  # the grasp part only
        i = table.schema.get_field_index(column)
        pq.write_table(table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type)),
                       path)
        assert _verifier().main(["--dataset", str(ds)]) == 1
        out = capsys.readouterr().out
        assert ("relative action + state" if column == "action" else "environment_state error") in out, column


def test_the_symmetric_layout_is_replayed_and_checked(tmp_path, capsys):
    """--symmetric-objects: each frame's numbers are those of the replayed poses (envs.block_symmetry);
    positive control: one frame's block orientation numbers moved is found."""
    pytest.importorskip("lerobot", reason=lerobot_reason)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from robogym_ros.envs.environment_state import environment_state_names
    from robogym_ros.export.lerobot import main
    out = tmp_path / "ds"
    assert main(["--rollouts", "1", "--policy", "sweep", "--max-steps", "30", "--task", "t", "--no-cameras",
                 "--environment-state", "--symmetric-objects", "--out", str(out)]) == 0
    assert _verifier().main(["--dataset", str(out)]) == 0
    assert "(objects_symmetric)" in capsys.readouterr().out
    (path,) = sorted((out / "data").rglob("*.parquet"))
    table = pq.read_table(path)
    values = table.column("observation.environment_state").to_pylist()
    assert len(values[0]) == len(environment_state_names("objects_symmetric")) == 16
    values[7][environment_state_names("objects_symmetric").index("block.side_c4")] += 1e-3
    i = table.schema.get_field_index("observation.environment_state")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type)), path)
    assert _verifier().main(["--dataset", str(out)]) == 1
    assert "environment_state error" in capsys.readouterr().out
