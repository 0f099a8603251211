"""ROS 2 node ``robogym_sim``: a thin shell around the physics process.

The physics process paces itself; this node only forwards. A pump thread receives each
tick and publishes it (joint_states, ground truth, /clock) as soon as it arrives, so the
executor thread (commands, services, diagnostics) never sits between physics and topics.
"""
from __future__ import annotations

import sys
import threading

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robogym_ros import interface as itf
from robogym_ros import messages
from robogym_ros.cameras import DEFAULT_CAMERAS, CameraPipeline, select_cameras
from robogym_ros.commands import CommandRejected, validate_command
from robogym_ros.lens import Lens
from robogym_ros.physics import default_model_path
from robogym_ros.realtime import LoopConfig, SimProcess
from robogym_ros.spin import run_node

try:
    from rclpy._rclpy_pybind11 import RCLError
except ImportError:  # pragma: no cover - older rclpy
    RCLError = RuntimeError

PARAMETERS = {  # name: (default, description with unit)
    "physics_dt_s": (0.002, "physics integration step [s]"),
    "decimation": (5, "physics steps per control tick; control_dt_s = physics_dt_s * decimation"),
    "real_time_factor": (1.0, "sim seconds per wall second; 0 = as fast as possible"),
    "seed": (0, "seed of the reset randomisation (block/tray side, yaw, upright)"),
    "start_paused": (False, "start paused; resume or step through the services"),
    "model": ("", "MJCF file path; empty = the built-in two-arm SO-101 scene"),
    "max_lag_s": (0.5, "when physics falls this far behind wall time [s], skip ahead"),
    "diagnostics_period_s": (1.0, "period of /diagnostics [s, wall]"),
    "cameras": (list(DEFAULT_CAMERAS), "cameras to render (MJCF camera names)"),
    "camera_period_s": (0.1, "camera frame period [s, sim]: its own clock; 0 = cameras off"),
    "camera_width_px": (320, "image width [px]; the FOV stays 79.5 x 59.6 deg"),
    "camera_height_px": (240, "image height [px]"),
    "camera_fisheye": (True, "U20CAM equidistant fisheye lens; false = plain pinhole"),
    "camera_source_scale": (1.0, "pinhole render resolution / fisheye centre resolution; "
                                 "< 1 renders fewer pixels (faster, softer centre)"),
}


