"""Test environment: DDS stays on this host, each run gets its own domain, GL is headless.

Set before anything imports rclpy or mujoco, and inherited by every process a test starts.
"""
import os

# Fast DDS would otherwise multicast on the network interface, which this workplace forbids.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
# Parallel runs on one machine must never hear each other: a domain per run (0..101 is the
# portable range; 1..99 keeps clear of 0, the default every stray ROS process uses).
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYTHONUNBUFFERED", "1")


import pytest  # noqa: E402  (after the environment above)


@pytest.fixture(scope="session")
def ros():
    import rclpy
    rclpy.init()
    yield
    rclpy.try_shutdown()


@pytest.fixture
def make_sim(ros, tmp_path):
    """Start sims (each with an observer); all are stopped after the test, cleanly."""
    from simharness import Observer, new_namespace, start_sim
    started = []

    def start(observer_cls=Observer, observer_args=(), **params):
        sim, obs = start_sim(new_namespace(), tmp_path, observer_cls, observer_args, **params)
        started.append((sim, obs))
        return sim, obs

    yield start
    for sim, obs in started:
        obs.close()
        assert sim.stop() == 0, sim.output()


@pytest.fixture(scope="session")
def long_ticks():
    """900 real ticks (9 s of sim time) of the scripted motion, decimation 5."""
    from robogym_ros.sim.physics import Physics, default_model_path
    from robogym_ros.sim.trajectory import targets_at
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    ticks = []
    for k in range(900):
        physics.set_targets(targets_at(k * physics.control_dt_s))
        assert not physics.step_tick()
        ticks.append(physics.snapshot())
    return physics, ticks
