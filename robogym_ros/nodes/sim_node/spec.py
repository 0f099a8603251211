"""The sim's spec (robogym_ros.contract.Spec), built from what the node and the physics know."""
from __future__ import annotations

from robogym_ros import contract
from robogym_ros.contract import JointSpec, Spec, TopicSpec
from robogym_ros.sim.loop import Description


def build_spec(node, description: Description, *, model_path: str, real_time_factor: float,
               physics_scheduling: str, cameras=(), camera_frames: str = "", instance: str = "",
               extra_topics: dict[str, TopicSpec] | None = None, extra: dict | None = None) -> Spec:
    period_s = description.control_dt_ns * 1e-9

    def topic(name: str, msg_type: str, period: float | None, qos: contract.QosSpec) -> TopicSpec:
        return TopicSpec(node.resolve_topic_name(name), msg_type, period, qos)

    return Spec(
        joints=tuple(JointSpec(j.name, j.kind, j.lower, j.upper, j.unit) for j in description.joints),
        control_dt_ns=description.control_dt_ns,
        physics_dt_ns=description.physics_dt_ns,
        decimation=description.decimation,
        objects=description.objects,
        topics={
            "joint_states": topic(contract.JOINT_STATES, "sensor_msgs/msg/JointState", period_s,
                                  contract.STREAM_QOS),
            "ground_truth_joints": topic(contract.TRUTH_JOINTS, "sensor_msgs/msg/JointState", period_s,
                                         contract.STREAM_QOS),
            "ground_truth_targets": topic(contract.TRUTH_TARGETS, "sensor_msgs/msg/JointState", period_s,
                                          contract.STREAM_QOS),
            "ground_truth_objects": topic(contract.TRUTH_OBJECTS, "geometry_msgs/msg/PoseArray", period_s,
                                          contract.STREAM_QOS),
            "joint_commands": topic(contract.JOINT_COMMANDS, "sensor_msgs/msg/JointState", None,
                                    contract.COMMAND_QOS),
            "clock": topic(contract.CLOCK, "rosgraph_msgs/msg/Clock", period_s, contract.CLOCK_QOS),
            "state": topic(contract.STATE_TOPIC, "std_msgs/msg/String", None, contract.STATE_QOS),
            **({"camera_skips": topic(contract.CAMERA_SKIPS_TOPIC, "std_msgs/msg/Header", None,
                                      contract.STREAM_QOS)} if cameras else {}),
            **(extra_topics or {}),
        },
        cameras=tuple(cameras),
        services={name: node.resolve_service_name(f"~/{name}") for name in contract.SERVICES},
        node=node.get_fully_qualified_name(),
        model=model_path,
        real_time_factor=real_time_factor,
        physics_scheduling=physics_scheduling,
        camera_frames=camera_frames,
        instance=instance,
        extra=dict(extra or {}),
    )
