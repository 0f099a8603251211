"""Wilson's interval and Fisher's exact test against published values, and recipes/compare_evals.py
on files written by write_outcomes."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from robogym_ros.export.evaluation import fisher_exact, outcomes, read_outcomes, wilson_interval, write_outcomes


@pytest.mark.parametrize("k, n, low, high", [
    (81, 263, 0.2553, 0.3662),  # Newcombe (1998), Statistics in Medicine 17:857, example (method 3)
    (0, 10, 0.0, 0.2775),  # Newcombe's 0 of 10 example
    (10, 10, 0.7225, 1.0),
    (15, 148, 0.0624, 0.1605),  # Newcombe's 15 of 148 example
])
def test_wilson_interval_matches_published_values(k, n, low, high):
    got = wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=6e-5)


def test_fisher_exact_matches_known_tables():
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(17 / 35)  # Fisher's lady tasting tea: 0.4857
    assert fisher_exact(4, 4, 0, 4) == pytest.approx(2 / 70)  # all four right: 1/70 each tail
    assert fisher_exact(5, 10, 5, 10) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="run b: successes must be an integer in 0 .. n"):
        fisher_exact(1, 2, 3, 2)
    with pytest.raises(ValueError, match="successes must be an integer in 0 .. n"):
        wilson_interval(5, 4)


def test_outcomes_name_each_seed_and_compare_says_whether_runs_differ(tmp_path, capsys):
    info = {"per_task": [{"task_group": "g", "task_id": 0, "metrics": {"successes": [True, False, True]}}]}
    rows = outcomes(info, 100000)
    assert rows == [(100000, True), (100001, False), (100002, True)]
    json_path, csv_path = write_outcomes(tmp_path / "a", rows)
    assert read_outcomes(json_path) == rows
    assert csv_path.read_text().splitlines() == ["seed,success", "100000,1", "100001,0", "100002,1"]
    spec = importlib.util.spec_from_file_location("compare_evals", Path(__file__).parents[2] / "recipes" /
                                                  "compare_evals.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    write_outcomes(tmp_path / "good", [(s, s < 170) for s in range(200)])  # 170 of 200
    write_outcomes(tmp_path / "bad", [(s, s < 100) for s in range(200)])  # 100 of 200
    write_outcomes(tmp_path / "close", [(s, s < 165) for s in range(200)])  # 165 of 200
    assert compare.main([str(tmp_path / "good.json"), str(tmp_path / "bad.json")]) == 0
    out = capsys.readouterr().out
    assert "170 of 200 = 85.0 %" in out and "they differ beyond chance" in out
    assert compare.main([str(tmp_path / "good.json"), str(tmp_path / "close.json")]) == 0
    assert "no difference beyond chance" in capsys.readouterr().out


def test_each_failed_episode_is_named_by_the_furthest_stage_its_staged_reward_reached(tmp_path):
    from robogym_ros.export.evaluation import failures_by_stage, max_rewards
    from robogym_ros.task.goals import STAGES, TOP_STAGE, stage_of_staged_reward
    # the inverse of the staged reward (goals.reward: (stage - 6) / 6), stage for stage
    for k in range(TOP_STAGE + 1):
        assert stage_of_staged_reward((k - TOP_STAGE) / TOP_STAGE) == k
    with pytest.raises(ValueError, match="no staged reward"):
        stage_of_staged_reward(-0.5 / TOP_STAGE)  # between two stages
    with pytest.raises(ValueError, match="no staged reward"):
        stage_of_staged_reward(0.5)
    info = {"per_task": [{"metrics": {"successes": [True, False, False, False],
                                      "max_rewards": [0.0, -2 / 6, -2 / 6, -4 / 6]}}]}
    rows = outcomes(info, 100000)
    furthest = [STAGES[stage_of_staged_reward(r)] for r in max_rewards(info)]
    assert furthest == ["place", "handover", "handover", "grasp"]
    assert failures_by_stage(rows, furthest, list(STAGES)) == \
        "failed episodes by the furthest stage reached: grasp 1, handover 2"
    assert failures_by_stage(rows[:1], furthest[:1], list(STAGES)).endswith(": no episode failed")
    with pytest.raises(ValueError, match=r"seeds \[100001\]: success and furthest stage disagree"):
        failures_by_stage(rows, ["place", "place", "handover", "grasp"], list(STAGES))  # a failure at place
    with pytest.raises(ValueError, match=r"seeds \[100000\]: success and furthest stage disagree"):
        failures_by_stage(rows, ["lift", "handover", "handover", "grasp"], list(STAGES))  # a success below it
    json_path, csv_path = write_outcomes(tmp_path / "s", rows, furthest)
    assert read_outcomes(json_path) == rows
    assert csv_path.read_text().splitlines()[:2] == ["seed,success,furthest_stage", "100000,1,place"]
    with pytest.raises(ValueError, match="3 furthest stages for 4 episodes"):
        write_outcomes(tmp_path / "t", rows, furthest[:3])
    with pytest.raises(ValueError, match="no per-episode max rewards"):
        max_rewards({"per_task": [{"metrics": {"successes": [True]}}]})
