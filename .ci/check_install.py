"""Check a colcon-installed robogym_ros: files where ROS 2 tools look, and a sim that runs.

    python .ci/check_install.py WS/install/robogym_ros
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

prefix = Path(sys.argv[1])
expected = [
    "lib/robogym_ros/robogym_sim",  # ros2 run looks in lib/<package>
    "lib/robogym_ros/robogym_recorder",
    "lib/robogym_ros/robogym_motion",
    "lib/robogym_ros/robogym_expert",
    "lib/robogym_ros/robogym_mcp",  # MCP server for LLM agents (the agents extra: mcp)
    "lib/robogym_ros/robogym_viewer",
    "share/ament_index/resource_index/packages/robogym_ros",
    "share/robogym_ros/package.xml",
    "share/robogym_ros/launch/sim.launch.py",
    "share/robogym_ros/launch/bringup.launch.py",
    "share/robogym_ros/launch/multi_sim.launch.py",
    "share/robogym_ros/config/sim.yaml",
    "share/robogym_ros/config/robogym.rviz",
    "share/robogym_ros/config/moveit_controllers.yaml",  # MoveIt's simple controller manager reads it
]
missing = [p for p in expected if not (prefix / p).exists()]
site = glob.glob(str(prefix / "lib/python3*/site-packages"))
if not site or not glob.glob(f"{site[0]}/robogym_ros/task/models/so101_dual.xml"):
    missing.append("lib/python3*/site-packages/robogym_ros/task/models/so101_dual.xml")
if missing:
    sys.exit(f"installed tree lacks: {missing}")

# Run the installed executable with this interpreter (it has rclpy), from a scratch folder so
# that the package comes from the install tree, not from a checkout in the working directory.
env = dict(os.environ, PYTHONPATH=site[0])
script = prefix / "lib/robogym_ros/robogym_sim"
with tempfile.TemporaryDirectory() as cwd:
    proc = subprocess.Popen([sys.executable, str(script), "--ros-args", "-r", "__ns:=/ci_install",
                             "-p", "camera_period_s:=0.0"], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 120  # a loaded CI machine can take a while to start it
    for line in proc.stdout:  # wait for the node's start-up line, then let it run
        lines.append(line)
        if "control dt" in line or time.monotonic() > deadline:
            break
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out = "".join(lines) + proc.communicate(timeout=30)[0]
if proc.returncode != 0 or "published" not in out:
    sys.exit(f"installed robogym_sim failed (exit {proc.returncode}):\n{out}")
print(f"installed tree OK: {len(expected)} files, sim ran: {out.strip().splitlines()[-1]}")
