"""`pip install '.[env]'` is what docs/gymnasium.md names for the Gymnasium env: every distribution the
env imports, cameras included, must come with that extra (directly or as a requirement of
one of its requirements). Checked against the installed metadata, in a fresh process."""
from __future__ import annotations

import ast
import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

SETUP = Path(__file__).parents[2] / "setup.py"
# What the interpreter imports before any code runs (site hooks of other packages: .pth files).
BARE = 'import sys; print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))'
IMPORTS = """
import sys
import robogym_ros.envs
from robogym_ros.envs import HandoverEnv
env = HandoverEnv(cameras=["overhead"], camera_width_px=64, camera_height_px=48, render_mode="rgb_array")
env.reset(seed=0)
env.step(env.action_space.sample())
env.render()
env.close()
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def setup_lists() -> dict[str, list[str]]:
    """The module-level list assignments of setup.py (STANDALONE, ENV, ...), as written."""
    tree = ast.parse(SETUP.read_text())
    lists = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            lists[node.targets[0].id] = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return lists


def closure(names: set[str]) -> set[str]:
    """``names`` and everything they require (extras' optional requirements left out)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requirements if "extra ==" not in r]
    return seen


# Imported only when some other package put them there (try/except ImportError), never needed:
# glfw (mujoco's) takes cffi for Vulkan pointers if it is installed (mcp's cryptography brings it).
OPPORTUNISTIC = {"cffi", "pycparser"}


def test_the_env_extra_brings_every_distribution_a_camera_env_imports():
    run = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    bare = subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True, timeout=60).stdout.split()
    modules = set(run.stdout.split()) - set(bare)
    assert {"mujoco", "gymnasium", "numpy"} <= modules  # the env was really made
    owners = md.packages_distributions()
    imported = {_name(d) for m in modules for d in owners.get(m, ())} - {"robogym-ros"}
    env_extra = setup_lists()["ENV"]
    allowed = closure({_name(r) for r in env_extra} | {"setuptools"})  # install_requires: setuptools
    missing = sorted(imported - allowed - OPPORTUNISTIC)
    assert not missing, f"the env imports distributions that `pip install '.[env]'` does not bring: {missing}"


def test_the_check_sees_a_distribution_the_extra_lacks():
    """Positive control: without mujoco's requirer (gymnasium-robotics), mujoco is missing."""
    allowed = closure({"gymnasium"})
    assert "mujoco" not in allowed and "numpy" in allowed
