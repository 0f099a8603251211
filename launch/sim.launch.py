"""Launch robogym_sim: a params file (default: the installed config/sim.yaml), and on top of it
only the parameters you name on the command line, so editing the YAML always works.

    ros2 launch robogym_ros sim.launch.py namespace:=lab1 real_time_factor:=0.5
    ros2 launch robogym_ros sim.launch.py params_file:=my_sim.yaml respawn:=true

Every parameter of robogym_ros.params is a launch argument; left empty it passes nothing.
``respawn:=true`` restarts the sim when it exits on its own (the physics process died).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from robogym_ros.params import SIM_PARAMS

FROM_PARAMS_FILE = ""  # a parameter argument left at this passes nothing on


def given_parameters(context) -> dict:
    """The parameters named on the command line, typed and range-checked (robogym_ros.params)."""
    given = {}
    for p in SIM_PARAMS:
        text = LaunchConfiguration(p.name).perform(context)
        if text != FROM_PARAMS_FILE:
            value = p.parse(text)
            given[p.name] = list(value) if isinstance(value, tuple) else value
    return given


def sim_node(context) -> list:
    respawn = LaunchConfiguration("respawn").perform(context).lower() == "true"
    return [Node(
        package="robogym_ros", executable="robogym_sim", name="robogym_sim",
        namespace=LaunchConfiguration("namespace"),
        parameters=[LaunchConfiguration("params_file"), given_parameters(context)],
        respawn=respawn, respawn_delay=2.0, output="screen", emulate_tty=True,
    )]


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", "sim.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the sim"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="YAML with the sim's parameters"),
        DeclareLaunchArgument("respawn", default_value="false",
                              description="restart the sim if it exits on its own"),
        *(DeclareLaunchArgument(p.name, default_value=FROM_PARAMS_FILE,
                                description=f"{p.described} (empty: from params_file)")
          for p in SIM_PARAMS),
        OpaqueFunction(function=sim_node),
    ])
