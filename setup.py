"""ament_python package that also installs with plain pip (see README)."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "robogym_ros"

# Without a ROS install, `pip install .[standalone]` pulls ROS 2 Kilted from PyPI wheels.
# In a ROS workspace these come from the distro instead (package.xml), so they are an extra.
STANDALONE = [
    "ros-rclpy", "ros-sensor-msgs", "ros-std-srvs", "ros-std-msgs", "ros-rosgraph-msgs",
    "ros-diagnostic-msgs", "ros-geometry-msgs", "ros-trajectory-msgs", "ros-rmw-fastrtps-cpp",
    "mujoco>=3.2", "numpy", "opencv-python-headless", "rosbags>=0.10", "matplotlib",
    "mcap",  # the recorder reads an mcap cut short (a recording killed while writing) with it
]
# The Gymnasium env (robogym_ros.envs). No torch: a learner is the user's choice. OpenCV: the
# cameras' lens (cameras=[...], render_mode); test/house/test_env_extras.py keeps this list whole.
ENV = ["gymnasium>=1.4", "gymnasium-robotics>=1.4", "opencv-python-headless"]
# robogym_mcp (the MCP server for LLM agents; uvicorn and anyio come with mcp). robogym_viewer needs
# nothing beyond standalone's (OpenCV encodes its JPEG frames; the standard library serves them).
AGENTS = ["mcp>=2,<3"]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={f"{PACKAGE}.task": ["models/*.xml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
    ],
    install_requires=["setuptools"],
    extras_require={
        "standalone": STANDALONE,
        "env": ENV,
        "agents": AGENTS,
        # the Ray fleet of batched envs (robogym_ros.envs.vector.ray_fleet); tests skip without it
        "ray": ["ray", *ENV],
        # LeRobot datasets (robogym_ros.export), lerobot-train and lerobot-eval (needs torch; lerobot 0.6 needs
        # Python >= 3.12); tests skip without it. lerobot-eval's env plugin is a second distribution,
        # plugins/lerobot_env_robogym (`./dev lerobot` installs both)
        "lerobot": ["lerobot[dataset,training,evaluation]>=0.6,<0.7", "mujoco>=3.2", "numpy", "opencv-python-headless",
                    "rosbags>=0.10", *ENV],
        # stable-baselines3 (it needs torch) for the HER replay test with SB3's own buffer; never a dependency
        "sb3": ["stable-baselines3", *ENV],
        # pytest-timeout: a test that hangs fails (pytest.ini); pin: the URDF's forward kinematics by an
        # independent parser (urdfdom) in test_urdf.py
        "test": ["pytest<9", "pytest-timeout", "mcap", "mcap-ros2-support", "pin", "ruff", *ENV],
    },
    zip_safe=True,
    maintainer="robogym_ros team",
    maintainer_email="robogym-ros@example.com",
    description="Real-time MuJoCo SO-101 dual-arm sim for ROS 2 and a recorder that proves its data.",
    license="Apache-2.0",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [
            "robogym_sim = robogym_ros.nodes.sim_node.__main__:main",
            "robogym_recorder = robogym_ros.nodes.recorder.__main__:main",
            "robogym_motion = robogym_ros.nodes.motion.__main__:main",
            "robogym_expert = robogym_ros.nodes.expert.__main__:main",
            "robogym_mcp = robogym_ros.nodes.mcp.__main__:main",
            "robogym_viewer = robogym_ros.nodes.viewer.__main__:main",
            "robogym_demo = robogym_ros.tools.demo:main",
        ],
    },
)
