"""One client of a running sim (ros/sim_client.py): the errors of a call to the sim are defined
there alone, so a caller catches one class whichever program it called through, and no module
brings its own service call with a timeout."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "robogym_ros"
CLIENT = PACKAGE / "ros" / "sim_client.py"
ERRORS = ("SimUnavailable", "SimRefused")


def definitions(source: str, name: str) -> int:
    return sum(isinstance(n, ast.ClassDef) and n.name == name for n in ast.walk(ast.parse(source)))


def test_the_scan_counts_a_second_definition():
    assert definitions("class SimUnavailable(RuntimeError):\n    pass\n", "SimUnavailable") == 1
    assert definitions("from robogym_ros.ros.sim_client import SimUnavailable\n", "SimUnavailable") == 0


def test_each_error_of_a_sim_call_is_defined_once_in_the_sim_client():
    for name in ERRORS:
        where = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
                 if definitions(p.read_text(), name)]
        assert where == ["ros/sim_client.py"], f"{name} is defined in {where}; import it from ros/sim_client.py"
