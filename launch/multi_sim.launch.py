"""Launch K robogym_sim nodes, each in a namespace of its own, for K envs in ROS mode.

    ros2 launch robogym_ros multi_sim.launch.py count:=4 start_paused:=true camera_period_s:=0.0
    # sims in /sim0 .. /sim3, seeds seed+0 .. seed+3 (seed: the argument, else the params file's, else 0)

Then, in Python: ``gym.make("robogym_ros/Handover-v0", mode="ros_lockstep", namespace="sim2")``.
Every parameter of robogym_ros.params is a launch argument, as in sim.launch.py; left empty it
passes nothing (the params file decides), except the seed, which each sim offsets by its index.
A fleet is whole or nothing: when any sim exits on its own, the launch ends (exit 1 when it
died or could not start, e.g. a bad value in the params file, whose FATAL line names it).
"""
from pathlib import Path

import yaml
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from robogym_ros.params import FROM_PARAMS_FILE, SIM, SIM_PARAMS, given_parameters
from robogym_ros.tools.launch_support import file_parameters, fleet_seeds, shutdown_reason

SEED = SIM["seed"]


def end_with_the_sim(sim: Node, name: str) -> RegisterEventHandler:
    """The launch ends when a sim exits on its own (robogym_ros.tools.launch_support.shutdown_reason)."""
    def on_exit(event, context):
        reason = shutdown_reason(name, event.returncode, respawn=False, shutting_down=context.is_shutdown)
        return None if reason is None else [EmitEvent(event=Shutdown(reason=reason))]
    return RegisterEventHandler(OnProcessExit(target_action=sim, on_exit=on_exit))


def sim_nodes(context) -> list:
    prefix = LaunchConfiguration("prefix").perform(context)
    given = given_parameters(lambda name: LaunchConfiguration(name).perform(context))
    params_file = LaunchConfiguration("params_file").perform(context)
    from_file = file_parameters(yaml.safe_load(Path(params_file).read_text()))
    # "seeds seed+i": the seed:= argument, else the params file's (which each sim's own seed
    # parameter would override), else the default.
    base_seed = SEED.coerce(given.pop(SEED.name, from_file.get(SEED.name, SEED.default)))
    seeds = fleet_seeds(LaunchConfiguration("count").perform(context), base_seed, SEED.maximum)
    actions = []
    for i, seed in enumerate(seeds):
        sim = Node(
            package="robogym_ros", executable="robogym_sim", name="robogym_sim", namespace=f"{prefix}{i}",
            parameters=[params_file, {**given, SEED.name: seed}],
            output="screen", emulate_tty=True)
        actions += [sim, end_with_the_sim(sim, f"{prefix}{i}/robogym_sim")]
    return actions


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
