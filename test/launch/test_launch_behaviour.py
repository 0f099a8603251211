"""What the launch files do, not only what they declare: the launch ends when a sim cannot start
or dies (non-zero exit), an unknown params-file key is named, multi_sim's seeds start at the
params file's seed.

The last tests run the real `ros2 launch` (launch, launch_ros, the ros2 CLI and this package
in the ament index: a ROS install, or shared/ros-toolchain); elsewhere they skip with the reason.
The first ones run the launch files' own functions everywhere, with launch stood in for.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from robogym_ros.tools.launch_support import EXIT_STARTUP_ERROR, file_parameters, shutdown_reason, sim_exit

pytestmark = pytest.mark.toolchain  # ./dev test-ros: under ../shared/ros-toolchain

ROOT = Path(__file__).parents[2]


def test_a_sim_that_exits_ends_the_launch_unless_respawned():
    assert sim_exit("lab1/robogym_sim", EXIT_STARTUP_ERROR, respawn=False)[0] == "fail"
    action, reason = sim_exit("lab1/robogym_sim", EXIT_STARTUP_ERROR, respawn=True)
    assert action == "fail" and "not respawned, it would fail the same way" in reason  # no endless loop
    assert sim_exit("robogym_sim", 3, respawn=False) == ("fail", "robogym_sim died (exit 3); respawn:=true restarts it")
    assert sim_exit("robogym_sim", -9, respawn=False)[1].startswith("robogym_sim died (killed by signal 9)")
    assert sim_exit("robogym_sim", 3, respawn=True) == ("respawn", "")
    assert sim_exit("robogym_sim", 0, respawn=False) == ("stop", "robogym_sim exited")


def test_the_launch_files_exit_handler_shuts_down_raises_or_lets_be():
    assert shutdown_reason("robogym_sim", 0, respawn=False, shutting_down=False) == "robogym_sim exited"
    with pytest.raises(RuntimeError, match=r"robogym_sim died \(exit 3\)"):
        shutdown_reason("robogym_sim", 3, respawn=False, shutting_down=False)
    assert shutdown_reason("robogym_sim", 3, respawn=True, shutting_down=False) is None  # launch respawns it
    assert shutdown_reason("robogym_sim", 3, respawn=False, shutting_down=True) is None  # Ctrl-C: expected


def test_file_parameters_merges_every_node_section():
    doc = {"/**": {"ros__parameters": {"seed": 10, "decimation": 4}},
           "robogym_sim": {"ros__parameters": {"decimation": 2}}, "other": "not a section"}
    assert file_parameters(doc) == {"seed": 10, "decimation": 2}
    assert file_parameters(None) == {} and file_parameters({"/**": {"ros__parameters": None}}) == {}


# --- multi_sim.launch.py's own sim_nodes, with launch stood in for ------------------------------

class _Stand:
    """Anything launch: records what it was called with."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _Configuration:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


def _fake_launch(monkeypatch):
    """launch and launch_ros modules whose every name is _Stand (LaunchConfiguration reads a dict)."""
    for name in ("launch", "launch.actions", "launch.event_handlers", "launch.events", "launch.substitutions",
                 "launch_ros", "launch_ros.actions", "launch_ros.substitutions"):
        module = types.ModuleType(name)
        module.__getattr__ = lambda attr: _Configuration if attr == "LaunchConfiguration" else _Stand
        monkeypatch.setitem(sys.modules, name, module)


