"""Sim, scripted motion and recorder together: the main job in a ROS workspace.

    ros2 launch robogym_ros bringup.launch.py duration_s:=10 record:=/tmp/robogym_bag

The recorder prints its verdict when duration_s has passed (or on Ctrl-C); launch then
shuts the other nodes down.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    namespace = LaunchConfiguration("namespace")
    config = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", "sim.yaml"])
    recorder = Node(
        package="robogym_ros", executable="robogym_recorder", name="robogym_recorder",
        namespace=namespace, output="screen", emulate_tty=True,
        arguments=["--duration", LaunchConfiguration("duration_s"),
                   "--record", LaunchConfiguration("record")],
    )
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("duration_s", default_value="10.0",
                              description="how long the recorder records [s, wall]"),
        DeclareLaunchArgument("record", default_value="robogym_bag",
                              description="rosbag2 (mcap) output directory"),
        Node(package="robogym_ros", executable="robogym_sim", name="robogym_sim",
             namespace=namespace, parameters=[config], output="screen", emulate_tty=True),
        Node(package="robogym_ros", executable="robogym_motion", name="robogym_motion",
             namespace=namespace, output="screen", emulate_tty=True),
        recorder,
        # The verdict is the point of the run: when the recorder exits, so does the launch.
        RegisterEventHandler(OnProcessExit(target_action=recorder,
                                           on_exit=[EmitEvent(event=Shutdown(reason="recorder done"))])),
    ])
