"""The Ray fleet (robogym_ros.envs.vector.ray_fleet): batched envs as Ray actors, one VectorEnv, on a
local Ray cluster. Sub-env j must be a single env bit for bit, as in the batched env; the
positive control gives one sub-env a wrong seed and the same comparison must catch it.

Skipped where ray is not installed (CI installs [standalone,test]; ``pip install '.[ray]'``).
"""
from __future__ import annotations

import numpy as np
import pytest
from batched_reference import compare_with_singles, shared_pairs

ray = pytest.importorskip("ray", reason="the Ray fleet needs ray: pip install 'robogym_ros[ray]' "
                                         "(CI installs it)")

from robogym_ros.envs.vector.ray_fleet import RayFleetVectorEnv  # noqa: E402  (after the skip)

SEEDS = [20, 21, 22, 23]
KWARGS = {"max_episode_steps": 4}


@pytest.fixture(scope="module")
def fleet():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    fleet = RayFleetVectorEnv(2, 2, num_threads=1, **KWARGS)  # 2 actors x 2 scenes = 4 sub-envs
    yield fleet
    fleet.close()
    ray.shutdown()


def test_a_fleet_of_two_actors_equals_single_envs_through_autoresets(fleet):
    assert fleet.num_envs == 4 and fleet.action_space.shape == (4, 12)
    result = compare_with_singles(fleet, SEEDS, 10, single_kwargs=KWARGS)
    assert result.mismatches == [], result.mismatches
    assert (result.autoresets >= 2).all() and result.truncations == 8
    assert shared_pairs(result.returned) == []
    assert all(a.flags.writeable for a in result.returned)  # never Ray's read-only object-store views


def test_the_comparison_catches_a_wrong_seed_on_one_actor(fleet):
    wrong = compare_with_singles(fleet, SEEDS, 2, single_kwargs=KWARGS, vec_seeds=[20, 21, 22, 99])
    assert wrong.mismatches and all("sub-env 3" in m for m in wrong.mismatches if "sub-env" in m)


def test_bad_input_is_refused_before_any_actor_is_touched(fleet):
    with pytest.raises(ValueError, match="seed of sub-env 3"):
        fleet.reset(seed=[1, 2, 3, 2**31])
    with pytest.raises(ValueError, match="reset_mask"):
        fleet.reset(seed=0, options={"reset_mask": np.ones(4, dtype=bool)})
    with pytest.raises(ValueError, match="shape"):
        fleet.step(np.zeros((2, 12), dtype=np.float32))