def multi_sim_seeds(monkeypatch, tmp_path, params_text: str, **arguments) -> list[int]:
    _fake_launch(monkeypatch)
    path = ROOT / "launch" / "multi_sim.launch.py"
    spec = importlib.util.spec_from_file_location("multi_sim_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    params_file = tmp_path / "fleet.yaml"
    params_file.write_text(params_text)
    from robogym_ros.params import FROM_PARAMS_FILE, SIM_PARAMS
    context = {p.name: FROM_PARAMS_FILE for p in SIM_PARAMS}
    context |= {"count": "3", "prefix": "sim", "params_file": str(params_file), **arguments}
    nodes = [a for a in module.sim_nodes(context) if a.kwargs.get("executable") == "robogym_sim"]
    return [n.kwargs["parameters"][1]["seed"] for n in nodes]


def test_multi_sim_seeds_start_at_the_params_files_seed(monkeypatch, tmp_path):
    fleet = "/**:\n  ros__parameters:\n    seed: 10\n    decimation: 4\n"
    assert multi_sim_seeds(monkeypatch, tmp_path, fleet) == [10, 11, 12]  # was 0, 1, 2
    assert multi_sim_seeds(monkeypatch, tmp_path, fleet, seed="5") == [5, 6, 7]  # the argument wins
    assert multi_sim_seeds(monkeypatch, tmp_path, "/**:\n  ros__parameters:\n    decimation: 4\n") == [0, 1, 2]
    with pytest.raises(ValueError, match="seed = -1 is outside its range"):
        multi_sim_seeds(monkeypatch, tmp_path, "/**:\n  ros__parameters:\n    seed: -1\n")


def test_multi_sim_refusals_name_the_argument_the_user_passed(monkeypatch, tmp_path):
    fleet = "/**:\n  ros__parameters:\n    decimation: 4\n"
    with pytest.raises(ValueError, match=r"^count must be an integer >= 1, got 'abc'$"):
        multi_sim_seeds(monkeypatch, tmp_path, fleet, count="abc")
    with pytest.raises(ValueError, match=r"^count must be an integer >= 1, got 0$"):
        multi_sim_seeds(monkeypatch, tmp_path, fleet, count="0")
    # seed + count - 1 over the limit: the refusal names the seed passed and the largest allowed
    with pytest.raises(ValueError, match=r"^seed must be in 0 \.\. 2147483646 with count:=2 .* got 2147483647$"):
        multi_sim_seeds(monkeypatch, tmp_path, fleet, seed="2147483647", count="2")
    assert multi_sim_seeds(monkeypatch, tmp_path, fleet, seed="2147483646", count="2") == [2147483646, 2147483647]


# --- the real `ros2 launch` ---------------------------------------------------------------------

def _ros2_launch_missing() -> str:
    if importlib.util.find_spec("launch_ros") is None or shutil.which("ros2") is None:
        return "launch_ros / the ros2 CLI are not installed (no ROS install here; they are on no registry)"
    prefix = subprocess.run(["ros2", "pkg", "prefix", "robogym_ros"], capture_output=True, text=True)
    if prefix.returncode != 0:
        return "robogym_ros is not in the ament index (colcon build / the toolchain's install)"
    return ""


_MISSING = _ros2_launch_missing() if os.environ.get("AMENT_PREFIX_PATH") else \
    "no ROS environment (AMENT_PREFIX_PATH unset): `ros2 launch` needs a ROS install or shared/ros-toolchain"
needs_ros2_launch = pytest.mark.skipif(bool(_MISSING), reason=_MISSING)
BAD_DECIMATION = "/**:\n  ros__parameters:\n    decimation: 0\n    camera_period_s: 0.0\n"


class Launch:
    """`ros2 launch launch/<file> args...` in a session of its own, output to a file.

    By path, so the files of this tree are what runs (`ros2 launch robogym_ros <file>` finds
    files in the installed share directory only: os.walk does not follow an editable install's
    symlinked launch/); the nodes come from the ament index as in any launch.
    """

    def __init__(self, tmp_path: Path, launch_file: str, *arguments: str):
        self.log = tmp_path / f"{launch_file}_{time.monotonic_ns()}.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(["ros2", "launch", str(ROOT / "launch" / launch_file), *arguments],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text()

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def wait_for(self, text: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.output():
            assert self.proc.poll() is None and time.monotonic() < deadline, \
                f"no {text!r} (exit {self.proc.poll()}):\n{self.output()}"
            time.sleep(0.2)

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            if self.wait(30) is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture
def launches(tmp_path):
    started: list[Launch] = []

    def start(launch_file: str, *arguments: str) -> Launch:
        started.append(Launch(tmp_path, launch_file, *arguments))
        return started[-1]

    yield start
    for launch in started:
        launch.stop()


def params_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / f"params_{time.monotonic_ns()}.yaml"
    path.write_text(text)
    return str(path)


@needs_ros2_launch
@pytest.mark.parametrize("launch_file, extra", [
    ("sim.launch.py", ()), ("sim.launch.py", ("respawn:=true",)),
    ("bringup.launch.py", ("duration_s:=20",)), ("multi_sim.launch.py", ("count:=2",))])
def test_a_sim_that_cannot_start_ends_the_launch_with_exit_1(launches, tmp_path, launch_file, extra):
    launch = launches(launch_file, f"params_file:={params_file(tmp_path, BAD_DECIMATION)}", *extra)
    code = launch.wait(60)
    out = launch.output()
    assert code == 1, f"exit {code}:\n{out}"
    assert "decimation = 0 is outside its range 1 .. 1000" in out, out  # the sim's FATAL line
    assert "could not start" in out, out


@needs_ros2_launch
def test_a_sim_that_dies_ends_the_launch_with_exit_1_and_a_clean_stop_exits_0(launches, tmp_path):
    ok = params_file(tmp_path, "/**:\n  ros__parameters:\n    camera_period_s: 0.0\n    frobnicate: 7\n")
    launch = launches("sim.launch.py", f"params_file:={ok}", f"namespace:=die{os.getpid()}")
    launch.wait_for("12 joints")
    # An unknown key is named (a warning: ROS params files are shared, every node ignores the rest).
    launch.wait_for("unknown parameter 'frobnicate' (params file or -p) ignored", 10)
    sims = subprocess.run(["pgrep", "-s", str(launch.proc.pid), "-f", "robogym_sim --ros-args"],
                          capture_output=True, text=True).stdout.split()
    assert len(sims) == 1, sims
    os.kill(int(sims[0]), signal.SIGKILL)
    code = launch.wait(30)
    assert code == 1, f"exit {code}:\n{launch.output()}"
    assert "died (killed by signal 9); respawn:=true restarts it" in launch.output()
    # Ctrl-C: everything stops, exit 0.
    launch = launches("sim.launch.py", f"params_file:={ok}", f"namespace:=stop{os.getpid()}")
    launch.wait_for("12 joints")
    assert launch.stop() == 0, launch.output()


@needs_ros2_launch
def test_multi_sim_seeds_start_at_the_params_files_seed_for_real(launches, tmp_path, ros):
    import rclpy
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python
    from simharness import wait_for
    prefix = f"fleet{os.getpid()}_"
    fleet = params_file(tmp_path, "/**:\n  ros__parameters:\n    seed: 10\n    camera_period_s: 0.0\n"
                                  "    start_paused: true\n")
    launch = launches("multi_sim.launch.py", f"params_file:={fleet}", "count:=3", f"prefix:={prefix}")
    node = rclpy.create_node("seed_reader")
    seeds = []
    try:
        for i in range(3):
            client = node.create_client(GetParameters, f"/{prefix}{i}/robogym_sim/get_parameters")
            assert client.wait_for_service(timeout_sec=60), launch.output()
            future = client.call_async(GetParameters.Request(names=["seed"]))
            wait_for(lambda: rclpy.spin_once(node, timeout_sec=0.05) or future.done(), 10, "the seed")
            seeds.append(parameter_value_to_python(future.result().values[0]))
    finally:
        node.destroy_node()
    assert seeds == [10, 11, 12], seeds
    assert launch.stop() == 0, launch.output()
