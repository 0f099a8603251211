"""Launch robogym_sim: a params file (default: the installed config/sim.yaml), and on top of it
only the parameters you name on the command line, so editing the YAML always works; with it
robot_state_publisher (the arm links' TF from joint_states and the URDF of the same model),
and RViz with config/robogym.rviz on ``rviz:=true``.

    ros2 launch robogym_ros sim.launch.py namespace:=lab1 real_time_factor:=0.5
    ros2 launch robogym_ros sim.launch.py params_file:=my_sim.yaml respawn:=true
    ros2 launch robogym_ros sim.launch.py rviz:=true

Every parameter of robogym_ros.params is a launch argument; left empty it passes nothing.
``respawn:=true`` restarts the sim when it exits on its own (the physics process died).
Otherwise the launch ends with the sim: exit 1 when the sim died or could not start (a bad
value in the params file: its FATAL line names it), exit 0 when it stopped cleanly. A sim that
could not start (exit 1) ends the launch even with ``respawn:=true``: it would fail again.
robot_state_publisher and RViz run on sim time (/clock); TF is global (/tf), so two sims
in one ROS domain share frame names: give each its own ROS_DOMAIN_ID.
"""
from pathlib import Path

import yaml
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from robogym_ros.description.urdf import robot_urdf_of_parameters
from robogym_ros.params import FROM_PARAMS_FILE, SIM_PARAMS, given_parameters
from robogym_ros.tools.launch_support import file_parameters, shutdown_reason
from robogym_ros.tools.rviz import RVIZ_CONFIG, namespace_remappings


def params_file_values(path: str) -> dict:
    """The sim's parameters in a ROS params file (any node key: `/**`, `robogym_sim`, ...)."""
    return file_parameters(yaml.safe_load(Path(path).read_text()))


def end_with_the_sim(sim: Node, name: str, respawn: bool) -> RegisterEventHandler:
    """The launch ends when the sim exits on its own (robogym_ros.tools.launch_support.shutdown_reason)."""
    def on_exit(event, context):
        reason = shutdown_reason(name, event.returncode, respawn=respawn, shutting_down=context.is_shutdown)
        return None if reason is None else [EmitEvent(event=Shutdown(reason=reason))]
    return RegisterEventHandler(OnProcessExit(target_action=sim, on_exit=on_exit))


def sim_nodes(context) -> list:
    respawn = LaunchConfiguration("respawn").perform(context).lower() == "true"
    given = given_parameters(lambda name: LaunchConfiguration(name).perform(context))
    params_file = LaunchConfiguration("params_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    # The URDF the sim publishes, made here too: robot_state_publisher needs it at start-up.
    # The model comes from the params file unless the command line names one.
    urdf = robot_urdf_of_parameters({**params_file_values(params_file), **given})
    sim = Node(package="robogym_ros", executable="robogym_sim", name="robogym_sim", namespace=namespace,
               parameters=[LaunchConfiguration("params_file"), given],
               respawn=respawn, respawn_delay=2.0, output="screen", emulate_tty=True)
    nodes = [
        sim,
        end_with_the_sim(sim, f"{namespace.strip('/')}/robogym_sim".lstrip("/"), respawn),
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
