"""``robogym_ros/Handover-v0``: the dual-arm handover as a Gymnasium GoalEnv.

One env, three ways to run it (``mode``):

- ``"local"`` (default): the sim node's physics in this process; no ROS is imported.
- ``"ros_lockstep"``: a running ``robogym_sim`` in ``namespace``; each step sends the targets
  and steps the sim exactly ``action_repeat`` control ticks through its services.
- ``"ros_realtime"``: the sim runs on its own clock; each step sends the targets and returns
  the newest tick, at least ``action_repeat`` ticks after the previous observation.
  ``info["ticks_elapsed"]`` and ``info["stamp_ns"]`` show how far the world moved meanwhile.

Local and ros-lockstep give bit-identical observations for the same seed and actions
(test/test_env_ros.py). Every call returns new objects: each array of each observation and
each info is allocated for that call alone (test/test_env_aliasing.py).

Observation (Dict): ``observation`` float64 (40,) = 12 joint positions (rad), 12 joint
velocities (rad/s), block pose and tray pose (x y z m, qw qx qy qz), the 2 gripper efforts
(N m; position alone does not tell a closed gripper from one squeezing the block);
``achieved_goal`` = block centre (m); ``desired_goal`` = where a lying block rests at the tray's
centre as the reset placed it (robogym_ros.task.goals); optional ``pixels/<camera>`` uint8 (h, w, 3).
Action: 12 servo targets, normalised to [-1, 1] by default (``normalize_actions=False``: rad).
Success (``info["is_success"]``, ``terminated``): the block lies in the tray, touching no arm,
at rest (robogym_ros.task.placement, from MuJoCo's contacts of the observed configuration and
the block's motion since the last observation). Reward: sparse 0 on success, -1 otherwise;
``reward_type="dense"``: minus the distance to the goal in m; ``"staged"``: (stage - 6) / 6 over
reach, grasp, lift, handover, release, place (goals.STAGES). ``truncated`` only if the physics
blew up (the sim resets itself then; over ROS it is seen where the node's run state reporting
it arrives with the frame); time limits are the TimeLimit wrapper's (registered with
``max_episode_steps`` 250 = 10 s at action_repeat 4).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium_robotics.core import GoalEnv

from robogym_ros.envs.actions import ActionMap
from robogym_ros.envs.local import SEED_LIMIT, LocalBackend
from robogym_ros.envs.observation import ObservationLayout, build_observation
from robogym_ros.sim.tick import Tick
from robogym_ros.task import goals
from robogym_ros.task.placement import PlacementJudge
from robogym_ros.task.scene import default_model_path

MODES = ("local", "ros_lockstep", "ros_realtime")
DEFAULT_ACTION_REPEAT = 4  # 4 x 10 ms: the agent acts at 25 Hz, like Gymnasium-Robotics' Fetch
DEFAULT_MAX_EPISODE_STEPS = 250  # 10 s of sim time at the default action_repeat
# Bounds of the observation Box: generous physical limits, so a valid state is always inside.
_ANGLE_BOUND_RAD = 2 * np.pi
_VELOCITY_BOUND_RAD_S = 100.0
_POSITION_BOUND_M = 10.0
_EFFORT_BOUND_NM = 100.0


def _flags(info: Any, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``info[key]`` as a bool array of ``shape`` (False where absent): one info dict, a dict of
    arrays (a vector env's), or one dict per goal in a batch."""
    if info is None:
        return np.zeros(shape, dtype=bool)
    if isinstance(info, Mapping):
        return np.broadcast_to(np.asarray(info.get(key, False), dtype=bool), shape).copy()
    flat = [bool(i.get(key, False)) if isinstance(i, Mapping) else False
            for i in np.asarray(info, dtype=object).ravel()]
    return np.array(flat, dtype=bool).reshape(shape)


