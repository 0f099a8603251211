"""Which OpenGL backend MuJoCo renders with, chosen before mujoco is first imported.

MuJoCo reads ``MUJOCO_GL`` once, at import. Unset, it picks GLFW, which needs a display: on
a headless machine (a server, CI, a container) the cameras then fail with "gladLoadGL
error". A user's choice always wins; without one and without a display, EGL renders
offscreen (Mesa's llvmpipe where there is no GPU).
"""
from __future__ import annotations

import os
from typing import MutableMapping


def headless_default(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """Set ``MUJOCO_GL=egl`` when it is unset and there is no display; returns what was set."""
    if environ.get("MUJOCO_GL") or environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"):
        return None
    environ["MUJOCO_GL"] = "egl"
    return "egl"


headless_default()  # on import: whoever imports this module first chooses before mujoco loads
