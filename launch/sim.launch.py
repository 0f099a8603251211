"""Launch robogym_sim: config/sim.yaml, overridable by launch arguments, under a namespace.

    ros2 launch robogym_ros sim.launch.py namespace:=lab1 real_time_factor:=0.5
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

# name: (default, type, description). Typed explicitly: a launch argument is a string, and
# "1" for a double parameter would otherwise arrive as an integer and be refused.
ARGUMENTS = {
    "physics_dt_s": ("0.002", float, "physics integration step [s]"),
    "decimation": ("5", int, "physics steps per control tick"),
    "real_time_factor": ("1.0", float, "sim s per wall s; 0 = as fast as possible"),
    "seed": ("0", int, "reset randomisation seed"),
    "start_paused": ("false", bool, "start paused"),
    "model": ("", str, "MJCF path; empty = built-in two-arm SO-101 scene"),
    "max_lag_s": ("0.5", float, "skip ahead when this far behind wall time [s]"),
}


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", "sim.yaml"])
    overrides = {name: ParameterValue(LaunchConfiguration(name), value_type=kind)
                 for name, (_, kind, _) in ARGUMENTS.items()}
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the sim"),
        *(DeclareLaunchArgument(name, default_value=default, description=desc)
          for name, (default, _, desc) in ARGUMENTS.items()),
        Node(
            package="robogym_ros",
            executable="robogym_sim",
            name="robogym_sim",
            namespace=LaunchConfiguration("namespace"),
            parameters=[config, overrides],
            output="screen",
            emulate_tty=True,
        ),
    ])
