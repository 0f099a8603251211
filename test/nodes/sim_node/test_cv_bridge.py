"""cv_bridge, the ROS way to turn an Image into an OpenCV array, reads our images: where it is
installed (every ROS install has it), decode real frames from the sim node with
``CvBridge().imgmsg_to_cv2`` and compare them to the frame rendered here from the same state.

The pip install keeps working without it: nothing in the package imports cv_bridge, and no
extra names PyPI's ``cv-bridge`` (a ROS 1 package that breaks on NumPy 2).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).parents[3]


def test_the_package_never_needs_cv_bridge():
    setup = (ROOT / "setup.py").read_text().lower()
    assert "cv-bridge" not in setup and "cv_bridge" not in setup
    for path in (ROOT / "robogym_ros").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "cv_bridge" for n in names), path


def test_cv_bridge_decodes_our_frames_as_rendered(make_sim):
    cv_bridge = pytest.importorskip(
        "cv_bridge", reason="cv_bridge is not installed: it comes with ROS (ros-<distro>-cv-bridge), and "
        "PyPI's cv-bridge is a ROS 1 package that breaks on NumPy 2")
    from camera_frames import CameraObserver, render_offline, rgb
    sim, obs = make_sim(CameraObserver, (("overhead",),), cameras=["overhead"], start_paused=True, seed=2)
    obs.wait_matched()
    obs.call("resume")
    frames = obs.wait_frames("overhead", 3)
    obs.call("pause")
    js = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in obs.snapshot(obs.truth)}
    poses = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in obs.snapshot(obs.objects)}
    frame = next(f for f in reversed(frames)
                 if (s := f.header.stamp.sec * 10**9 + f.header.stamp.nanosec) in js and s in poses)
    stamp = frame.header.stamp.sec * 10**9 + frame.header.stamp.nanosec
    bridge = cv_bridge.CvBridge()
    decoded = bridge.imgmsg_to_cv2(frame, desired_encoding="passthrough")
    assert decoded.shape == (frame.height, frame.width, 3) and decoded.dtype == np.uint8
    np.testing.assert_array_equal(decoded, rgb(frame))
    np.testing.assert_array_equal(bridge.imgmsg_to_cv2(frame, desired_encoding="bgr8"), rgb(frame)[..., ::-1])
    spec_entry = next(c for c in obs.spec["cameras"] if c["name"] == "overhead")
    rendered = render_offline([js[stamp]], [poses[stamp]], ["overhead"], spec_entry)[0]["overhead"]
    error = float(np.mean(np.abs(decoded.astype(np.int16) - rendered.astype(np.int16))))
    assert error < 0.02, f"cv_bridge's image differs from the frame rendered for its stamp by {error}"
