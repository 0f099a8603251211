"""The GL backend for MuJoCo on a machine without a display: EGL unless the user chose."""
from __future__ import annotations

import os
import subprocess
import sys

from robogym_ros.camera.gl import headless_default


def test_egl_only_when_nothing_is_chosen_and_there_is_no_display():
    env = {}
    assert headless_default(env) == "egl" and env == {"MUJOCO_GL": "egl"}
    for given in ({"MUJOCO_GL": "osmesa"}, {"DISPLAY": ":0"}, {"WAYLAND_DISPLAY": "wayland-0"}):
        env = dict(given)
        assert headless_default(env) is None and env == given


def test_the_sim_node_renders_without_a_display_or_a_choice():
    """`robogym_sim` as the docs start it on a headless machine: no MUJOCO_GL, no DISPLAY.
    Before, MuJoCo fell back to GLFW and the cameras failed ("gladLoadGL error")."""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY")}
    code = "\n".join([
        "import os, robogym_ros.nodes.sim_node.node, mujoco",
        "from robogym_ros.camera.lens import Lens",
        "from robogym_ros.camera.renderer import CameraRenderer",
        "from robogym_ros.sim.physics import Physics; from robogym_ros.task.scene import default_model_path",
        "physics = Physics(default_model_path(), 0.002, 5, seed=0)",
        "with CameraRenderer(physics.model, ['overhead'], Lens(64, 48)) as renderer:",
        "    image = renderer.render(physics.snapshot().state)['overhead']",
        "print(os.environ['MUJOCO_GL'], image.shape, int(image.max()))"])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    gl, *_, brightest = done.stdout.split()
    assert gl == "egl" and int(brightest) > 0, done.stdout


def test_lerobot_evals_env_renders_without_a_display_or_a_choice():
    """The env as `lerobot-eval` makes it on a headless machine (its videos render the overhead
    camera): no MUJOCO_GL, no DISPLAY. The env imports mujoco through the physics before any
    camera, so the choice has to come with `robogym_ros.envs` (it failed: "gladLoadGL error")."""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY")}
    code = "\n".join([
        "import os, gymnasium as gym, robogym_ros.envs",
        "env = gym.make(robogym_ros.envs.LEROBOT_ENV_ID, obs_type='environment_state_agent_pos',",
        "               render_mode='rgb_array')",
        "env.reset(seed=0)",
        "image = env.render()",
        "print(os.environ['MUJOCO_GL'], image.shape, int(image.max()))"])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    gl, *_, brightest = done.stdout.split()
    assert gl == "egl" and int(brightest) > 0, done.stdout
