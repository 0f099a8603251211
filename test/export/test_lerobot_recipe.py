"""recipes/lerobot_recipe.py made small: export, lerobot-train and lerobot-eval of two checkpoints,
each a row of the table with its success, Wilson interval and per-seed outcomes; seeds that meet
the demonstrations' and checkpoints the run does not save are refused before anything runs."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

RECIPE = Path(__file__).parents[2] / "recipes" / "lerobot_recipe.py"


def _recipe():
    spec = importlib.util.spec_from_file_location("lerobot_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_checkpoints_are_each_a_row_of_the_table(tmp_path, capsys):
    pytest.importorskip("lerobot", reason="needs the optional lerobot extra (Python >= 3.12)")
    out = tmp_path / "recipe"
    assert _recipe().main(["--out", str(out), "--demos", "2", "--steps", "4", "--eval-steps", "2", "4",
                           "--eval-episodes", "1", "--log-freq", "1", "--no-expert", "--noise-rad", "0.02",
                           "--noisy-share", "0.5", "--dim-model", "32", "--n-heads", "2", "--dim-feedforward", "64",
                           "--encoder-layers", "1", "--batch-size", "4"]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| ") and "rad x" in line]
    assert [r.split(" | ")[3] for r in rows] == ["2", "4"], printed
    assert all(r.startswith("| 2 of 2 | 0.02 rad x 0.5 | measured |") and "Wilson 95 %" in r for r in rows), rows
    for steps in (2, 4):
        seeds = json.loads((out / f"outcomes_{steps:06d}_100000_1.json").read_text())["seeds"]
        assert seeds == [100000]
        assert (out / "train" / "checkpoints" / f"{steps:06d}" / "pretrained_model").is_dir()
    # the checkpoints kept were trained on the measured std: a row saying "floor" would be false
    stats = (out / "demos_state" / "meta" / "stats.json").read_text()
    with pytest.raises(SystemExit, match="trained with the environment state's measured std, not the floor"):
        _recipe().main(["--out", str(out), "--demos", "2", "--steps", "4", "--env-std-floor"])
    assert (out / "demos_state" / "meta" / "stats.json").read_text() == stats


@pytest.mark.parametrize("args, says", [
    (["--eval-steps", "3", "--steps", "4", "--save-freq", "2"], "must be checkpoints of the run"),
    (["--eval-steps", "8", "--steps", "4"], "must be checkpoints of the run"),
    (["--demos", "300", "--eval-seed", "200"], "meet the demonstrations' seeds 0 .. 299"),
])
def test_evaluations_the_run_cannot_give_are_refused_before_anything_runs(tmp_path, capsys, args, says):
    with pytest.raises(SystemExit) as exit_:
        _recipe().main(["--out", str(tmp_path / "recipe"), *args])
    assert exit_.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "recipe").exists()
