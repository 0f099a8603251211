"""Launch files: loaded for real where `launch_ros` is importable (a ROS install); everywhere,
their names are checked against what the package really declares."""
import ast
import importlib.util
from pathlib import Path

import pytest

from robogym_ros.params import SIM, SIM_PARAMS

ROOT = Path(__file__).parents[1]
LAUNCH = sorted((ROOT / "launch").glob("*.launch.py"))


def console_scripts() -> set[str]:
    setup = (ROOT / "setup.py").read_text()
    return {line.split("=")[0].strip().strip('"') for line in setup.splitlines()
            if " = robogym_ros." in line}


def executables_in(path: Path) -> set[str]:
    return {kw.value.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) for kw in n.keywords
            if kw.arg == "executable" and isinstance(kw.value, ast.Constant)}


def test_launch_files_exist():
    assert {p.name for p in LAUNCH} == {"sim.launch.py", "bringup.launch.py"}


@pytest.mark.parametrize("path", LAUNCH, ids=lambda p: p.name)
def test_launch_files_name_real_executables(path):
    executables = executables_in(path)
    assert executables and executables <= console_scripts(), executables - console_scripts()


def test_sim_launch_takes_its_arguments_from_the_one_parameter_table():
    """sim.launch.py declares one argument per robogym_ros.params entry and passes on only
    those given: its source names SIM_PARAMS and no parameter name of its own."""
    text = (ROOT / "launch" / "sim.launch.py").read_text()
    assert "from robogym_ros.params import SIM_PARAMS" in text
    literals = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)
                and isinstance(n.value, str)}
    assert not literals & set(SIM), literals & set(SIM)


def test_launch_argument_text_is_typed_and_range_checked():
    assert SIM["real_time_factor"].parse("0") == 0.0 and isinstance(SIM["real_time_factor"].parse("0"), float)
    assert SIM["decimation"].parse("10") == 10
    assert SIM["start_paused"].parse("True") is True
    assert SIM["cameras"].parse("[overhead, left_wrist]") == ("overhead", "left_wrist")
    with pytest.raises(ValueError, match=r"decimation = 0 is outside its range 1 \.\. 1000"):
        SIM["decimation"].parse("0")
    with pytest.raises(ValueError, match="physics_dt_s must be a double, got 'fast'"):
        SIM["physics_dt_s"].parse("fast")


@pytest.mark.parametrize("path", LAUNCH, ids=lambda p: p.name)
def test_launch_description_loads(path):
    launch_ros = pytest.importorskip(
        "launch_ros.actions",
        reason="launch_ros is not installed (no ROS install here; it is on no registry)")
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    nodes = [e for e in description.entities if isinstance(e, launch_ros.Node)]
    assert nodes
