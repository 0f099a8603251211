"""ROS 2 node ``robogym_sim``: a thin shell around the physics process.

The physics process paces itself; this node forwards. Ticks go out on the pump thread
(nodes/sim_node/ticks.py), frames on the camera thread (nodes/sim_node/cameras.py); joint_commands
(nodes/sim_node/commands/joint_commands.py) and lockstep step requests each have a thread of their own; the
executor thread serves trajectories, services (nodes/sim_node/run_state/trigger_services.py), parameters
and diagnostics.
Every change of run state, whoever asks for it, goes through one machine (nodes/sim_node/run_state/machine.py).
If the physics process dies, the node says how and exits non-zero, so a launch file's
``respawn`` can bring the sim back.
"""
from __future__ import annotations

import os
import sys
import time

from std_msgs.msg import String

from robogym_ros import contract
from robogym_ros.camera.lens import Lens
from robogym_ros.nodes.sim_node import parameters
from robogym_ros.nodes.sim_node.arm_controllers.controllers import ArmControllers
from robogym_ros.nodes.sim_node.cameras import start_cameras
from robogym_ros.nodes.sim_node.commands.clock_check import SimClockCheck
from robogym_ros.nodes.sim_node.commands.joint_commands import JointCommands
from robogym_ros.nodes.sim_node.commands.joint_trajectory import TrajectorySubscriber
from robogym_ros.nodes.sim_node.description import DescriptionPublisher
from robogym_ros.nodes.sim_node.diagnostics import CommandCounts, SimDiagnostics
from robogym_ros.nodes.sim_node.run_state.machine import Busy, RunStates
from robogym_ros.nodes.sim_node.run_state.step_requests import StepRequests
from robogym_ros.nodes.sim_node.run_state.step_results import StepResults
from robogym_ros.nodes.sim_node.run_state.trigger_services import RunControl
from robogym_ros.nodes.sim_node.second_instance import SecondInstanceCheck, is_elder, refusal
from robogym_ros.nodes.sim_node.simulation_interfaces.services import SimulationInterfaces
from robogym_ros.nodes.sim_node.spec import build_spec
from robogym_ros.nodes.sim_node.ticks import TickPublisher
from robogym_ros.params import SIM_PARAMS
from robogym_ros.ros.node_runner import StoppableNode, run_node
from robogym_ros.ros.qos import SPEC_QOS
from robogym_ros.sim.loop import LoopConfig
from robogym_ros.sim.process import SimProcess
from robogym_ros.task.scene import default_model_path

EXIT_PHYSICS_DIED = 3
EXIT_SECOND_INSTANCE = 1  # as a start-up error: respawning would meet the same other sim
STEPPING_PARAMETERS = ("real_time_factor", "max_lag_s", "seed")  # a change goes through the run-state machine


