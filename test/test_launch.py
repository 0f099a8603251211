"""Launch files: loaded for real where `launch_ros` is importable (a ROS install); everywhere,
their names are checked against what the package really declares."""
import ast
import importlib.util
from pathlib import Path

import pytest

from robogym_ros.sim_node import PARAMETERS

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


def test_sim_launch_arguments_are_declared_parameters():
    tree = ast.parse((ROOT / "launch" / "sim.launch.py").read_text())
    arguments = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], "id", "") == "ARGUMENTS")
    names = {k.value for k in arguments.value.keys}
    assert names and names <= set(PARAMETERS), names - set(PARAMETERS)
    defaults = {k.value: ast.literal_eval(v.elts[0]) for k, v in zip(arguments.value.keys,
                                                                      arguments.value.values)}
    for name, text in defaults.items():  # the launch default must equal the node's
        assert str(PARAMETERS[name][0]).lower() == text.lower() or \
            float(PARAMETERS[name][0] or 0) == float(text or 0), name


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
