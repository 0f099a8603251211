"""The folder tells what a file may import: each tier may import only the tiers below it and
its own third-party libraries. Walks every module's imports (function-level ones included).

``pytest test/test_tiers.py -v`` lists each tier with what it imports, in the test ids.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "robogym_ros"
ROS = {"rclpy", "rcl_interfaces", "builtin_interfaces", "sensor_msgs", "geometry_msgs", "std_msgs",
       "std_srvs", "rosgraph_msgs", "diagnostic_msgs", "trajectory_msgs", "tf2_msgs", "visualization_msgs",
       "simulation_interfaces", "control_msgs"}
# tier: (tiers it may import, third-party packages it may import)
RULES: dict[str, tuple[set[str], set[str]]] = {
    "contract": (set(), set()),
    "sim": ({"contract"}, {"mujoco", "numpy"}),
    "checks": ({"contract"}, {"numpy"}),
    "camera": ({"contract", "sim"}, {"mujoco", "numpy", "cv2", "OpenGL"}),
    # the scripted expert: IK on the scene's MJCF; no ROS, no Gymnasium (the env is duck-typed)
    "expert": ({"contract", "sim"}, {"mujoco", "numpy"}),
    "recorder": ({"contract", "checks"}, {"numpy", "rosbags", "mcap", "mcap_ros2", "matplotlib"}),
    "nodes": ({"contract", "sim", "checks", "camera", "recorder", "expert"}, ROS | {"numpy", "mujoco", "yaml"}),
    "envs": ({"contract", "sim", "checks", "camera", "recorder", "nodes", "expert"},
             ROS | {"numpy", "mujoco", "gymnasium", "gymnasium_robotics", "ray"}),  # ray: envs/ray_fleet.py only
    "tools": ({"contract", "sim", "checks", "camera", "recorder", "nodes", "envs", "expert"},
              ROS | {"numpy", "mujoco", "gymnasium", "matplotlib"}),
    # LeRobot datasets from bags and local rollouts; never imported by the sim or the recorder
    "export": ({"contract", "sim", "checks", "recorder", "envs", "expert"},
               {"numpy", "gymnasium", "lerobot", "torch", "av"}),
}
ROOT_MODULES = {"__init__", "contract", "params"}  # robogym_ros/*.py: the contract tier


def tier_of(module: str) -> str:
    """Tier of a robogym_ros module name (``robogym_ros.sim.loop`` -> ``sim``)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ROOT_MODULES:
        return "contract"
    return parts[1]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        found[name] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """Absolute names of everything the module imports, at any depth of its code."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.add(target)
            if target == "robogym_ros":  # `from robogym_ros import contract` names a module
                out |= {f"{target}.{a.name}" for a in node.names}
    return out


def tier_imports() -> dict[str, dict[str, set[str]]]:
    """tier -> {"tiers": ..., "libraries": ..., "stdlib": ...}, and violations per module."""
    table: dict[str, dict[str, set[str]]] = {t: {"tiers": set(), "libraries": set()} for t in RULES}
    for name, path in modules().items():
        tier = tier_of(name)
        assert tier in RULES, f"{name}: folder {tier!r} is not a known tier; add it to RULES"
        for imp in imports_of(name, path):
            top = imp.split(".")[0]
            if top == "robogym_ros":
                if imp != "robogym_ros" and tier_of(imp) != tier:
                    table[tier]["tiers"].add(tier_of(imp))
            elif top not in sys.stdlib_module_names and top != "__future__":
                table[tier]["libraries"].add(top)
    return table


TABLE = tier_imports()


def _id(tier: str) -> str:
    t = TABLE[tier]
    return f"{tier} imports tiers [{', '.join(sorted(t['tiers'])) or '-'}] " \
           f"libraries [{', '.join(sorted(t['libraries'])) or 'stdlib only'}]"


@pytest.mark.parametrize("tier", list(RULES), ids=[_id(t) for t in RULES])
def test_tier_imports_only_what_its_folder_allows(tier):
    allowed_tiers, allowed_libraries = RULES[tier]
    bad = []
    for name, path in modules().items():
        if tier_of(name) != tier:
            continue
        for imp in sorted(imports_of(name, path)):
            top = imp.split(".")[0]
            if top == "robogym_ros":
                other = tier_of(imp)
                if imp != "robogym_ros" and other != tier and other not in allowed_tiers:
                    bad.append(f"{name} imports {imp} (tier {other})")
            elif top not in sys.stdlib_module_names and top != "__future__" and top not in allowed_libraries:
                bad.append(f"{name} imports {imp}")
    assert not bad, f"tier {tier!r} may import tiers {sorted(allowed_tiers)} and " \
                    f"{sorted(allowed_libraries)}:\n  " + "\n  ".join(bad)


def test_the_walker_sees_a_forbidden_import(tmp_path, monkeypatch):
    """Positive control: a sim module that imports rclpy inside a function is caught."""
    sim = tmp_path / "robogym_ros" / "sim"
    sim.mkdir(parents=True)
    (tmp_path / "robogym_ros" / "__init__.py").write_text("")
    (sim / "__init__.py").write_text("")
    (sim / "bad.py").write_text("def f():\n    import rclpy\n    from ..nodes import sim_node\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "robogym_ros")
    with pytest.raises(AssertionError, match=r"robogym_ros.sim.bad imports rclpy[\s\S]*"
                                             r"robogym_ros.sim.bad imports robogym_ros.nodes \(tier nodes\)"):
        test_tier_imports_only_what_its_folder_allows("sim")
