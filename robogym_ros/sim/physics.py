"""The physics of one scene: load, discover servos, step in control ticks, reset, snapshot.

Imports neither ROS nor any rendering library: this module runs inside the real-time
process, and anything heavy imported here would cost start-up time and memory there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robogym_ros.contract import POSE_SIZE
from robogym_ros.sim.tick import Tick
from robogym_ros.sim.trajectory_follower import FollowerSet, TrajectoryCommand
from robogym_ros.task import scene

# The warnings of a blown-up state; their enum values run on, so their counts are one slice of data.warning.
_BLOW_UP_WARNINGS = sorted(int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                            mujoco.mjtWarning.mjWARN_BADQACC))
_BLOW_UP = slice(_BLOW_UP_WARNINGS[0], _BLOW_UP_WARNINGS[-1] + 1)
assert _BLOW_UP_WARNINGS == list(range(_BLOW_UP.start, _BLOW_UP.stop)), _BLOW_UP_WARNINGS
STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION
ACTUATOR_LOOKUPS_KEPT = 256  # joint-name sets remembered (a client naming joints anew each call stays bounded)


@dataclass(frozen=True)
class Joint:
    """A joint driven by a position servo, with the servo's target range."""

    name: str
    kind: str  # "hinge" | "slide"
    lower: float  # command range, from the actuator's ctrlrange (else the joint's range)
    upper: float

    @property
    def unit(self) -> str:
        return "rad" if self.kind == "hinge" else "m"


def _is_position_servo(model: mujoco.MjModel, a: int) -> bool:
    # A position actuator is force = kp*ctrl - kp*q (- kv*qdot): gain fixed, bias affine
    # with biasprm[1] == -gainprm[0]. Anything else (motor, velocity) is not a target servo.
    return (
        model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        and model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
        and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE
        and model.actuator_gainprm[a, 0] > 0
        and math.isclose(model.actuator_biasprm[a, 1], -model.actuator_gainprm[a, 0])
    )


def discover_joints(model: mujoco.MjModel) -> tuple[list[Joint], np.ndarray]:
    """Joints driven by position servos, in actuator order, and those actuator ids."""
    joints, actuators = [], []
    for a in range(model.nu):
        if not _is_position_servo(model, a):
            continue
        j = int(model.actuator_trnid[a, 0])
        kind = int(model.jnt_type[j])  # numpy ints do not compare with pybind enums in `in`
        if kind not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            continue
        if model.actuator_ctrllimited[a]:
            lower, upper = model.actuator_ctrlrange[a]
        elif model.jnt_limited[j]:
            lower, upper = model.jnt_range[j]
        else:
            lower, upper = -math.inf, math.inf
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"
        joints.append(Joint(name, "hinge" if kind == int(mujoco.mjtJoint.mjJNT_HINGE) else "slide",
                            float(lower), float(upper)))
        actuators.append(a)
    if not joints:
        raise ValueError("the model has no position actuators on hinge or slide joints")
    return joints, np.array(actuators, dtype=np.int64)


def ctrl_columns(model_path: str, joint_names) -> np.ndarray:
    """Where each joint's servo target (MjData.ctrl) sits in a tick's integration state."""
    model = mujoco.MjModel.from_xml_path(model_path)
    joints, actuators = discover_joints(model)
    actuator_of = {j.name: int(a) for j, a in zip(joints, actuators)}
    before_ctrl = int(STATE_SPEC) & (int(mujoco.mjtState.mjSTATE_CTRL) - 1)  # components stored before ctrl
    offset = mujoco.mj_stateSize(model, before_ctrl)
    return np.array([offset + actuator_of[n] for n in joint_names], dtype=np.int64)


def discover_objects(model: mujoco.MjModel) -> tuple[list[str], np.ndarray]:
    """Bodies with a free joint (block, tray, ...) and the qpos address of each pose."""
    names, adrs = [], []
    for j in range(model.njnt):
        if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
            body = int(model.jnt_bodyid[j])
            names.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or f"body{body}")
            adrs.append(int(model.jnt_qposadr[j]))
    return names, np.array(adrs, dtype=np.int64)


