"""Launch robogym_sim: a params file (default: the installed config/sim.yaml), and on top of it
only the parameters you name on the command line, so editing the YAML always works; with it
robot_state_publisher (the arm links' TF from joint_states and the URDF of the same model),
and RViz with config/robogym.rviz on ``rviz:=true``.

    ros2 launch robogym_ros sim.launch.py namespace:=lab1 real_time_factor:=0.5
    ros2 launch robogym_ros sim.launch.py params_file:=my_sim.yaml respawn:=true
    ros2 launch robogym_ros sim.launch.py rviz:=true

Every parameter of robogym_ros.params is a launch argument; left empty it passes nothing.
``respawn:=true`` restarts the sim when it exits on its own (the physics process died).
robot_state_publisher and RViz run on sim time (/clock); TF is global (/tf), so two sims
in one ROS domain share frame names: give each its own ROS_DOMAIN_ID.
"""
from pathlib import Path

import yaml
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from robogym_ros.params import FROM_PARAMS_FILE, SIM_PARAMS, given_parameters
from robogym_ros.sim.urdf import robot_urdf_of_parameters
from robogym_ros.tools.rviz import RVIZ_CONFIG, namespace_remappings


def params_file_values(path: str) -> dict:
    """The sim's parameters in a ROS params file (any node key: `/**`, `robogym_sim`, ...)."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    values = {}
    for section in data.values():
        if isinstance(section, dict):
            values.update(section.get("ros__parameters", {}))
    return values


def sim_nodes(context) -> list:
    respawn = LaunchConfiguration("respawn").perform(context).lower() == "true"
    given = given_parameters(lambda name: LaunchConfiguration(name).perform(context))
    params_file = LaunchConfiguration("params_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    # The URDF the sim publishes, made here too: robot_state_publisher needs it at start-up.
    # The model comes from the params file unless the command line names one.
    urdf = robot_urdf_of_parameters({**params_file_values(params_file), **given})
    nodes = [
        Node(package="robogym_ros", executable="robogym_sim", name="robogym_sim", namespace=namespace,
             parameters=[LaunchConfiguration("params_file"), given],
             respawn=respawn, respawn_delay=2.0, output="screen", emulate_tty=True),
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             namespace=namespace, output="screen",
             parameters=[{"robot_description": ParameterValue(urdf, value_type=str), "use_sim_time": True}]),
    ]
    if LaunchConfiguration("rviz").perform(context).lower() == "true":
        config = LaunchConfiguration("rviz_config").perform(context)
        nodes.append(Node(package="rviz2", executable="rviz2", name="rviz2", namespace=namespace,
                          arguments=["-d", config], parameters=[{"use_sim_time": True}],
                          remappings=namespace_remappings(Path(config).read_text(), namespace),
                          output="screen"))
    return nodes


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", "sim.yaml"])
    default_rviz = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", RVIZ_CONFIG])
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the sim"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="YAML with the sim's parameters"),
        DeclareLaunchArgument("respawn", default_value="false",
                              description="restart the sim if it exits on its own"),
        DeclareLaunchArgument("rviz", default_value="false",
                              description="open RViz with the robot, TF, the cameras and the block/tray"),
        DeclareLaunchArgument("rviz_config", default_value=default_rviz, description="the RViz config"),
        *(DeclareLaunchArgument(p.name, default_value=FROM_PARAMS_FILE,
                                description=f"{p.described} (empty: from params_file)")
          for p in SIM_PARAMS),
        OpaqueFunction(function=sim_nodes),
    ])
