"""`./dev` makes a new venv with Python >= 3.12 where the machine has one (LeRobot 0.6 needs it),
pyenv's versions included, else python3; DEV_PYTHON names another. Runs dev's own pick_python."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

DEV = Path(__file__).parents[2] / "dev"
PICK = 'source <(sed -n "/^pick_python()/,/^}/p" "$DEV"); pick_python'


def _pick(env: dict[str, str]) -> str:
    run = subprocess.run([shutil.which("bash"), "-c", PICK], env={**env, "DEV": str(DEV)}, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def _version(command: str) -> tuple[int, int]:
    out = subprocess.run(["bash", "-c", f"{command} -c 'import sys; print(*sys.version_info[:2])'"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    major, minor = out.stdout.split()
    return int(major), int(minor)


def _has_312_or_newer() -> bool:
    for v in ("3.12", "3.13", "3.14"):
        if subprocess.run(["bash", "-c", f"python{v} -c ''"], capture_output=True).returncode == 0:
            return True
    if shutil.which("pyenv"):
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
        return any(v.startswith(("3.12", "3.13", "3.14")) for v in versions)
    return False


def test_a_new_venv_gets_python_312_or_newer_where_the_machine_has_one():
    if not _has_312_or_newer():
        pytest.skip("this machine has no Python >= 3.12 (./dev falls back to python3)")
    env = {k: v for k, v in os.environ.items() if k not in ("DEV_PYTHON", "PYENV_VERSION")}
    command = _pick(env)
    assert _version(command) >= (3, 12), command


def test_without_one_it_falls_back_to_python3_and_dev_python_wins(tmp_path):
    """A PATH that holds only python3 and sed: no python3.12 or newer, no pyenv."""
    for tool in ("python3", "sed"):
        (tmp_path / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(tmp_path), "HOME": os.environ.get("HOME", "/")}
    assert _pick(env) == "python3"
    assert _pick({**env, "DEV_PYTHON": "/opt/my/python"}) == "/opt/my/python"
