"""The scripts outside the package (bench/, recipes/, examples/) import only what exists.

They run rarely (a benchmark on a quiet machine, a recipe for an hour), so a module that moved
would break them unseen: every ``from robogym_ros... import name`` they hold, at any depth of the
file, must resolve here.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for folder in ("bench", "recipes", "examples") for p in (ROOT / folder).glob("*.py"))


def package_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) of every import of robogym_ros in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("robogym_ros"):
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("robogym_ros")]
    return found


def unresolved(path: Path) -> list[str]:
    missing = []
    for module, name in package_imports(path):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module}: {exc}")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    return missing


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_import_of_the_package_resolves(path):
    assert unresolved(path) == []


def test_a_moved_module_is_caught(tmp_path):
    """Positive control: an import of a module that is no longer there is found."""
    script = tmp_path / "old.py"
    script.write_text("def main():\n    from robogym_ros.nodes import recorder_node as rn\n"
                      "from robogym_ros.task.scene import no_such_name\n")
    assert sorted(unresolved(script)) == ["robogym_ros.nodes.recorder_node", "robogym_ros.task.scene.no_such_name"]


def top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_the_reference_agent_is_a_client_of_the_tools_only():
    """examples/mcp_agent.py imports mcp, numpy and the standard library: nothing of robogym_ros
    (a user's agent has only the tools); the __future__ pseudo-module aside."""
    import sys
    names = top_level_imports(ROOT / "examples" / "mcp_agent.py") - {"__future__"}
    assert names - set(sys.stdlib_module_names) == {"mcp", "numpy"}, names


def test_an_agent_importing_the_package_is_caught(tmp_path):
    """Positive control."""
    script = tmp_path / "agent.py"
    script.write_text("import json\nimport numpy as np\nfrom mcp import ClientSession\n"
                      "def f():\n    from robogym_ros.task import scene\n")
    import sys
    assert top_level_imports(script) - set(sys.stdlib_module_names) == {"mcp", "numpy", "robogym_ros"}
