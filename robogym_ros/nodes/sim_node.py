"""ROS 2 node ``robogym_sim``: a thin shell around the physics process.

The physics process paces itself; this node forwards. Ticks go out on the pump thread
(robogym_ros.nodes.tick_publisher), frames on the camera thread; the executor thread serves
commands, services, parameters and diagnostics. If the physics process dies, the node says
how and exits non-zero, so a launch file's ``respawn`` can bring the sim back.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from dataclasses import replace

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros import contract
from robogym_ros.camera.lens import Lens
from robogym_ros.contract import RunState
from robogym_ros.nodes import parameters
from robogym_ros.nodes.camera_publisher import start_cameras
from robogym_ros.nodes.diagnostics import CommandCounts, diagnostic_array, simulation_status
from robogym_ros.nodes.qos import COMMAND_QOS, DIAGNOSTICS_QOS, SPEC_QOS, STATE_QOS
from robogym_ros.nodes.sim_spec import build_spec
from robogym_ros.nodes.spin import StoppableNode, run_node
from robogym_ros.nodes.tick_publisher import TickPublisher
from robogym_ros.params import SIM_PARAMS
from robogym_ros.sim.commands import CommandRejected, validate_command
from robogym_ros.sim.loop import LoopConfig
from robogym_ros.sim.physics import default_model_path
from robogym_ros.sim.process import PhysicsProcessDied, SimProcess

EXIT_PHYSICS_DIED = 3


class SimNode(StoppableNode):
    """The sim as a ROS node: topics, commands, services, parameters and diagnostics."""

    def __init__(self, **kwargs):
        # What destroy_node touches exists before anything can fail: rclpy's shutdown
        # destroys a half-built node too.
        self.sim = self.cameras = self.ticks = None
        self.commands = CommandCounts()
        self._last_status = None
        super().__init__(contract.SIM_NODE, **kwargs)
        p = self.params = parameters.declare(self, SIM_PARAMS, self._on_parameter)
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
        self.ticks = TickPublisher(self, self.sim, [j.name for j in self.description.joints])
        self.pub_diag = self.create_publisher(DiagnosticArray, contract.DIAGNOSTICS, DIAGNOSTICS_QOS)
        # Private names: contract.SPEC_TOPIC and STATE_TOPIC ("robogym_sim/...") once resolved.
        self.pub_spec = self.create_publisher(String, "~/spec", SPEC_QOS)
        self.pub_state = self.create_publisher(String, "~/state", STATE_QOS)
        self.create_subscription(JointState, contract.JOINT_COMMANDS, self._on_command, COMMAND_QOS)
        self.create_service(Trigger, "~/pause", self._srv_pause)
        self.create_service(Trigger, "~/resume", self._srv_resume)
        self.create_service(Trigger, "~/reset", self._srv_reset)
        self.create_service(Trigger, "~/step", self._srv_step)
        self.diag_timer = self.create_timer(p["diagnostics_period_s"], self._publish_diagnostics)
        if p["camera_period_s"] > 0 and p["cameras"]:
            lens = Lens(p["camera_width_px"], p["camera_height_px"], fisheye=p["camera_fisheye"],
                        source_scale=p["camera_source_scale"])
            self.cameras = start_cameras(
                self, self.config.model_path, list(p["cameras"]), lens, p["camera_period_s"],
                control_dt_ns=self.description.control_dt_ns, hold_physics=self.sim.set_tick_limit,
                every_frame=self.config.real_time_factor == 0)
        self._publish_spec()
        self.ticks.start(self._on_tick, self._on_physics_death)
        self._publish_state(0 if p["start_paused"] else self.sim.resume(), "start", p["start_paused"])
        self.get_logger().info(
            f"{len(self.ranges)} joints, physics dt {self.config.physics_dt_s * 1e3:g} ms, control dt "
            f"{self.description.control_dt_ns * 1e-6:g} ms, real_time_factor "
            f"{self.config.real_time_factor:g}{', paused' if p['start_paused'] else ''}")

    # --- ticks -----------------------------------------------------------------------------
    def _on_tick(self, tick) -> None:
        if self.cameras is not None:
            self.cameras.offer(tick)
        if tick.blew_up:  # the loop reset the scene and paused itself
            self._publish_state(tick.index, "blow_up", True)

    def _on_physics_death(self) -> None:
        reason = f"physics process died ({self.sim.death()}): the sim cannot go on"
        self.get_logger().fatal(reason)
        self.request_stop(EXIT_PHYSICS_DIED, reason)

    def _publish_state(self, tick_index: int, reason: str, paused: bool) -> None:
        state = RunState(paused, int(tick_index) * self.description.control_dt_ns, reason)
        self.pub_state.publish(String(data=state.to_json()))

    def _publish_spec(self) -> None:
        cameras = self.cameras.spec() if self.cameras else ()
        self.spec = build_spec(self, self.description, model_path=self.config.model_path,
                               real_time_factor=self.config.real_time_factor, cameras=cameras,
                               camera_frames=self.cameras.mode if cameras else "", instance=self.instance)
        self.pub_spec.publish(String(data=self.spec.to_json()))

    # --- commands and services ---------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        try:
            targets = validate_command(msg.name, msg.position, msg.velocity, msg.effort, self.ranges)
        except CommandRejected as exc:
            self.commands.rejected += 1
            self.commands.last_rejection = str(exc)
            self.get_logger().warning(f"command rejected: {exc}")
            return
        self.sim.set_targets(targets)
        self.commands.accepted += 1

    def _serve(self, response, action):
        try:
            response.message = action()
            response.success = True
        except Exception as exc:  # noqa: BLE001 - the caller gets the reason, the node lives on
            response.success, response.message = False, str(exc)
        return response

    def _srv_pause(self, _request, response):
        return self._serve(response, lambda: self._change_run("pause", True))

    def _srv_resume(self, _request, response):
        return self._serve(response, lambda: self._change_run("resume", False))

    def _change_run(self, op: str, paused: bool) -> str:
        index = self.sim.pause() if paused else self.sim.resume()
        self._publish_state(index, op, paused)
        return "paused" if paused else "running"

    def _srv_reset(self, _request, response):
        def reset():
            draw = self.sim.reset()
            index = self.sim.status().tick_index
            self.ticks.wait_published(index)
            self._publish_state(index, "reset", True)
            return "reset, paused; " + ", ".join(f"{k}={v}" for k, v in draw.items())
        return self._serve(response, reset)

    def _srv_step(self, _request, response):
        def step():
            index = self.sim.step()
            self.ticks.wait_published(index)  # a caller may read the tick right away
            self._publish_state(index, "step", True)
            return f"stepped to tick {index}, t = {index * self.description.control_dt_ns * 1e-9:.6f} s"
        return self._serve(response, step)

    # --- parameters and diagnostics ----------------------------------------------------------
    def _on_parameter(self, name: str, value) -> None:
        if name == "camera_period_s" and self.cameras is None and value > 0:
            raise ValueError("cameras were off at start-up (camera_period_s 0 or no cameras): "
                             "restart the sim with camera_period_s > 0")
        if name in ("real_time_factor", "max_lag_s"):
            self.sim.configure(**{name: value})
            if name == "real_time_factor":
                self.config = replace(self.config, real_time_factor=value)
                self.description = self.sim.describe()
                if self.cameras is not None:
                    self.cameras.set_every_frame(value == 0)
        elif name == "camera_period_s":
            self.cameras.set_period(value)
        elif name == "diagnostics_period_s":
            self.diag_timer.timer_period_ns = round(value * 1e9)
        self.params[name] = value
        self._publish_spec()

    def _publish_diagnostics(self) -> None:
        try:
            status = self.sim.status()
        except PhysicsProcessDied:
            return  # the pump reports the death and stops the node
        previous, self._last_status = self._last_status, status
        cameras = None
        if self.cameras is not None:
            cameras = {"frames_rendered": self.cameras.rendered, "frames_skipped": self.cameras.skipped,
                       "error": self.cameras.error}
        level, message, values = simulation_status(
            status, previous, self.commands, published=self.ticks.published,
            publish_errors=self.ticks.publish_errors, cameras=cameras)
        self.pub_diag.publish(diagnostic_array(
            self.get_clock().now().to_msg(), f"{self.get_name()}: simulation",
            self.get_fully_qualified_name(), level, message, values))

    def destroy_node(self):
        # Physics first, while the pump still drains its ticks; then the pump, then the cameras.
        if self.ticks is not None:
            self.ticks.stopping()
        for part in (self.sim, self.ticks, self.cameras):
            if part is not None:
                part.close()
        if self.ticks is not None and self.ticks.started:
            self.get_logger().info(f"published {self.ticks.published} ticks "
                                   f"({self.ticks.publish_errors} publish errors)")
        return Node.destroy_node(self)


def main(args=None) -> int:
    return run_node(SimNode, args, errors=(ValueError, RuntimeError, OSError))


if __name__ == "__main__":
    sys.exit(main())
