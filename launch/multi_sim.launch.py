"""Launch K robogym_sim nodes, each in a namespace of its own, for K envs in ROS mode.

    ros2 launch robogym_ros multi_sim.launch.py count:=4 start_paused:=true camera_period_s:=0.0
    # sims in /sim0 .. /sim3, seeds seed+0 .. seed+3 (seed defaults to 0)

Then, in Python: ``gym.make("robogym_ros/Handover-v0", mode="ros_lockstep", namespace="sim2")``.
Every parameter of robogym_ros.params is a launch argument, as in sim.launch.py; left empty it
passes nothing (the params file decides), except the seed, which each sim offsets by its index.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from robogym_ros.params import FROM_PARAMS_FILE, SIM, SIM_PARAMS, given_parameters

SEED = SIM["seed"]


def sim_nodes(context) -> list:
    count = int(LaunchConfiguration("count").perform(context))
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    prefix = LaunchConfiguration("prefix").perform(context)
    given = given_parameters(lambda name: LaunchConfiguration(name).perform(context))
    base_seed = given.pop(SEED.name, SEED.default)
    return [Node(
        package="robogym_ros", executable="robogym_sim", name="robogym_sim", namespace=f"{prefix}{i}",
        parameters=[LaunchConfiguration("params_file"),
                    {**given, SEED.name: SEED.coerce(base_seed + i)}],
        output="screen", emulate_tty=True,
    ) for i in range(count)]


def generate_launch_description():
    default_params = PathJoinSubstitution([FindPackageShare("robogym_ros"), "config", "sim.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("count", default_value="2", description="how many sims"),
        DeclareLaunchArgument("prefix", default_value="sim", description="sim i runs in namespace <prefix><i>"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="YAML with the sims' parameters"),
        *(DeclareLaunchArgument(p.name, default_value=FROM_PARAMS_FILE,
                                description=f"{p.described} (empty: from params_file)"
                                + ("; sim i gets seed + i" if p is SEED else ""))
          for p in SIM_PARAMS),
        OpaqueFunction(function=sim_nodes),
    ])
