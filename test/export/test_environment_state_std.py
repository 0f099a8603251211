"""The environment state's normalisation floor: a component the demonstrations hold still (the tray's
height and tilt) is normalised by at least ENVIRONMENT_STATE_STD_FLOOR, the measured spread is kept,
and the measured values can be put back exactly."""
from __future__ import annotations

import json

import pytest

from robogym_ros.export.dataset import (
    ENVIRONMENT_STATE,
    ENVIRONMENT_STATE_STD_FLOOR,
    MEASURED_STD,
    environment_state_names,
    floor_environment_state_std,
)

# the spread of the 200 clean demonstrations' environment state (meta/stats.json, 2026-12-06)
MEASURED = [0.0257, 0.203, 0.029, 0.49, 0.409, 0.424, 0.531, 0.000459, 0.289, 2.13e-05, 0.324, 5.8e-05, 6.23e-05,
            0.734]


def _write(root, layout: str, measured: list[float]):
    (root / "meta").mkdir(parents=True)
    stats = {ENVIRONMENT_STATE: {"mean": [0.0] * len(measured), "std": list(measured)}, "action": {"std": [1e-9] * 12}}
    (root / "meta" / "stats.json").write_text(json.dumps(stats))
    info = {"features": {ENVIRONMENT_STATE: {"names": environment_state_names(layout)}}}  # LeRobot's meta/info.json
    (root / "meta" / "info.json").write_text(json.dumps(info))
    return root


@pytest.fixture
def dataset(tmp_path):
    return _write(tmp_path, "objects", MEASURED)


def _std(root):
    return json.loads((root / "meta" / "stats.json").read_text())[ENVIRONMENT_STATE]["std"]


def test_components_held_still_are_normalised_by_the_floor_and_the_rest_by_their_spread(dataset):
    raised = floor_environment_state_std(dataset)
    assert raised == ["tray.x", "tray.z", "tray.qx", "tray.qy"]
    floors = [ENVIRONMENT_STATE_STD_FLOOR[n.split(".")[1]] for n in environment_state_names()]
    assert _std(dataset) == [max(m, f) for m, f in zip(MEASURED, floors)]
    assert _std(dataset)[environment_state_names().index("tray.z")] == 0.01  # 1 cm, not 0.02 mm
    assert json.loads((dataset / MEASURED_STD).read_text()) == dict(zip(environment_state_names(), MEASURED))
    stats = json.loads((dataset / "meta" / "stats.json").read_text())
    assert stats["action"] == {"std": [1e-9] * 12}  # no other feature is touched


def test_a_second_call_changes_nothing_and_the_measured_spread_comes_back_exactly(dataset):
    floor_environment_state_std(dataset)
    once = (dataset / "meta" / "stats.json").read_text()
    floor_environment_state_std(dataset)
    assert (dataset / "meta" / "stats.json").read_text() == once
    floor_environment_state_std(dataset, floor=False)
    assert _std(dataset) == MEASURED


def test_a_dataset_without_the_environment_state_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "stats.json").write_text(json.dumps({"action": {"std": [1.0]}}))
    with pytest.raises(ValueError, match="exported without --environment-state"):
        floor_environment_state_std(tmp_path)
    assert not (tmp_path / MEASURED_STD).exists()


def test_the_symmetric_layout_floors_its_orientation_numbers_held_still_too(tmp_path):
    """objects_symmetric: the tray lying flat holds up2, long_c2 and long_s2 still (1, 0, 0)."""
    names = environment_state_names("objects_symmetric")
    measured = [0.0257, 0.203, 0.029, 0.429, 0.384, 0.700, 0.473, 0.448, 0.00046, 0.289, 2e-05, 2e-05, 0.0, 0.0,
                0.709, 0.705]  # the 200 clean demonstrations' spread (2026-12-07)
    root = _write(tmp_path / "sym", "objects_symmetric", measured)
    assert floor_environment_state_std(root) == ["tray.x", "tray.z", "tray.up2", "tray.long_c2", "tray.long_s2"]
    assert dict(zip(names, _std(root)))["tray.long_c2"] == 0.05
    assert dict(zip(names, _std(root)))["block.side_c4"] == 0.473  # spread by the demonstrations: as measured
