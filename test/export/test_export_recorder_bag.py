"""A bag made by the real recorder (``robogym_recorder --record``) from a real sim is exportable:
the export's plan (robogym_ros.export.bag, no lerobot needed) cuts it at the sim's own reset ticks
and gives each frame the state of its tick and, as action, the targets the sim applied on the next
tick, equal to what the sim published live and to the commands the test sent (test/realbag.py).
Writing the dataset needs lerobot: test_lerobot_export.py exports a bag recorded the same way.
"""
from __future__ import annotations

import pytest
from realbag import SIM_PARAMS, as_arrays, check_episodes, record, targets_observer

from robogym_ros.export.bag import plan_bag


@pytest.mark.long
def test_a_real_recorder_bag_exports_with_the_targets_the_sim_applied(make_sim, tmp_path):
    _, obs = make_sim(observer_cls=targets_observer(), **SIM_PARAMS)
    live = as_arrays(record(obs, tmp_path))
    plan = plan_bag(tmp_path / "bag")
    assert plan.notes == [] and plan.fps == round(1e9 / live["period_ns"]) and list(plan.cameras) == ["overhead"]
    assert list(plan.joint_names) == live["names"]
    assert all(ep.complete_start for ep in plan.episodes)
    check_episodes([(ep.first_tick_ns, ep.last_tick_ns, ep.frame_stamps_ns, ep.state, ep.action)
                    for ep in plan.episodes], live)
