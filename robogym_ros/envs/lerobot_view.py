"""The handover as LeRobot's gym envs present themselves, for ``lerobot-eval`` (no lerobot import).

LeRobot's evaluator (``lerobot.envs.utils.preprocess_observation``) reads the observation keys
its own gym envs (gym_pusht, gym_aloha) give and renames them to a dataset's features:

=====================  =====================================  ===================================
observation key        dataset feature                        here
=====================  =====================================  ===================================
``agent_pos``          ``observation.state``                  the 12 joint positions (rad)
``environment_state``  ``observation.environment_state``      block pose, then tray pose, each
                                                              ``contract.POSE_LAYOUT`` (14), or
                                                              another layout of
                                                              envs.environment_state
``pixels/<camera>``    ``observation.images.<camera>``        uint8 (h, w, 3), the export's lens
=====================  =====================================  ===================================

so a policy trained on a dataset that ``python -m robogym_ros.export.lerobot`` wrote consumes
these observations unchanged. Actions are what that dataset holds: the 12 servo targets in rad
(the env is made with ``normalize_actions=False``), or with ``action_mode="relative"`` each
target less the joint's position in the observation the action answers (the export's
``--relative-actions``): the target sent is that position plus the action. A policy's action
outside a joint's range is clipped to it, as a servo clamps its target, and counted in
``info["actions_clipped"]`` (joints clipped this step); a value that is not finite is refused
(ValueError naming the joint), as the env refuses it. ``info["is_success"]`` is the env's own
success, as a bool. ``metadata["render_fps"]`` is the env's integer step rate (25 at the defaults).
"""
from __future__ import annotations

from collections.abc import Sequence

import gymnasium
import mujoco
import numpy as np
from gymnasium import spaces

from robogym_ros.contract import POSE_SIZE
from robogym_ros.envs.environment_state import OBJECTS, EnvironmentState, environment_state_size
from robogym_ros.envs.environment_state import check_layout as check_environment_state
from robogym_ros.envs.handover import HandoverEnv
from robogym_ros.sim.physics import discover_joints
from robogym_ros.task.scene import default_model_path

AGENT_POS = "agent_pos"
ENVIRONMENT_STATE = "environment_state"
PIXELS = "pixels"
# LeRobot's names for which keys an env gives (gym_pusht: environment_state_agent_pos; gym_aloha:
# pixels_agent_pos), and one with all three: what a policy trained on an exported dataset with
# its images and environment state may ask for.
OBS_TYPES = {
    "environment_state_agent_pos": (AGENT_POS, ENVIRONMENT_STATE),
    "pixels_agent_pos": (AGENT_POS, PIXELS),
    "pixels_environment_state_agent_pos": (AGENT_POS, ENVIRONMENT_STATE, PIXELS),
}
DEFAULT_OBS_TYPE = "pixels_environment_state_agent_pos"
DEFAULT_TASK = "hand the block to the other arm and lay it in the tray"
# the action: the targets (absolute), or the targets less the observed joint positions (relative)
ACTION_MODES = ("absolute", "relative")


def check_layout(environment_state: str, action_mode: str) -> None:
    """ValueError naming the argument that is not one of its choices."""
    check_environment_state(environment_state)
    if action_mode not in ACTION_MODES:
        raise ValueError(f"action_mode must be one of {list(ACTION_MODES)}, got {action_mode!r}")