class HandoverEnv(GoalEnv):
    """Hand the block from the arm that can reach it to the other, which puts it in the tray."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def __init__(self, *, mode: str = "local", namespace: str = "", reward_type: str = "sparse",
                 normalize_actions: bool = True, action_repeat: int = DEFAULT_ACTION_REPEAT,
                 cameras: Sequence[str] = (), camera_width_px: int = 320, camera_height_px: int = 240,
                 render_mode: str | None = None, render_camera: str = "overhead",
                 model_path: str | None = None, physics_dt_s: float = 0.002, decimation: int = 5,
                 ros_timeout_s: float = 15.0):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if reward_type not in goals.REWARD_TYPES:
            raise ValueError(f"reward_type must be one of {goals.REWARD_TYPES}, got {reward_type!r}")
        if not (isinstance(action_repeat, int) and action_repeat >= 1):
            raise ValueError(f"action_repeat must be an integer >= 1 (control ticks per step), got {action_repeat!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if isinstance(cameras, str):
            raise ValueError(f"cameras must be a list of camera names, got the string {cameras!r}")
        self.mode = mode
        self.reward_type = reward_type
        self.action_repeat = action_repeat
        self.render_mode = render_mode
        self.render_camera = render_camera
        self.cameras = tuple(cameras)
        self._image_size_px = (int(camera_width_px), int(camera_height_px))
        self._renderer = None
        self._tick: Tick | None = None
        self._goal: np.ndarray | None = None
        self._judge: PlacementJudge | None = None
        self._backend = None  # what close() touches exists before anything can fail
        if mode == "local":
            self._backend = LocalBackend(model_path or default_model_path(), physics_dt_s, decimation,
                                         seed=int(np.random.SeedSequence().entropy % SEED_LIMIT))
        else:
            from robogym_ros.envs.ros.backend import RosBackend  # only here: local mode never imports rclpy
            self._backend = RosBackend(namespace, realtime=mode == "ros_realtime", timeout_s=ros_timeout_s)
        try:
            self._finish_init(model_path, normalize_actions)
        except BaseException:
            self.close()  # a ROS backend holds a DDS participant and a thread: never leak them
            raise

    def _finish_init(self, model_path: str | None, normalize_actions: bool) -> None:
        b = self._backend
        self.joint_names = list(b.joint_names)
        self.object_names = list(b.object_names)
        self.control_dt_ns = b.control_dt_ns
        # An integer, as Gymnasium's and LeRobot's video writers take it (PyAV refuses a float rate);
        # exact at the default 25 Hz, rounded where a step is not a whole frame rate.
        self.metadata = {**self.metadata, "render_fps": round(1e9 / (b.control_dt_ns * self.action_repeat))}
        self._model_path = model_path or b.model_path or default_model_path()
        if "block" not in self.object_names or "tray" not in self.object_names:
            raise ValueError(f"the handover needs a block and a tray; the scene has {self.object_names}")
        self._block = self.object_names.index("block")
        self._tray = self.object_names.index("tray")
        grippers = tuple(i for i, n in enumerate(self.joint_names) if n.endswith("gripper"))
        self.layout = ObservationLayout(len(self.joint_names), len(self.object_names), grippers)
        lower, upper = zip(*b.joint_ranges)
        self._actions = ActionMap(self.joint_names, lower, upper, normalized=normalize_actions)
        self._judge = PlacementJudge(self._model_path, self.joint_names, self.object_names)
        self.action_space = self._actions.space
        self.observation_space = self._observation_space(lower, upper)
        if self.cameras or self.render_mode:  # bad camera names or image sizes fail here, not mid-episode
            self._renderer = self._make_renderer()

    def _observation_space(self, lower, upper) -> spaces.Dict:
        n, k, g = len(self.joint_names), len(self.object_names), len(self.layout.gripper_index)
        low = np.concatenate([np.full(n, -_ANGLE_BOUND_RAD), np.full(n, -_VELOCITY_BOUND_RAD_S),
                              np.tile([-_POSITION_BOUND_M] * 3 + [-1.0] * 4, k), np.full(g, -_EFFORT_BOUND_NM)])
        goal = spaces.Box(-_POSITION_BOUND_M, _POSITION_BOUND_M, shape=(goals.GOAL_SIZE,), dtype=np.float64)
        entries = {
            "observation": spaces.Box(low, -low, dtype=np.float64),
            "achieved_goal": goal,
            "desired_goal": goal,
        }
        for cam in self.cameras:
            entries[f"pixels/{cam}"] = spaces.Box(
                0, 255, shape=(self._image_size_px[1], self._image_size_px[0], 3), dtype=np.uint8)
        return spaces.Dict(entries)

    # --- Gymnasium API ----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new scene. ``reset(seed=s)`` gives the scene a sim node started with ``seed:=s``
        gives on its first reset; each unseeded reset then draws the next scene of that sequence."""
        if seed is not None and not (isinstance(seed, (int, np.integer)) and 0 <= seed < SEED_LIMIT):
            raise ValueError(f"seed must be an integer in 0 .. {SEED_LIMIT - 1} (the sim node's range), got {seed!r}")
        self._tick = self._backend.reset(seed)  # first: a refused reset changes nothing
        super().reset(seed=seed)
        self._goal = goals.goal_from_tray_pose(self._tick.object_poses[self._tray])
        self._goal_xyz = self._goal.tolist()
        obs = self._observation(self._tick)
        return obs, self._info(self._tick, obs, ticks_elapsed=0, block_before=None)

    def step(self, action):
        if self._tick is None:
            raise RuntimeError("step() before reset(): call env.reset() first")
        targets = self._actions.targets(action)  # ValueError naming the joint; nothing sent
        previous = self._tick
        # local physics takes the array as it is (all joints, in order); a sim node takes names
        sent = targets if self.mode == "local" else dict(zip(self.joint_names, targets.tolist()))
        self._tick = self._backend.step(sent, self.action_repeat)
        obs = self._observation(self._tick)
        info = self._info(self._tick, obs, ticks_elapsed=self._tick.index - previous.index,
                          block_before=previous.object_poses[self._block])
        # What compute_reward / compute_terminated / compute_truncated give for this obs and info
        # (the same functions, on this one goal).
        terminated = bool(info["is_success"])
        if self.reward_type == "sparse":
            reward = 0.0 if terminated else -1.0
        elif self.reward_type == "dense":
            reward = -info["distance_m"]
        else:
            reward = (info["stage"] - goals.TOP_STAGE) / goals.TOP_STAGE
        truncated = info["blew_up"]
        return obs, reward, terminated, truncated, info

    def compute_reward(self, achieved_goal, desired_goal, info):
        """Batched: sparse 0 / -1 (success or not), dense minus the distance (m), or staged
        (stage - 6) / 6. ``info``: the step's (contacts and speed are not in the goals)."""
        return goals.reward(achieved_goal, desired_goal, info, self.reward_type)

    def compute_terminated(self, achieved_goal, desired_goal, info):
        """Batched: the block placed at the goal (goals.success): inside the tray's box there,
        touching no arm, resting on something, at rest (the last three from ``info``)."""
        return goals.success(achieved_goal, desired_goal, info)

    def compute_truncated(self, achieved_goal, desired_goal, info):
        """Batched: only a physics blow-up (the sim reset itself) cuts an episode here; time
        limits are the TimeLimit wrapper's. Independent of the goal, so relabelling keeps it."""
        shape = goals.goal_distance(achieved_goal, desired_goal).shape
        return _flags(info, "blew_up", shape)

    def render(self):
        if self.render_mode != "rgb_array" or self._tick is None:
            return None
        return self._pixels(self._tick, (self.render_camera,))[self.render_camera]

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        super().close()

    # --- building what a call returns: all new objects ------------------------------------
    def _observation(self, tick: Tick) -> dict[str, np.ndarray]:
        obs = {
            "observation": build_observation(self.layout, tick.position, tick.velocity,
                                                  tick.object_poses, tick.effort),
            "achieved_goal": np.array(tick.object_poses[self._block, :3], dtype=np.float64),
            "desired_goal": self._goal.copy(),
        }
        if self.cameras:
            for cam, image in self._pixels(tick, self.cameras).items():
                obs[f"pixels/{cam}"] = image
        return obs

    def _info(self, tick: Tick, obs: dict, *, ticks_elapsed: int, block_before) -> dict[str, Any]:
        """Every entry a new Python scalar (or tuple): the placement judged on this tick."""
        judged = self._judge.judge(tick.position, tick.object_poses, block_before,
                                   ticks_elapsed * self.control_dt_ns * 1e-9)
        achieved, goal = list(judged.block_pose[:3]), self._goal_xyz  # obs["achieved_goal"], as floats
        info, placed, stage = goals.step_facts(judged, judged.tray_pose, goal, achieved)
        return {
            "is_success": float(placed),
            "stage": stage,
            "distance_m": goals.scalar_distance(achieved, goal),
            **info,
            "tick_index": int(tick.index),
            "stamp_ns": int(tick.stamp_ns),
            "ticks_elapsed": int(ticks_elapsed),
            "blew_up": bool(tick.blew_up),
        }

    def _make_renderer(self):
        # GL and OpenCV only where pixels are asked for; the lens of the sim node's cameras.
        from robogym_ros.camera.lens import Lens
        from robogym_ros.envs.pixels import FrameRenderer
        wanted = tuple(dict.fromkeys((*self.cameras, self.render_camera) if self.render_mode else self.cameras))
        return FrameRenderer(self._model_path, wanted, Lens(*self._image_size_px))

    def _pixels(self, tick: Tick, cameras: Sequence[str]) -> dict[str, np.ndarray]:
        images = self._renderer.render(tick)
        return {cam: images[cam] for cam in cameras}
