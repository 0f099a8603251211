"""Sim, scripted motion and recorder together: the main job in a ROS workspace.

    ros2 launch robogym_ros bringup.launch.py duration_s:=10
    ros2 launch robogym_ros bringup.launch.py duration_s:=10 record:=/tmp/my_bag real_time_factor:=0.5
    ros2 launch robogym_ros bringup.launch.py duration_s:=20 expert:=true seed:=3   # a scripted handover

The recorder prints its verdict when duration_s has passed (or on Ctrl-C); launch then shuts
the other nodes down. `ros2 launch` exits 0 whatever the verdict: the verdict's exit code is
the recorder's (`ros2 run robogym_ros robogym_recorder ...`). Without ``record``, the bag goes
to a new directory robogym_bag_<date>_<time> (as `ros2 bag record` names its own). Every
argument of sim.launch.py works here too.
"""
import time

from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def recorder_and_motion(context) -> list:
    namespace = LaunchConfiguration("namespace")
    record = LaunchConfiguration("record").perform(context) or time.strftime("robogym_bag_%Y%m%d_%H%M%S")
    recorder = Node(
        package="robogym_ros", executable="robogym_recorder", name="robogym_recorder",
        namespace=namespace, output="screen", emulate_tty=True,
        arguments=["--duration", LaunchConfiguration("duration_s"), "--record", record],
    )
    # expert:=true: the scripted handover expert (robogym_expert) instead of the fixed path
    if LaunchConfiguration("expert").perform(context).lower() in ("true", "1"):
        mover = Node(package="robogym_ros", executable="robogym_expert", name="robogym_expert",
                     namespace=namespace, output="screen", emulate_tty=True)
    else:
        mover = Node(package="robogym_ros", executable="robogym_motion", name="robogym_motion",
                     namespace=namespace, output="screen", emulate_tty=True)
    return [
        mover,
        recorder,
        # The verdict is the point of the run: when the recorder exits, so does the launch.
        RegisterEventHandler(OnProcessExit(target_action=recorder,
                                           on_exit=[EmitEvent(event=Shutdown(reason="recorder done"))])),
    ]


def generate_launch_description():
    sim_launch = PathJoinSubstitution([FindPackageShare("robogym_ros"), "launch", "sim.launch.py"])
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("duration_s", default_value="10.0",
                              description="how long the recorder records [s, wall]"),
        DeclareLaunchArgument("expert", default_value="false",
                              description="true: the scripted handover expert moves the arms (robogym_expert)"),
        DeclareLaunchArgument("record", default_value="",
                              description="rosbag2 (mcap) output directory; empty: a new robogym_bag_<time>"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(sim_launch)),
        OpaqueFunction(function=recorder_and_motion),
    ])
