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


# how the first run of the test trains, where it is not the recipe's default
KEPT = ["--no-env-std-floor", "--lr", "1e-4", "--dropout", "0.1"]
GRASP = ["--environment-state", "objects_grasp", "--relative-actions"]


def test_two_checkpoints_are_each_a_row_of_the_table(tmp_path, capsys):
    pytest.importorskip("lerobot", reason="needs the optional lerobot extra (Python >= 3.12)")
    out = tmp_path / "recipe"
    assert _recipe().main(["--out", str(out), "--demos", "2", "--steps", "4", "--eval-steps", "2", "4",
                           "--eval-episodes", "1", "--log-freq", "1", "--no-expert", "--noise-rad", "0.02",
                           "--noisy-share", "0.5", "--dim-model", "32", "--n-heads", "2", "--dim-feedforward", "64",
                           "--encoder-layers", "1", "--decoder-layers", "2", "--batch-size", "4",
                           "--environment-state", "objects_grasp", "--relative-actions", *KEPT]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| ") and "rad x" in line]
    assert [r.split(" | ")[5] for r in rows] == [f"{n} (cosine lr), decoder layers 2" for n in (2, 4)], printed
    assert all(r.startswith("| 2 of 2 | 0.02 rad x 0.5 | measured | objects_grasp | relative |")
               and "Wilson 95 %" in r for r in rows), rows
    # the policy is evaluated with the inputs and outputs it learned: the grasp frames, relative actions
    assert "--env.environment_state=objects_grasp --env.action_mode=relative" in printed
    # each episode's furthest stage, from the staged reward lerobot-eval saw (--env.reward_type=staged)
    assert "--env.reward_type=staged" in printed
    assert printed.count("failed episodes by the furthest stage reached: ") == 2, printed
    for steps in (2, 4):
        kept = json.loads((out / f"outcomes_{steps:06d}_100000_1.json").read_text())
        assert kept["seeds"] == [100000]
        assert kept["furthest_stage"][0] in ("none", "reach", "grasp", "lift", "handover", "release", "place")
        assert (out / "train" / "checkpoints" / f"{steps:06d}" / "pretrained_model").is_dir()
    # lerobot-train ran the schedule asked for: its rate falls from --lr to a hundredth at --steps
    config = json.loads((out / "train" / "checkpoints" / "000004" / "pretrained_model" / "train_config.json")
                        .read_text())
    assert config["scheduler"]["type"] == "cosine_decay_with_warmup"
    assert (config["scheduler"]["peak_lr"], config["scheduler"]["num_decay_steps"]) == (1e-4, 4)
    assert config["scheduler"]["decay_lr"] == pytest.approx(1e-6)
    assert (config["policy"]["n_encoder_layers"], config["policy"]["n_decoder_layers"]) == (1, 2)
    # the checkpoints kept were trained on the measured std and the cosine schedule: a row saying
    # "floor" or a constant rate would be false
    stats = (out / "demos_state" / "meta" / "stats.json").read_text()
    small = ["--out", str(out), "--demos", "2", "--steps", "4", *GRASP]
    with pytest.raises(SystemExit, match="trained with environment state std measured, not the environment state "
                                         "std floor asked for"):
        _recipe().main([*small, *KEPT[1:], "--decoder-layers", "2"])
    with pytest.raises(SystemExit, match="trained with lr schedule cosine, not the lr schedule constant asked for"):
        _recipe().main([*small, *KEPT, "--decoder-layers", "2", "--lr-schedule", "constant"])
    with pytest.raises(SystemExit, match="trained with decoder layers 2, not the decoder layers 1 asked for"):
        _recipe().main([*small, *KEPT])
    with pytest.raises(SystemExit, match="trained with lr 0.0001, dropout 0.1, not the lr 0.0005, dropout 0.0 asked"):
        _recipe().main([*small, "--no-env-std-floor", "--decoder-layers", "2"])
    assert (out / "demos_state" / "meta" / "stats.json").read_text() == stats
    # the dataset kept holds relative actions: a row saying "absolute" would be false
    with pytest.raises(SystemExit, match="not the .* asked for: change --environment-state / --relative-actions"):
        _recipe().main(["--out", str(out), "--demos", "2", "--steps", "4", "--environment-state", "objects_grasp"])


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
