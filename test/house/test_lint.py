"""The code passes the project's lint (ruff.toml: pyflakes, pycodestyle, import order, bugbear,
class docstrings): unused imports, undefined names and shadowed loop variables are bugs."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _ruff() -> list[str] | None:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    return [exe] if Path(exe).exists() else None


def test_ruff_check_passes():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install ruff, or the package's [test] extra)")
    paths = [p for p in ("robogym_ros", "test", "bench", "recipes", "examples", "launch", ".ci", "plugins")
             if (ROOT / p).exists()]
    done = subprocess.run([*ruff, "check", "--no-cache", *paths], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