class SimNode(StoppableNode):
    """The sim as a ROS node: topics, commands, services, parameters and diagnostics."""

    def __init__(self, **kwargs):
        # What destroy_node touches exists before anything can fail: a failed build is
        # abandoned (run_node), and that tears down whatever was built (the physics process,
        # the step-request and action threads).
        self.sim = self.cameras = self.ticks = self.sim_api = self.run_control = self.step_requests = None
        self.joint_commands = None
        self.controllers = self.run_states = None
        self.commands = CommandCounts()
        super().__init__(contract.SIM_NODE, **kwargs)
        p = self.params = parameters.declare(self, SIM_PARAMS, self._on_parameter, check=self._check_parameter,
                                             admit=self._admit_parameters)
        # listens for another sim's latched spec while this one is built (second_instance.py)
        second = None if p["allow_second_instance"] else SecondInstanceCheck(self)
        config = LoopConfig(
            model_path=p["model"] or default_model_path(), physics_dt_s=p["physics_dt_s"],
            decimation=p["decimation"], seed=p["seed"], real_time_factor=p["real_time_factor"],
            # Always paused until this node can take ticks: GL set-up takes ~1 s on llvmpipe,
            # and a running physics process would stall on the full tick pipe meanwhile.
            start_paused=True, max_lag_s=p["max_lag_s"])
        self.sim = SimProcess(config)
        self.model_path = config.model_path
        self.instance = f"{os.getpid()}-{time.time_ns()}"
        self.description = self.sim.describe()  # fixed for the process's life
        self.physics_scheduling = self.description.scheduling  # a pace change may change it
        self.ranges = {j.name: (j.lower, j.upper) for j in self.description.joints}
        self.ticks = TickPublisher(self, self.sim, [j.name for j in self.description.joints], self.model_path)
        self.frames = DescriptionPublisher(self, self.model_path, self.description.objects)
        # FollowJointTrajectory servers where control_msgs is; commands reach physics through them
        self.controllers = ArmControllers(self, self.sim, self.description.joints, self.model_path)
        # one stamp check for both command inputs: joint_commands warn, trajectories are refused
        self.clock = SimClockCheck(self, self._physics_now_ns, self.commands)
        self.trajectories = TrajectorySubscriber(  # "now" for a trajectory stamped 0: physics time
            self, self.controllers, self.ranges, counts=self.commands, now_ns=self._physics_now_ns,
            clock=self.clock)
        self.joint_commands = JointCommands(self, self.controllers, self.ranges, self.commands, self.clock)
        dt_ns = self.description.control_dt_ns
        # every client changes the run state through it; what joint_commands brought before applies first
        self.run_states = RunStates(self, self.sim, dt_ns, before_change=self.joint_commands.flush)
        self.step_results = StepResults(self, dt_ns)
        self.run_control = RunControl(self, self.run_states, self.step_results, dt_ns)
        self.step_requests = StepRequests(self, self.sim, self.run_states, self.step_results, dt_ns, self.ranges)
        self.sim_api = SimulationInterfaces(self, self.sim, self.run_states,  # the standard API
                                            self.model_path, dt_ns)
        if second is not None:
            second.refuse_if_found()
        self.pub_spec = self.create_publisher(String, "~/spec", SPEC_QOS)  # = contract.SPEC_TOPIC
        if second is not None:  # discovery slower than the wait: the younger sim gives way later
            self.create_subscription(String, "~/spec", self._on_spec_seen, SPEC_QOS)
        self.diagnostics = SimDiagnostics(self, self.sim, p["diagnostics_period_s"], self._figures)
        if p["camera_period_s"] > 0 and p["cameras"]:
            lens = Lens(p["camera_width_px"], p["camera_height_px"], fisheye=p["camera_fisheye"],
                        source_scale=p["camera_source_scale"])
            self.cameras = start_cameras(
                self, self.model_path, list(p["cameras"]), lens, p["camera_period_s"],
                control_dt_ns=self.description.control_dt_ns, hold_physics=self.sim.set_tick_limit,
                every_frame=p["real_time_factor"] == 0)
        self._publish_spec()
        self.ticks.start(self._on_tick, self._on_physics_death)
        with self.run_states.own("the sim's start") as run:
            run.start(p["start_paused"], p["seed"])  # scene 0 of the seed's sequence (Physics.scene)
        self.get_logger().info(
            f"{len(self.ranges)} joints, physics dt {config.physics_dt_s * 1e3:g} ms, control dt "
            f"{self.description.control_dt_ns * 1e-6:g} ms, real_time_factor "
            f"{p['real_time_factor']:g}{', paused' if p['start_paused'] else ''}")

    def _on_spec_seen(self, msg: String) -> None:
        if self.exit_code is None and is_elder(msg.data, self.instance):
            reason = refusal(self.get_namespace(), msg.data)
            self.get_logger().fatal(reason)
            self.request_stop(EXIT_SECOND_INSTANCE, reason)

    def _physics_now_ns(self) -> int:
        return self.sim.status().tick_index * self.description.control_dt_ns

    def _on_tick(self, tick) -> None:
        self.frames.publish(tick)
        self.controllers.on_tick(tick)
        if self.cameras is not None:
            self.cameras.offer(tick)
        self.step_results.remember(tick)
        self.run_states.on_tick(tick)  # last: a blow-up is reported, then waiting answers go out

    def _on_physics_death(self) -> None:
        reason = f"physics process died ({self.sim.death()}): the sim cannot go on"
        self.get_logger().fatal(reason)
        self.request_stop(EXIT_PHYSICS_DIED, reason)

    def _publish_spec(self) -> None:
        cameras = self.cameras.spec() if self.cameras else ()
        self.spec = build_spec(self, self.description, model_path=self.model_path,
                               real_time_factor=self.params["real_time_factor"],
                               physics_scheduling=self.physics_scheduling, cameras=cameras,
                               camera_frames=self.cameras.mode if cameras else "", instance=self.instance,
                               extra_topics={**self.frames.spec_topics(self),
                                             "joint_trajectory": self.trajectories.spec_topic(),
                                             "step_request": self.step_requests.spec_topic()},
                               extra={"tf": self.frames.tf_status, "controllers": self.controllers.spec(),
                                      "seed": self.params["seed"],  # the sequence the next reset draws from
                                      "simulation_interfaces": self.sim_api.spec()})
        self.pub_spec.publish(String(data=self.spec.to_json()))

    def _check_parameter(self, name: str, value) -> None:
        """A live change asked for (range already checked): ValueError refuses the whole batch.
        Changes nothing: the batch is applied only once every parameter of it passed."""
        if name == "camera_period_s" and self.cameras is None and value > 0:
            raise ValueError("cameras were off at start-up (camera_period_s 0 or no cameras): "
                             "restart the sim with camera_period_s > 0")

    def _admit_parameters(self, changes: dict) -> None:
        """A batch that changes how the sim steps is applied to physics under one claim of the run
        state, before rclpy stores it: refused (the same reason every client gets, nothing changed)
        while a simulate_steps goal or a step owns it."""
        stepping = {n: v for n, v in changes.items() if n in STEPPING_PARAMETERS}
        if not stepping:
            return
        try:
            with self.run_states.own(f"a parameter change ({', '.join(stepping)})") as run:
                for name, value in stepping.items():
                    if name == "seed":  # the next reset starts this seed's sequence
                        run.reseed(value)
                    else:
                        self.physics_scheduling = run.configure(**{name: value})
        except Busy as exc:
            raise ValueError(str(exc)) from None

    def _on_parameter(self, name: str, value) -> None:
        """A live parameter changed: its batch passed _check_parameter and _admit_parameters,
        and rclpy stored it."""
        if name == "real_time_factor" and self.cameras is not None:  # physics has it already
            self.cameras.set_every_frame(value == 0)
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

    def abandon(self) -> None:
        self.destroy_node()

    def destroy_node(self):
        if self.joint_commands is not None:  # no command reaches the controllers once they close
            self.joint_commands.close()
        if self.controllers is not None:  # their goals end (aborted) before the physics does
            self.controllers.close()
        # Physics first, while the pump still drains its ticks; then the pump, then the cameras.
        if self.ticks is not None:
            self.ticks.stopping()
        for part in (self.sim_api, self.step_requests, self.sim, self.ticks, self.cameras):  # a running action first
            if part is not None:
                part.close()
        if self.ticks is not None and self.ticks.started:
            self.get_logger().info(f"published {self.ticks.published} ticks "
                                   f"({self.ticks.publish_errors} publish errors)")
        return super().destroy_node()


def leave_real_time() -> None:
    """This process runs at the ordinary policy: started from a real-time (SCHED_FIFO) thread it
    would inherit that, and its threads at one FIFO priority never take turns, so the camera
    threads would keep the tick pump off the cores and physics would wait on a full tick pipe.
    Physics alone is real time (it sets that itself, in its own process)."""
    try:
        policy = os.sched_getscheduler(0)
        if policy != os.SCHED_OTHER:
            for tid in os.listdir("/proc/self/task"):  # the threads imports started too (BLAS)
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
            print(f"[robogym_sim] WARNING: started with a real-time scheduling policy ({policy}); the node runs "
                  "at SCHED_OTHER (physics sets its own)", file=sys.stderr)
    except (AttributeError, OSError):  # not Linux
        pass


def main(args=None) -> int:
    leave_real_time()  # before any thread is started: they inherit it
    # The SingleThreadedExecutor: the sim serves services, and once in two CI runs a service
    # response did not arrive in 10 s under the (experimental) EventsExecutor.
    return run_node(SimNode, args, errors=(ValueError, RuntimeError, OSError))