class SimNode(Node):
    def __init__(self, **kwargs):
        super().__init__(itf.SIM_NODE, **kwargs)
        self._stopping = threading.Event()
        self._pump = None
        self.sim = None
        self.cameras = None
        p = {name: self.declare_parameter(name, default, ParameterDescriptor(description=desc)).value
             for name, (default, desc) in PARAMETERS.items()}
        config = LoopConfig(
            model_path=p["model"] or default_model_path(),
            physics_dt_s=float(p["physics_dt_s"]), decimation=int(p["decimation"]),
            seed=int(p["seed"]), real_time_factor=float(p["real_time_factor"]),
            # Always paused until this node can take ticks: GL set-up takes ~1 s on llvmpipe,
            # and a running physics process would stall on the full tick pipe meanwhile.
            start_paused=True, max_lag_s=float(p["max_lag_s"]))
        self.config = config
        self.sim = SimProcess(config)
        self.description = self.sim.call("describe")
        self.joint_names = [j["name"] for j in self.description["joints"]]
        self._ranges = {j["name"]: (j["lower"], j["upper"]) for j in self.description["joints"]}

        self.pub_joints = self.create_publisher(JointState, itf.JOINT_STATES, itf.STREAM_QOS)
        self.pub_truth = self.create_publisher(JointState, itf.TRUTH_JOINTS, itf.STREAM_QOS)
        self.pub_objects = self.create_publisher(PoseArray, itf.TRUTH_OBJECTS, itf.STREAM_QOS)
        self.pub_clock = self.create_publisher(Clock, itf.CLOCK, itf.CLOCK_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, itf.DIAGNOSTICS, 10)
        self.pub_spec = self.create_publisher(String, itf.SPEC, itf.SPEC_QOS)
        self.create_subscription(JointState, itf.JOINT_COMMANDS, self._on_command, itf.COMMAND_QOS)
        for name in ("pause", "resume", "reset", "step"):
            self.create_service(Trigger, "~/" + name, getattr(self, "_srv_" + name))
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)

        self.accepted = 0
        self.rejected = 0
        self.last_rejection = ""
        self.published = 0
        self.publish_errors = 0
        self._published_index = 0
        self._published_cv = threading.Condition()
        self._last_status: dict | None = None
        self.cameras = None
        cameras = select_cameras(p["cameras"], config.model_path)
        if p["camera_period_s"] > 0 and cameras:
            lens = Lens(int(p["camera_width_px"]), int(p["camera_height_px"]),
                        fisheye=bool(p["camera_fisheye"]),
                        source_scale=float(p["camera_source_scale"]))
            try:
                self.cameras = CameraPipeline(self, config.model_path, cameras, lens,
                                              float(p["camera_period_s"]))
            except Exception:
                self.sim.close()
                raise
        self.pub_spec.publish(String(data=itf.spec_to_json(self.spec())))

        self._pump = threading.Thread(target=self._pump_ticks, name="tick_pump", daemon=True)
        self._pump.start()
        if not p["start_paused"]:
            self.sim.call("resume")
        self.get_logger().info(
            f"{len(self.joint_names)} joints, physics dt {config.physics_dt_s * 1e3:g} ms, "
            f"control dt {self.control_dt_s * 1e3:g} ms, real_time_factor "
            f"{config.real_time_factor:g}{', paused' if p['start_paused'] else ''}")

    @property
    def control_dt_s(self) -> float:
        return self.description["control_dt_ns"] * 1e-9

    # --- the tick path ------------------------------------------------------------------
    def _pump_ticks(self) -> None:
        while not self._stopping.is_set():
            try:
                tick = self.sim.recv_tick(0.1)
            except (EOFError, OSError):
                if not self._stopping.is_set():
                    self.get_logger().fatal("physics process died")
                return
            if tick is not None:
                self._publish_tick(tick)
                if self.cameras is not None:
                    self.cameras.offer(tick)

    def _publish_tick(self, tick) -> None:
        msgs = (
            (self.pub_joints, messages.joint_state(tick, self.joint_names)),
            (self.pub_truth, messages.joint_state(tick, self.joint_names)),
            (self.pub_objects, messages.object_poses(tick)),
            (self.pub_clock, messages.clock(tick)),
        )
        for pub, msg in msgs:
            try:
                pub.publish(msg)
            except RCLError:  # a full or closing transport: count it, keep the sim going
                self.publish_errors += 1
        self.published += 1
        with self._published_cv:
            self._published_index = tick.index
            self._published_cv.notify_all()

    # --- commands -----------------------------------------------------------------------
    def _on_command(self, msg: JointState) -> None:
        try:
            targets = validate_command(msg.name, msg.position, msg.velocity, msg.effort,
                                       self._ranges)
        except CommandRejected as exc:
            self.rejected += 1
            self.last_rejection = str(exc)
            self.get_logger().warning(f"command rejected: {exc}")
            return
        self.sim.send("targets", targets)
        self.accepted += 1

    # --- services -----------------------------------------------------------------------
    def _trigger(self, response, fn):
        try:
            response.message = fn()
            response.success = True
        except Exception as exc:  # noqa: BLE001 - the caller gets the reason, the node lives on
            response.success, response.message = False, str(exc)
        return response

    def _srv_pause(self, _request, response):
        return self._trigger(response, lambda: self._call("pause", "paused"))

    def _srv_resume(self, _request, response):
        return self._trigger(response, lambda: self._call("resume", "running"))

    def _call(self, op: str, message: str) -> str:
        self.sim.call(op)
        return message

    def _srv_reset(self, _request, response):
        def reset():
            draw = self.sim.call("reset")
            return "reset, paused; " + ", ".join(f"{k}={v}" for k, v in draw.items())
        return self._trigger(response, reset)

    def _srv_step(self, _request, response):
        def step():
            index = self.sim.call("step")
            # Answer only once that tick is on the wire: a caller may read it right away.
            with self._published_cv:
                if not self._published_cv.wait_for(lambda: self._published_index >= index, 5.0):
                    raise TimeoutError(f"tick {index} was not published within 5 s")
            return f"stepped to tick {index}, t = {index * self.control_dt_s:.6f} s"
        return self._trigger(response, step)

    # --- introspection ------------------------------------------------------------------
    def spec(self) -> dict:
        d = self.description
        period = self.control_dt_s
        topics = {
            "joint_states": itf.topic_entry(self.pub_joints.topic_name, "sensor_msgs/msg/JointState",
                                            period, itf.STREAM_QOS),
            "ground_truth_joints": itf.topic_entry(self.pub_truth.topic_name,
                                                   "sensor_msgs/msg/JointState", period,
                                                   itf.STREAM_QOS),
            "ground_truth_objects": itf.topic_entry(self.pub_objects.topic_name,
                                                    "geometry_msgs/msg/PoseArray", period,
                                                    itf.STREAM_QOS),
            "joint_commands": itf.topic_entry(self.resolve_topic_name(itf.JOINT_COMMANDS),
                                              "sensor_msgs/msg/JointState", None, itf.COMMAND_QOS),
            "clock": itf.topic_entry(itf.CLOCK, "rosgraph_msgs/msg/Clock", period, itf.CLOCK_QOS),
        }
        return {
            "format": itf.SPEC_FORMAT,
            "node": self.get_fully_qualified_name(),
            "model": self.config.model_path,
            "joints": d["joints"],
            "objects": d["objects"],
            "object_pose_layout": ["x", "y", "z", "qw", "qx", "qy", "qz"],
            "physics_dt_s": d["physics_dt_ns"] * 1e-9,
            "physics_dt_ns": d["physics_dt_ns"],
            "decimation": d["decimation"],
            "control_dt_s": self.control_dt_s,
            "control_dt_ns": d["control_dt_ns"],
            "real_time_factor": self.config.real_time_factor,
            "physics_scheduling": d["scheduling"],
            "stamps": "header.stamp = sim time of the tick = tick_index * control_dt_ns",
            "topics": topics,
            "cameras": self.cameras.spec() if self.cameras else [],
            "services": {n: self.resolve_service_name("~/" + n) for n in
                         ("pause", "resume", "reset", "step")},
        }

    def _publish_diagnostics(self) -> None:
        try:
            status = self.sim.call("status")
        except (OSError, EOFError) as exc:
            self.get_logger().error(f"physics process unreachable: {exc}")
            return
        prev, self._last_status = self._last_status, status
        rtf = float("nan")
        if prev is not None and status["wall_time_s"] > prev["wall_time_s"]:
            rtf = ((status["sim_time_ns"] - prev["sim_time_ns"]) * 1e-9
                   / (status["wall_time_s"] - prev["wall_time_s"]))
        values = {
            "sim_time_s": status["sim_time_ns"] * 1e-9,
            "real_time_factor_achieved": rtf,
            "real_time_factor_target": self.config.real_time_factor,
            "paused": status["paused"],
            "episode": status["episode"],
            "late_steps": status["late_steps"],
            "max_lateness_s": status["max_lateness_s"],
            "resets": status["resets"],
            "skipped_s": status["skipped_s"],
            "commands_accepted": self.accepted,
            "commands_rejected": self.rejected,
            "last_rejection": self.last_rejection,
            "ticks_published": self.published,
            "publish_errors": self.publish_errors,
        }
        if self.cameras is not None:
            values |= {"camera_frames_rendered": self.cameras.rendered,
                       "camera_frames_skipped": self.cameras.skipped,
                       "camera_error": self.cameras.error}
        level = DiagnosticStatus.OK
        message = "paused" if status["paused"] else "running"
        if (status["resets"] or status["late_steps"] or self.publish_errors
                or (self.cameras and self.cameras.error)):
            level = DiagnosticStatus.WARN
            message += "; see late_steps / resets / publish_errors"
        diag = DiagnosticArray()
        diag.header.stamp = self.get_clock().now().to_msg()
        diag.status.append(DiagnosticStatus(
            level=level, name=f"{self.get_name()}: simulation", message=message,
            hardware_id=self.get_fully_qualified_name(),
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()]))
        self.pub_diag.publish(diag)

    def destroy_node(self):
        self._stopping.set()
        if self._pump is not None and self._pump.is_alive():
            self._pump.join(2.0)
        if self.cameras is not None:
            self.cameras.close()
        if self.sim is not None:
            self.sim.close()
        self.get_logger().info(f"published {self.published} ticks "
                               f"({self.publish_errors} publish errors)")
        return super().destroy_node()


def main(args=None) -> int:
    return run_node(SimNode, args, errors=(ValueError, RuntimeError, OSError))


if __name__ == "__main__":
    sys.exit(main())
