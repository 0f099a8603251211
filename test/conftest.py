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


import faulthandler  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402  (after the environment above)

# The harnesses (sims, MCP agents, a browser, a recorded bag) live in test/harness/: every test
# folder imports them by name.
sys.path.insert(0, str(Path(__file__).parent / "harness"))

# What a ROS install has and no registry does (../shared/ros-toolchain builds it): a test that
# skips for the want of one of these is marked ``toolchain``, so that ``./dev test-ros`` (and CI)
# runs it there. A skip reason that says one is missing is matched here.
TOOLCHAIN_MISSING = re.compile(
    r"(simulation_interfaces|control_msgs|launch_ros|tf2_msgs|ros2cli) is not installed"
    r"|No module named '(simulation_interfaces|control_msgs|launch_ros|launch|tf2_msgs|ros2cli)\b"
    r"|no ROS environment")
TOOLCHAIN_SUITE = os.environ.get("ROBOGYM_TEST_SUITE") == "toolchain"  # set by ./dev test-ros


def pytest_configure(config):
    # SIGUSR1 prints where every thread of the test process is, even one stuck in C: CI sends it to
    # a suite that overruns its time before interrupting it (.ci/suite.sh), so a hang says where.
    # To a copy of the terminal's stderr: pytest's capture holds fd 2 while a test runs.
    faulthandler.register(signal.SIGUSR1, file=os.dup(sys.stderr.fileno()), all_threads=True)
    config.addinivalue_line("markers", "toolchain: needs the ROS 2 tools no registry has (launch_ros, the ros2 CLI, "
                            "control_msgs, simulation_interfaces, tf2_msgs): ./dev test-ros runs these")
    config.addinivalue_line("markers", "long: a long run of real processes (about 8 s or more here); ./dev test "
                            "leaves these to ./dev test-long, CI runs both, plain pytest runs everything")


def pytest_ignore_collect(collection_path, config):
    """The toolchain suite (``-m toolchain``) collects only the files that hold toolchain tests:
    importing the others would skip whole modules for extras that suite never needs (mcp, Ray,
    LeRobot: the main suite runs those), and its table would list those skips as its own."""
    if not TOOLCHAIN_SUITE or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if "pytest.mark.toolchain" not in collection_path.read_text() else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that skips because the toolchain is missing must be one that ./dev test-ros runs
    (marked ``toolchain``); there, such a skip means the toolchain is broken: both fail."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return
    reason = str(report.longrepr[2])
    if not TOOLCHAIN_MISSING.search(reason):
        return
    marked = item.get_closest_marker("toolchain") is not None
    if not marked:
        report.outcome, report.longrepr = "failed", (
            f"skipped for the want of the ROS toolchain ({reason}) but not marked toolchain: "
            "./dev test-ros would never run it; add @pytest.mark.toolchain")
    elif TOOLCHAIN_SUITE:
        report.outcome, report.longrepr = "failed", (
            f"the toolchain suite runs without the toolchain: {reason} "
            "(source ../shared/ros-toolchain's activate-ros.sh)")


SCHEDULING = (os.sched_getscheduler(0), os.sched_getparam(0)) if hasattr(os, "sched_getscheduler") else None


@pytest.fixture(autouse=True)
def scheduling_left_as_it_was():
    """Every sim a test starts inherits this process's scheduling: a test that leaves it real-time
    (a library that makes its caller SCHED_FIFO) would make every later sim starve itself. Such a
    test fails here, named, and the policy is put back for the tests after it."""
    yield
    if SCHEDULING is None:
        return
    after = (os.sched_getscheduler(0), os.sched_getparam(0))
    if after != SCHEDULING:
        os.sched_setscheduler(0, *SCHEDULING)
        pytest.fail(f"this test (or a fixture of it) left the test process's scheduling policy {after[0]} "
                    f"(priority {after[1].sched_priority}), not {SCHEDULING[0]}: every process started later "
                    "inherits it")


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
    from robogym_ros.nodes.motion.scripted_motion import targets_at
    from robogym_ros.sim.physics import Physics
    from robogym_ros.task.scene import default_model_path
    physics = Physics(default_model_path(), 0.002, 5, seed=0)
    ticks = []
    for k in range(900):
        physics.set_targets(targets_at(k * physics.control_dt_s))
        assert not physics.step_tick()
        ticks.append(physics.snapshot())
    return physics, ticks