class Physics:
    """A MuJoCo scene advanced one control tick (``decimation`` physics steps) at a time."""

    def __init__(self, model_path: str, physics_dt_s: float, decimation: int, seed: int):
        if not physics_dt_s > 0:
            raise ValueError(f"physics_dt_s must be > 0, got {physics_dt_s}")
        if decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {decimation}")
        self.model = mujoco.MjModel.from_xml_path(model_path)
        self.model.opt.timestep = physics_dt_s
        self.data = mujoco.MjData(self.model)
        # A view of the blow-up warnings' counts, kept: indexing data.warning per tick is costly.
        self._blow_up_counts = self.data.warning.number[_BLOW_UP]
        self._no_blow_up = bytes(self._blow_up_counts.nbytes)  # their bytes while none happened
        self._state_size = mujoco.mj_stateSize(self.model, STATE_SPEC)
        self.decimation = int(decimation)
        # Integer nanoseconds keep the tick grid exact: stamp = index * control_dt_ns.
        self.physics_dt_ns = round(physics_dt_s * 1e9)
        self.control_dt_ns = self.physics_dt_ns * self.decimation
        self.joints, self._actuators = discover_joints(self.model)
        self.object_names, self._object_adr = discover_objects(self.model)
        j_ids = self.model.actuator_trnid[self._actuators, 0]
        self._qpos_adr = self.model.jnt_qposadr[j_ids].copy()
        self._dof_adr = self.model.jnt_dofadr[j_ids].copy()
        self._actuator_of = {j.name: int(a) for j, a in zip(self.joints, self._actuators)}
        self._actuators_of_names: dict[tuple[str, ...], np.ndarray] = {}  # the lookups made, by joint names
        self._pose_idx = (self._object_adr[:, None] + np.arange(POSE_SIZE)).ravel()
        # A snapshot's positions, velocities and poses are one gather from its state vector (which
        # starts with time, qpos, qvel): where each sits there.
        qpos_at = mujoco.mj_stateSize(self.model, mujoco.mjtState.mjSTATE_TIME)
        qvel_at = mujoco.mj_stateSize(self.model, mujoco.mjtState.mjSTATE_TIME | mujoco.mjtState.mjSTATE_QPOS)
        self._of_state = np.concatenate((qpos_at + self._qpos_adr, qvel_at + self._dof_adr, qpos_at + self._pose_idx))
        self._n_servos = len(self._actuators)
        self._all_names = tuple(j.name for j in self.joints)
        self._dual_arm = scene.is_dual_arm_scene(self.model)
        self._rng = np.random.default_rng(seed)
        # Which sequence the scene comes from, and its place in it: scene 0 is drawn here, so
        # scene 1 is the first reset's, what the env's local reset(seed=seed) gives.
        self.seed = int(seed)
        self.scene = -1
        # Target changes for the next tick, in arrival order: ("targets", {actuator: value}) or
        # ("trajectory", (TrajectoryCommand, its actuators)); order decides which of the two wins a joint.
        self._pending: list[tuple[str, object]] = []
        self._followers = FollowerSet()  # the running trajectories: the topic's, each arm controller's
        self.tick_index = 0  # control ticks since start; never reset
        self.episode = 0
        self.reset()

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def control_dt_s(self) -> float:
        return self.control_dt_ns * 1e-9

    @property
    def q(self) -> np.ndarray:
        """Joint positions, a copy (never a view into MjData)."""
        return self.data.qpos[self._qpos_adr]  # fancy indexing copies

    def reset(self) -> dict:
        """New episode: re-randomise, drop pending targets; the clock keeps running."""
        if self._dual_arm:
            draw = scene.reset_scene(self.model, self.data, self._rng)
        else:
            mujoco.mj_resetData(self.model, self.data)
            if self.model.nkey:
                mujoco.mj_resetDataKeyframe(self.model, self.data, 0)
            mujoco.mj_forward(self.model, self.data)
            draw = {}
        # Servos hold where the arm is, so a reset never yanks toward stale targets.
        self.data.ctrl[self._actuators] = self.data.qpos[self._qpos_adr]
        self._pending.clear()
        self._followers.clear()  # a reset drops the running trajectories
        self.episode += 1
        self.scene += 1
        return draw

    def reseed(self, seed: int) -> None:
        """Start ``seed``'s sequence: the next reset draws the scene the first reset of a
        Physics built with ``seed`` draws. Changes nothing in the running scene."""
        seed = int(seed)
        rng = np.random.default_rng(seed)
        if self._dual_arm:  # scene 0, drawn as __init__ draws it, into scratch data
            scene.reset_scene(self.model, mujoco.MjData(self.model), rng)
        self._rng, self.seed, self.scene = rng, seed, 0

    def reset_tick(self) -> dict:
        """A reset as a control tick of its own: a new episode under the next stamp.

        Stamps stay strictly increasing and on the grid, so the reset state can be published
        at once without repeating the stamp of the last tick of the old episode.
        """
        draw = self.reset()
        self.tick_index += 1
        return draw

    def actuators(self, names) -> np.ndarray:
        """The actuators of these joints: the one name lookup every command into physics makes
        (the node validated the message already; a name this model lacks raises, changing nothing)."""
        key = tuple(names)
        found = self._actuators_of_names.get(key)
        if found is None:
            unknown = [n for n in key if n not in self._actuator_of]
            if unknown:
                raise KeyError(f"unknown joints {unknown}")
            found = np.array([self._actuator_of[n] for n in key], dtype=np.int64)
            found.flags.writeable = False  # shared by every command naming these joints
            if len(self._actuators_of_names) < ACTUATOR_LOOKUPS_KEPT:
                self._actuators_of_names[key] = found
        return found

    def set_targets(self, targets: dict[str, float]) -> None:
        """Queue position targets; they take effect at the start of the next control tick."""
        actuators = self.actuators(targets)
        values = np.fromiter(targets.values(), dtype=np.float64, count=len(actuators))
        self._pending.append(("targets", (actuators, values, tuple(targets))))

    def set_all_targets(self, values: np.ndarray) -> None:
        """:meth:`set_targets` of every servo, in ``joint_names`` order (``values``: a new float64
        array the caller hands over; the env's path, no names to look up)."""
        if values.shape != (self._n_servos,):
            raise ValueError(f"targets for all {self._n_servos} servos expected, got shape {values.shape}")
        self._pending.append(("targets", (self._actuators, values, self._all_names)))

    # --- joint trajectories (robogym_ros.sim.trajectory_follower) --------------------------
    def set_trajectory(self, command: TrajectoryCommand) -> None:
        """Queue a trajectory; from the next control tick on it replaces the running one of
        its controller (``command.controller``) and takes its joints from the others.

        Its joints' later position targets (set_targets) end it for those joints only.
        """
        self._pending.append(("trajectory", (command, self.actuators(command.joint_names))))

    def _take_trajectory(self, command: TrajectoryCommand, actuators: np.ndarray, tick_start_ns: int) -> None:
        self._followers.take(command, actuators, tick_start_ns, self.data.ctrl[actuators])

    def _follow_trajectory(self, tick_start_ns: int) -> None:
        # Sampled at the tick's end, as ros2_control's trajectory controller does: the target
        # the joints should have reached when this tick's state is published.
        # A trajectory past its end is dropped: its last targets hold in ctrl.
        for actuators, targets in self._followers.targets(tick_start_ns + self.control_dt_ns):
            self.data.ctrl[actuators] = targets

    def step_tick(self) -> bool:
        """Advance one whole control tick at once (paused single step, as-fast-as-possible):
        the tick's physics steps in one call into MuJoCo, the same steps as step_physics takes."""
        return self.step_ticks(1)

    def step_ticks(self, n_ticks: int) -> bool:
        """:meth:`step_tick` ``n_ticks`` times, stopping at a tick that blew up (True: the scene was
        reset there). A tick with nothing queued and no trajectory running starts as it is."""
        m, d, k = self.model, self.data, self.decimation
        for _ in range(n_ticks):
            if self._pending or self._followers:
                self.begin_tick()
            mujoco.mj_step(m, d, k)
            if self.end_tick():
                return True
        return False

    def step_physics(self) -> None:
        """One physics step; the real-time loop paces these individually."""
        mujoco.mj_step(self.model, self.data)

    def begin_tick(self) -> None:
        # Zero-order hold: targets change only on the control-tick grid, as on hardware.
        tick_start_ns = self.tick_index * self.control_dt_ns
        for kind, value in self._pending:
            if kind == "trajectory":
                self._take_trajectory(*value, tick_start_ns)
                continue
            actuators, targets, names = value
            self.data.ctrl[actuators] = targets
            if self._followers:  # a later command wins its joints from this tick on
                self._followers.release(names)
        self._pending.clear()
        if self._followers:
            self._follow_trajectory(tick_start_ns)

    def end_tick(self) -> bool:
        """Close a control tick. True if the scene blew up, in which case it was reset."""
        self.tick_index += 1
        if self._blow_up_counts.tobytes() != self._no_blow_up:  # a bytes compare: ~7x cheaper than any()
            self._blow_up_counts[:] = 0
            self.reset()
            return True
        return False

    def snapshot(self, *, blew_up: bool = False) -> Tick:
        """The tick just completed, copied out of MjData (nothing in it aliases MjData)."""
        d = self.data
        state = np.empty(self._state_size)
        mujoco.mj_getState(self.model, d, state, STATE_SPEC)
        n = self._n_servos
        gathered = state[self._of_state]  # one new buffer: the tick's own, as a received tick's
        return Tick(
            index=self.tick_index,
            stamp_ns=self.tick_index * self.control_dt_ns,
            episode=self.episode,
            position=gathered[:n],
            velocity=gathered[n:2 * n],
            effort=d.actuator_force[self._actuators],
            object_poses=gathered[2 * n:].reshape(-1, POSE_SIZE),
            state=state,
            blew_up=blew_up,
        )