class LeRobotView(gymnasium.Wrapper):
    """``env`` (a HandoverEnv with actions in rad) with LeRobot's observation keys."""

    def __init__(self, env: gymnasium.Env, obs_type: str = DEFAULT_OBS_TYPE, task_description: str = DEFAULT_TASK,
                 environment_state: str = "objects", action_mode: str = "absolute"):
        super().__init__(env)
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {sorted(OBS_TYPES)}, got {obs_type!r}")
        check_layout(environment_state, action_mode)
        u = env.unwrapped
        if not isinstance(u, HandoverEnv):
            raise ValueError(f"LeRobotView wraps a HandoverEnv, got {type(u).__name__}")
        if np.all(u.action_space.low == -1.0) and np.all(u.action_space.high == 1.0):
            raise ValueError("LeRobotView needs the env's actions in rad, as datasets hold them: "
                             "make it with normalize_actions=False")
        self.obs_type = obs_type
        self.keys = OBS_TYPES[obs_type]
        if PIXELS in self.keys and not u.cameras:
            raise ValueError(f"obs_type {obs_type!r} gives pixels: make the env with cameras=[...]")
        self.task_description = task_description
        self.task = "robogym_handover"  # LeRobot's evaluator asks envs for `task` and `task_description`
        self._positions = u.layout.positions
        missing = [o for o in OBJECTS if o not in u.object_names]
        if missing:
            raise ValueError(f"environment_state needs the objects {OBJECTS}; the scene lacks {missing}")
        start = u.layout.object_poses.start
        self._env_state = np.concatenate([start + POSE_SIZE * u.object_names.index(o) + np.arange(POSE_SIZE)
                                          for o in OBJECTS])
        self._make_environment_state = EnvironmentState(environment_state, u.joint_names)
        self.environment_state = environment_state
        self.action_mode = action_mode
        self._cameras = u.cameras
        inner = u.observation_space
        entries = {}
        if AGENT_POS in self.keys:
            box = inner["observation"]
            entries[AGENT_POS] = spaces.Box(box.low[self._positions], box.high[self._positions], dtype=np.float64)
        if ENVIRONMENT_STATE in self.keys:
            box = inner["observation"]
            low, high = box.low[self._env_state], box.high[self._env_state]
            if environment_state != "objects":  # numbers computed from the poses and joints: unbounded here
                size = self._make_environment_state.size
                low, high = np.full(size, -np.inf), np.full(size, np.inf)
            entries[ENVIRONMENT_STATE] = spaces.Box(low, high, dtype=np.float64)
        if PIXELS in self.keys:
            entries[PIXELS] = spaces.Dict({c: inner[f"pixels/{c}"] for c in self._cameras})
        self.observation_space = spaces.Dict(entries)
        self._low = u.action_space.low.astype(np.float64)
        self._high = u.action_space.high.astype(np.float64)
        if action_mode == "relative":  # any target in range is reachable from any position in range
            span = (self._high - self._low).astype(u.action_space.dtype)
            self.action_space = spaces.Box(-span, span, dtype=u.action_space.dtype)
        else:
            self.action_space = u.action_space
        self._joints_now = np.zeros(len(self._low))  # the positions the next relative action adds to

    def observation(self, obs: dict) -> dict:
        """LeRobot's keys from the env's observation: new arrays (float64, uint8)."""
        out = {}
        flat = obs["observation"]
        self._joints_now = flat[self._positions]  # fancy indexing: a new array
        if AGENT_POS in self.keys:
            out[AGENT_POS] = self._joints_now.copy()
        if ENVIRONMENT_STATE in self.keys:
            out[ENVIRONMENT_STATE] = self._make_environment_state(flat[self._env_state], self._joints_now)
        if PIXELS in self.keys:
            out[PIXELS] = {c: obs[f"pixels/{c}"] for c in self._cameras}
        return out

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self.observation(obs), self._info(info, 0)

    def step(self, action):
        a = np.asarray(action, dtype=np.float64)
        if self.action_mode == "relative" and a.shape == self._low.shape:
            a = self._joints_now + a  # NaN stays NaN
        if a.shape == self._low.shape:
            clipped = np.clip(a, self._low, self._high)  # NaN stays NaN: the env refuses it, naming the joint
            n_clipped = int(np.count_nonzero(clipped != a) - np.count_nonzero(np.isnan(a)))
            a = clipped
        else:
            n_clipped = 0  # the env refuses the shape with its own message
        obs, reward, terminated, truncated, info = self.env.step(a)
        return self.observation(obs), reward, terminated, truncated, self._info(info, n_clipped)

    @staticmethod
    def _info(info: dict, n_clipped: int) -> dict:
        return {**info, "is_success": bool(info["is_success"]), "actions_clipped": n_clipped}


def make_lerobot_env(obs_type: str = DEFAULT_OBS_TYPE, cameras: Sequence[str] = ("overhead",),
                     observation_width: int = 320, observation_height: int = 240,
                     render_mode: str | None = None, task_description: str = DEFAULT_TASK,
                     environment_state: str = "objects", action_mode: str = "absolute",
                     **env_kwargs) -> LeRobotView:
    """The entry point of ``robogym_ros/LeRobotHandover-v0``: a HandoverEnv in rad with the cameras
    the observation type needs (none without pixels; ``render_mode="rgb_array"`` renders the
    first of ``cameras`` for videos), seen through :class:`LeRobotView`."""
    if obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type must be one of {sorted(OBS_TYPES)}, got {obs_type!r}")
    check_layout(environment_state, action_mode)
    if isinstance(cameras, str):
        cameras = [c.strip() for c in cameras.split(",") if c.strip()]
    cameras = tuple(cameras)
    if not cameras:
        raise ValueError("cameras must name at least one camera (pixels, and the camera render_mode shows)")
    pixels = PIXELS in OBS_TYPES[obs_type]
    env = HandoverEnv(normalize_actions=False, cameras=cameras if pixels else (),
                      camera_width_px=observation_width, camera_height_px=observation_height,
                      render_mode=render_mode, render_camera=cameras[0], **env_kwargs)
    try:
        return LeRobotView(env, obs_type, task_description, environment_state, action_mode)
    except BaseException:
        env.close()
        raise


def feature_shapes(model_path: str | None = None, environment_state: str = "objects") -> dict[str, tuple[int, ...]]:
    """Shapes of ``agent_pos``, ``environment_state`` (of that layout) and the action for the
    scene's MJCF (no env made): what a LeRobot env config declares as its features."""
    check_layout(environment_state, "absolute")
    joints, _ = discover_joints(mujoco.MjModel.from_xml_path(model_path or default_model_path()))
    return {AGENT_POS: (len(joints),), ENVIRONMENT_STATE: (environment_state_size(environment_state),),
            "action": (len(joints),)}
