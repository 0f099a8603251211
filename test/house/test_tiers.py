"""The folder tells what a file may import: each tier may import only the tiers below it and
its own third-party libraries. Walks every module's imports (function-level ones included).

``pytest test/house/test_tiers.py -v`` lists each tier with what it imports, in the test ids.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "robogym_ros"
ROS = {"rclpy", "rcl_interfaces", "builtin_interfaces", "sensor_msgs", "geometry_msgs", "std_msgs",
       "std_srvs", "rosgraph_msgs", "diagnostic_msgs", "trajectory_msgs", "tf2_msgs", "visualization_msgs",
       "simulation_interfaces", "control_msgs"}
# tier: (tiers it may import, third-party packages it may import). A tier is a folder under
# robogym_ros/ (or a sub-folder named here: envs.ros); a module belongs to the longest one.
# ROS libraries only in ros/, nodes/ and envs/ros/.
RULES: dict[str, tuple[set[str], set[str]]] = {
    "contract": (set(), set()),
    # the wire format (CDR), shared by the sim node, the recorder and the envs
    "wire": ({"contract"}, {"numpy"}),
    # the handover task: the scene, whether the block is placed, the goals' success, stages, reward
    "task": ({"contract"}, {"mujoco", "numpy"}),
    # the scene as ROS tools describe it: URDF, the TF frames only the sim knows (no ROS)
    "description": ({"contract", "task"}, {"mujoco", "numpy"}),
    # the physics process and what it runs
    "sim": ({"contract", "task", "description"}, {"mujoco", "numpy"}),
    "checks": ({"contract"}, {"numpy"}),
    "camera": ({"contract", "task", "description", "sim"}, {"mujoco", "numpy", "cv2", "OpenGL"}),
    # the scripted expert: IK on the scene's MJCF; no ROS, no Gymnasium (the env is duck-typed)
    "expert": ({"contract", "task", "sim"}, {"mujoco", "numpy"}),
    "recorder": ({"contract", "checks", "wire"}, {"numpy", "rosbags", "mcap", "mcap_ros2", "matplotlib"}),
    # live views without ROS: observations joined by tick, the frame hub, the viewer's page and
    # HTTP server, the bearer-token guard (stdlib http.server; ASGI by duck typing)
    "live": ({"contract"}, {"numpy", "cv2"}),
    # the runtime every ROS program shares: QoS, stamps, start/spin/stop, the command line, and the
    # one client of a running sim (sim_client: what robogym_mcp, robogym_viewer and the env's ROS
    # modes build on)
    "ros": ({"contract", "checks", "wire", "live", "sim"}, ROS | {"numpy"}),
    # the programs, a folder each; mcp and what it brings (uvicorn, anyio, pydantic): robogym_mcp, "agents"
    "nodes": ({"contract", "wire", "task", "description", "sim", "checks", "camera", "recorder", "expert", "ros",
               "live"}, ROS | {"numpy", "mujoco", "yaml", "mcp", "uvicorn", "anyio", "pydantic"}),
    # the env's ROS modes: the only part of envs/ that imports rclpy
    "envs.ros": ({"contract", "wire", "sim", "ros"}, ROS | {"numpy"}),
    "envs": ({"contract", "wire", "task", "sim", "checks", "camera", "expert", "envs.ros"},
             {"numpy", "mujoco", "gymnasium", "gymnasium_robotics", "ray"}),  # ray: envs/vector/ray_fleet.py only
    "tools": ({"contract", "wire", "task", "description", "sim", "checks", "camera", "recorder", "ros", "nodes",
               "envs", "envs.ros", "expert"}, {"numpy", "mujoco", "gymnasium", "matplotlib"}),
    # LeRobot datasets from bags and local rollouts; never imported by the sim or the recorder
    "export": ({"contract", "task", "sim", "checks", "recorder", "envs", "expert"},
               {"numpy", "gymnasium", "lerobot", "torch", "av"}),
}
ROOT_MODULES = {"__init__", "contract", "params", "processes"}  # robogym_ros/*.py: the contract tier


def tier_of(module: str) -> str:
    """Tier of a robogym_ros module name (``robogym_ros.sim.loop`` -> ``sim``,
    ``robogym_ros.envs.ros.ticks`` -> ``envs.ros``): the longest tier its path starts with."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ROOT_MODULES:
        return "contract"
    for n in range(len(parts), 1, -1):
        if ".".join(parts[1:n]) in RULES:
            return ".".join(parts[1:n])
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


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the robogym_ros modules it imports, at any depth of its code. ``from pkg import
    mod`` is an arrow to ``pkg.mod``; ``from pkg.mod import name`` to ``pkg.mod``; a package's
    __init__ is the package."""
    found = _modules_under(package)
    graph = {}
    for name, path in found.items():
        own_package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = own_package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                wanted = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for imp in wanted:
                while imp and imp not in found:  # an attribute of a module: the module itself
                    imp = imp.rpartition(".")[0]
                if imp and imp != name:
                    targets.add(imp)
        graph[name] = targets
    return graph


def _modules_under(package: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        found[".".join(p for p in rel.parts if p != "__init__")] = path
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module, or a module
    that imports itself), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    found = circles(import_graph(PACKAGE))
    assert not found, "modules that import each other in a circle:\n  " + "\n  ".join(" <-> ".join(c) for c in found)


def private_imports(package: Path) -> list[str]:
    """``from robogym_ros.x import _name``: a module's private name used by another module."""
    bad = []
    for name, path in _modules_under(package).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("robogym_ros")):
                bad += [f"{name} imports {node.module or '.'}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return bad


def test_no_module_imports_another_modules_private_name():
    bad = private_imports(PACKAGE)
    assert not bad, "private names imported from another module (make them public, or move the code):\n  " + \
        "\n  ".join(bad)


def test_circles_and_private_imports_are_seen(tmp_path):
    """Positive control: two modules that import each other (one inside a function), and a
    private name taken from a sibling, are each caught."""
    pkg = tmp_path / "robogym_ros"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sim" / "__init__.py").write_text("")
    (pkg / "sim" / "a.py").write_text("from robogym_ros.sim.b import thing\n")
    (pkg / "sim" / "b.py").write_text("def thing():\n    from robogym_ros.sim import a\n")
    (pkg / "sim" / "c.py").write_text("from .a import _hidden\n")
    assert circles(import_graph(pkg)) == [["robogym_ros.sim.a", "robogym_ros.sim.b"]]
    assert private_imports(pkg) == ["robogym_ros.sim.c imports a._hidden"]


MAX_MODULES = 12  # a folder with more modules of its own than this holds more than one concept


def crowded(package: Path, limit: int = MAX_MODULES) -> dict[str, int]:
    """Package folders holding more than ``limit`` modules of their own (``__init__`` not counted)."""
    counts = {}
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        n = sum(1 for f in folder.glob("*.py") if f.name != "__init__.py")
        if n > limit:
            counts[str(folder.relative_to(package.parent))] = n
    return counts


def test_no_package_folder_holds_more_than_twelve_modules():
    assert not crowded(PACKAGE), f"split these folders by concept (at most {MAX_MODULES} modules each): " \
                                 f"{crowded(PACKAGE)}"


def test_the_count_sees_a_crowded_folder(tmp_path):
    """Positive control: thirteen modules in one folder are one too many."""
    pkg = tmp_path / "robogym_ros" / "sim"
    pkg.mkdir(parents=True)
    for i in range(MAX_MODULES + 1):
        (pkg / f"m{i}.py").write_text("")
    (pkg / "__init__.py").write_text("")
    assert crowded(tmp_path / "robogym_ros") == {"robogym_ros/sim": MAX_MODULES + 1}
    (pkg / "m0.py").unlink()
    assert crowded(tmp_path / "robogym_ros") == {}
