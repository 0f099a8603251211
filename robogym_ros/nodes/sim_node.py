"""ROS 2 node ``robogym_sim``: a thin shell around the physics process.

The physics process paces itself; this node forwards. Ticks go out on the pump thread
(nodes/tick_publisher.py), frames on the camera thread (nodes/camera_publisher.py); the
executor thread serves commands, services (nodes/run_control.py), parameters and diagnostics.
If the physics process dies, the node says how and exits non-zero, so a launch file's
``respawn`` can bring the sim back.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace

from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.camera.lens import Lens
from robogym_ros.nodes import parameters
from robogym_ros.nodes.arm_controllers import ArmControllers
from robogym_ros.nodes.camera_publisher import start_cameras
from robogym_ros.nodes.description import DescriptionPublisher
from robogym_ros.nodes.diagnostics import CommandCounts, SimDiagnostics
from robogym_ros.nodes.qos import COMMAND_QOS, SPEC_QOS
from robogym_ros.nodes.run_control import RunControl
from robogym_ros.nodes.sim_interfaces import SimulationInterfaces
from robogym_ros.nodes.sim_spec import build_spec
from robogym_ros.nodes.spin import StoppableNode, run_node
from robogym_ros.nodes.tick_publisher import TickPublisher
from robogym_ros.nodes.trajectory_subscriber import TrajectorySubscriber
from robogym_ros.params import SIM_PARAMS
from robogym_ros.sim.commands import CommandRejected, validate_command
from robogym_ros.sim.loop import LoopConfig
from robogym_ros.sim.physics import default_model_path
from robogym_ros.sim.process import SimProcess

EXIT_PHYSICS_DIED = 3


class SimNode(StoppableNode):
    """The sim as a ROS node: topics, commands, services, parameters and diagnostics."""

    def __init__(self, **kwargs):
        # What destroy_node touches exists before anything can fail: rclpy's shutdown
        # destroys a half-built node too.
        self.sim = self.cameras = self.ticks = self.sim_api = self.run_control = None
        self.controllers = None
        self.commands = CommandCounts()
        super().__init__(contract.SIM_NODE, **kwargs)
        p = self.params = parameters.declare(self, SIM_PARAMS, self._on_parameter, check=self._check_parameter)
        self.config = LoopConfig(
            model_path=p["model"] or default_model_path(), physics_dt_s=p["physics_dt_s"],
            decimation=p["decimation"], seed=p["seed"], real_time_factor=p["real_time_factor"],
            # Always paused until this node can take ticks: GL set-up takes ~1 s on llvmpipe,
            # and a running physics process would stall on the full tick pipe meanwhile.
            start_paused=True, max_lag_s=p["max_lag_s"])
        self.sim = SimProcess(self.config)
        self.instance = f"{os.getpid()}-{time.time_ns()}"
        self.description = self.sim.describe()
        self.ranges = {j.name: (j.lower, j.upper) for j in self.description.joints}
        self.ticks = TickPublisher(self, self.sim, [j.name for j in self.description.joints], self.config.model_path)
        self.frames = DescriptionPublisher(self, self.config.model_path, self.description.objects)
        # FollowJointTrajectory servers where control_msgs is; commands reach physics through them
        self.controllers = ArmControllers(self, self.sim, self.description.joints, self.config.model_path)
        self.trajectories = TrajectorySubscriber(  # "now" for a trajectory stamped 0: physics time
            self, self.controllers, self.ranges, counts=self.commands,
            now_ns=lambda: self.sim.status().tick_index * self.description.control_dt_ns)
        self.run_control = RunControl(self, self.sim, self.ticks, self.description.control_dt_ns, self.ranges)
        self.sim_api = SimulationInterfaces(self, self.sim, self.run_control,  # the standard API
                                            self.config.model_path, self.description.control_dt_ns)
        self.pub_spec = self.create_publisher(String, "~/spec", SPEC_QOS)  # = contract.SPEC_TOPIC
        self.create_subscription(JointState, contract.JOINT_COMMANDS, self._on_command, COMMAND_QOS)
        self.diagnostics = SimDiagnostics(self, self.sim, p["diagnostics_period_s"], self._figures)
        if p["camera_period_s"] > 0 and p["cameras"]:
            lens = Lens(p["camera_width_px"], p["camera_height_px"], fisheye=p["camera_fisheye"],
                        source_scale=p["camera_source_scale"])
            self.cameras = start_cameras(
                self, self.config.model_path, list(p["cameras"]), lens, p["camera_period_s"],
                control_dt_ns=self.description.control_dt_ns, hold_physics=self.sim.set_tick_limit,
                every_frame=self.config.real_time_factor == 0)
        self._publish_spec()
        self.ticks.start(self._on_tick, self._on_physics_death)
        index = 0 if p["start_paused"] else self.sim.resume()
        self.run_control.publish_state(index, "start", p["start_paused"], seed=p["seed"], scene=0)  # Physics.scene
        self.get_logger().info(
            f"{len(self.ranges)} joints, physics dt {self.config.physics_dt_s * 1e3:g} ms, control dt "
            f"{self.description.control_dt_ns * 1e-6:g} ms, real_time_factor "
            f"{self.config.real_time_factor:g}{', paused' if p['start_paused'] else ''}")

    def _on_tick(self, tick) -> None:
        self.frames.publish(tick)
        self.controllers.on_tick(tick)
        if self.cameras is not None:
            self.cameras.offer(tick)
        self.sim_api.on_tick(tick)  # where episodes start: the standard API's "stopped"
        self.run_control.on_tick(tick)  # last: a blow-up is reported, then waiting answers go out

    def _on_physics_death(self) -> None:
        reason = f"physics process died ({self.sim.death()}): the sim cannot go on"
        self.get_logger().fatal(reason)
        self.request_stop(EXIT_PHYSICS_DIED, reason)

    def _publish_spec(self) -> None:
        cameras = self.cameras.spec() if self.cameras else ()
        self.spec = build_spec(self, self.description, model_path=self.config.model_path,
                               real_time_factor=self.config.real_time_factor, cameras=cameras,
                               camera_frames=self.cameras.mode if cameras else "", instance=self.instance,
                               extra_topics={**self.frames.spec_topics(self),
                                             "joint_trajectory": self.trajectories.spec_topic(),
                                             "step_request": self.run_control.step_requests.spec_topic()},
                               extra={"tf": self.frames.tf_status, "controllers": self.controllers.spec(),
                                      "seed": self.params["seed"],  # the sequence the next reset draws from
                                      "simulation_interfaces": self.sim_api.spec()})
        self.pub_spec.publish(String(data=self.spec.to_json()))

    def _on_command(self, msg: JointState) -> None:
        try:
            targets = validate_command(msg.name, msg.position, msg.velocity, msg.effort, self.ranges)
        except CommandRejected as exc:
            self.commands.rejected += 1
            self.commands.last_rejection = str(exc)
            self.get_logger().warning(f"command rejected: {exc}")
            return
        self.controllers.set_targets(targets)  # preempts a goal for these joints, then to physics
        self.commands.accepted += 1
        # The stamp schedules nothing (targets apply at the next tick): far from sim time, warned.
        self.trajectories.clock.warn_command(contract.header_stamp_ns(msg))

    def _check_parameter(self, name: str, value) -> None:
        """A live change asked for (range already checked): ValueError refuses the whole batch.
        Changes nothing: the batch is applied only once every parameter of it passed."""
        if name == "camera_period_s" and self.cameras is None and value > 0:
            raise ValueError("cameras were off at start-up (camera_period_s 0 or no cameras): "
                             "restart the sim with camera_period_s > 0")

    def _on_parameter(self, name: str, value) -> None:
        """A live parameter changed: its batch passed _check_parameter and rclpy stored it."""
        if name in ("real_time_factor", "max_lag_s"):
            self.sim.configure(**{name: value})
            self.config = replace(self.config, **{name: value})
            self.description = self.sim.describe()  # the scheduling may have changed
            if name == "real_time_factor" and self.cameras is not None:
                self.cameras.set_every_frame(value == 0)
        elif name == "seed":  # the next reset starts this seed's sequence
            self.sim.reseed(value)
        elif name == "camera_period_s":
            self.cameras.set_period(value)
        elif name == "diagnostics_period_s":
            self.diagnostics.set_period(value)
        self.params[name] = value
        self._publish_spec()

    def _figures(self) -> dict:
        cameras = None
        if self.cameras is not None:
            cameras = {"frames": self.cameras.mode, "frames_rendered": self.cameras.rendered,
                       "frames_skipped": self.cameras.skipped, "error": self.cameras.error}
        return {"commands": self.commands, "published": self.ticks.published,
                "publish_errors": self.ticks.publish_errors, "cameras": cameras}

    def destroy_node(self):
        if self.controllers is not None:  # their goals end (aborted) before the physics does
            self.controllers.close()
        # Physics first, while the pump still drains its ticks; then the pump, then the cameras.
        if self.ticks is not None:
            self.ticks.stopping()
        for part in (self.sim_api, self.run_control, self.sim, self.ticks, self.cameras):  # a running action first
            if part is not None:
                part.close()
        if self.ticks is not None and self.ticks.started:
            self.get_logger().info(f"published {self.ticks.published} ticks "
                                   f"({self.ticks.publish_errors} publish errors)")
        return super().destroy_node()


def main(args=None) -> int:
    # The SingleThreadedExecutor: the sim serves services, and once in two CI runs a service
    # response did not arrive in 10 s under the (experimental) EventsExecutor.
    return run_node(SimNode, args, errors=(ValueError, RuntimeError, OSError))


if __name__ == "__main__":
    sys.exit(main())
