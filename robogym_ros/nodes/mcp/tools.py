"""What each robogym_mcp tool does, on a SimClient, independent of MCP: an :class:`Answer` (JSON
data and PNG images) or an exception whose message is the whole story: :class:`Refused` (the
call was wrong, nothing was sent or changed) or SimUnavailable (the sim did not answer within
the server's timeout; the message names what was waited for).

The truth is the ROS clients' truth: an observation is a joint_states tick and the camera
images stamped with that same tick; targets are checked with the sim's own validation
(robogym_ros.sim.commands) before anything is sent, so a refusal carries the sim's reason.
Every wait is bounded by ``timeout_s`` (``step``: per tick).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace

from trajectory_msgs.msg import JointTrajectoryPoint

from robogym_ros import contract, params
from robogym_ros.camera.clock import frame_tick
from robogym_ros.contract import NS_PER_S, RunAnswer, Spec
from robogym_ros.live.images import IMAGE_FORMATS, for_agent
from robogym_ros.live.observation import Observation
from robogym_ros.ros.sim_client import GONE_GRACE_S, SimClient, SimUnavailable
from robogym_ros.sim.commands import CommandRejected, validate_command, validate_trajectory
from robogym_ros.task.placement import SUCCESS_TEXT

MAX_STEP_TICKS = 1000
STATE_WAIT_S = 1.0  # after a service answered: how long to wait for its run state to arrive
TARGETS_WAIT_S = 0.2  # how long an observation waits for its tick's servo targets from a sim not yet seen sending any
POSES_WAIT_S = 1.0  # running: how long an observation waits for its tick's object poses before taking a later tick
MAX_MOVE_S = 60.0
MIN_IMAGE_WIDTH_PX = 16
TASK = ("Two SO-101 arms behind a table, a red block and a red tray. Each object starts where only the arm "
        "next to it can reach, so the block must be handed from one arm to the other and laid in the tray.")
SUCCESS = SUCCESS_TEXT + " (the Gymnasium env's is_success, robogym_ros/task/placement.py)"


class Refused(ValueError):
    """The call was refused; nothing was sent, nothing changed. The message says why."""


@dataclass
class Answer:
    """A tool's answer: JSON data, and the images it names in ``data["images"]``."""

    data: dict
    images: list[tuple[str, bytes, str]] = field(default_factory=list)  # (camera, payload, MIME type), in order


def _answer_data(answer: RunAnswer) -> dict:
    """The sim's typed answer as tool data (a reset's draw included; no empty fields)."""
    return {k: v for k, v in asdict(answer).items() if v is not None and v != {}}


def _number(text: str):
    """A diagnostics value (a string on the wire) as the JSON value it reads as."""
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return None if isinstance(value, float) and not math.isfinite(value) else value
    return text


class SimTools:
    """The tools of one server on one sim. Thread-safe as the link is; calls may overlap."""

    def __init__(self, link: SimClient, timeout_s: float, *, ground_truth: bool = False):
        """``ground_truth``: observe may add the objects' true poses (the link must take them).
        robogym's agents see no object positions: they must find them in the images."""
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.link, self.timeout_s, self.ground_truth = link, float(timeout_s), ground_truth
        self.last_refusal = ""  # this server's, which never reaches the sim's diagnostics
        self._observed_instance = None  # the sim instance of this server's last observation
        self.poses_missed = 0  # running observations whose tick's object poses never came (a later tick was taken)

    def _refuse(self, reason: str) -> Refused:
        self.last_refusal = reason
        return Refused(reason)

    def _spec(self) -> Spec:
        """The spec of the sim there now: a spec kept from a sim that has left the ROS graph is
        not served as if it were alive (a sim killed outright stays in the graph until DDS
        notices it is gone, some seconds)."""
        self.link.wait_spec(self.timeout_s)
        if self.link.gone(min(self.timeout_s, GONE_GRACE_S)):
            raise SimUnavailable(self.link.gone_message())
        return self.link.spec

    # --- spec -------------------------------------------------------------------------------
    def spec(self) -> Answer:
        spec = self._spec()
        cams = [{"name": c.name, "width": c.width, "height": c.height, "period_s": c.period_s,
                 "hfov_deg": c.hfov_deg, "encoding_returned": "image/png"} for c in spec.cameras]
        return Answer({
            "namespace": self.link.namespace,
            "joints": [{"name": j.name, "lower": j.lower, "upper": j.upper, "unit": j.unit} for j in spec.joints],
            "objects": list(spec.objects),
            "object_pose_layout": list(contract.POSE_LAYOUT),
            "cameras": cams,
            "control_dt_s": spec.control_dt_s,
            "physics_dt_s": spec.physics_dt_s,
            "real_time_factor": spec.real_time_factor,
            "task": TASK,
            "success": SUCCESS,
            "timing": ("real time: the sim runs on while you think; what you observe is the newest tick with "
                       "all camera frames, and act takes effect from the sim's next control tick. For lockstep, "
                       "pause, then act and step N ticks, then observe."),
            "timeout_s": self.timeout_s,
            "sim_instance": spec.instance,
        })

    # --- observe ----------------------------------------------------------------------------
    def observe(self, images: bool = True, object_poses: bool = False, *, cameras=None, image_format: str = "png",
                image_width_px: int | None = None, latest: bool = False) -> Answer:
        started = time.monotonic()
        if object_poses and not self.ground_truth:
            raise self._refuse("refused: this server gives no ground truth (object poses); its operator can start "
                               "it with --ground-truth. Find the block and the tray in the images")
        spec = self._spec()
        picture = self._picture_options(spec, cameras, image_format, image_width_px)
        buf = self.link.buffer
        with_images = bool(images) and bool(spec.cameras)
        seq = buf.seq(images=with_images)
        # latest: the newest complete observation at hand, without waiting for one after this call
        obs = buf.newest(images=with_images, objects=object_poses) if latest else None
        state = self.link.run_state
        while obs is None:  # running: a tick that came after this call; paused: the newest at hand
            state = self.link.run_state
            if state is not None and state.paused:
                self._await_paused_tick(spec, with_images, self.timeout_s - (time.monotonic() - started))
                obs = buf.newest(images=with_images, objects=object_poses)
                if obs is None:
                    raise SimUnavailable(self._nothing_at_hand(spec, with_images))
                if not self.link.sim_present():
                    raise SimUnavailable(f"{self.link.gone_message()}; the last tick received was "
                                         f"{self._tick(obs.newest_stamp_ns, spec)}")
                break
            left = self.timeout_s - (time.monotonic() - started)
            if left <= 0:
                raise SimUnavailable(self._waited_for(spec, with_images))
            if self.link.gone():  # it left the graph while this call waited
                raise SimUnavailable(self.link.gone_message())
            if buf.wait_newer(seq, images=with_images, timeout_s=min(left, 0.1)):
                state = self.link.run_state
                if state is not None and state.paused:
                    continue  # paused meanwhile: the paused rule applies (the sim's last tick)
                obs = buf.newest(images=with_images, objects=object_poses)
                if object_poses and obs.object_poses is None and not self._poses_came(obs, started):
                    # Running, a newer tick comes anyway: take that one (said once in the log).
                    seq, obs = buf.seq(images=with_images), None
        if object_poses and obs.object_poses is None:  # paused (or latest): that tick's poses, on their way
            if buf.wait_objects(obs.stamp_ns, max(self.timeout_s - (time.monotonic() - started), 0.0)):
                obs = replace(obs, object_poses=buf.objects_at(obs.stamp_ns))
        if obs.targets is None:  # published right after the tick's joints: on their way if this sim sends them
            wait_s = (max(self.timeout_s - (time.monotonic() - started), TARGETS_WAIT_S) if buf.has_targets
                      else TARGETS_WAIT_S)
            obs = replace(obs, targets=buf.targets_at(obs.stamp_ns, wait_s))
        return self._observation(spec, obs, object_poses, state, picture)

    def _picture_options(self, spec: Spec, cameras, image_format: str, width_px) -> tuple:
        """(cameras wanted, format, width) checked against the sim's cameras; refused, naming the
        argument, otherwise."""
        names = [c.name for c in spec.cameras]
        if cameras is not None:
            if not isinstance(cameras, (list, tuple)) or not cameras or \
                    any(not isinstance(c, str) or c not in names for c in cameras):
                raise self._refuse(f"cameras must be a non-empty list of this sim's cameras {names}, got {cameras!r}")
        if image_format not in IMAGE_FORMATS:
            raise self._refuse(f"image_format must be one of {sorted(IMAGE_FORMATS)}, got {image_format!r}")
        widest = max((c.width for c in spec.cameras), default=0)
        if width_px is not None and (isinstance(width_px, bool) or not isinstance(width_px, int)
                                     or not MIN_IMAGE_WIDTH_PX <= width_px <= widest):
            raise self._refuse(f"image_width_px must be a whole number in {MIN_IMAGE_WIDTH_PX}..{widest} (the "
                               f"cameras' width at most), got {width_px!r}")
        return (None if cameras is None else tuple(cameras)), image_format, width_px

    def _poses_came(self, obs: Observation, started: float) -> bool:
        """Running: wait (POSES_WAIT_S at most, within the call's timeout) for the object poses of
        the observed tick, which travel on a topic of their own a little after its joints."""
        left = min(POSES_WAIT_S, self.timeout_s - (time.monotonic() - started))
        if self.link.buffer.wait_objects(obs.stamp_ns, max(left, 0.0)):
            return True
        self.poses_missed += 1
        if self.poses_missed == 1:
            self.link.node.get_logger().warning(
                f"the object poses of tick {obs.stamp_ns // self.link.spec.control_dt_ns} did not come within "
                f"{left:.1f} s of its joints; observing a later tick (said once; status counts them)")
        return False

    def _await_paused_tick(self, spec: Spec, with_images: bool, left_s: float) -> None:
        """Paused: wait (within the call's timeout) for the sim's last tick, which its run state
        names, and with images for the frames of the last tick the camera clock made a frame
        of: a tick's joint_states may still be on the way when a step has answered (or this
        server, on a loaded machine, some way behind), and rendering takes some ms more. A frame
        the sim reports skipped (its renderer was busy) never comes: not waited for."""
        buf, state = self.link.buffer, self.link.run_state
        dt = spec.control_dt_ns
        if state.stamp_ns < contract.FIRST_TICK_INDEX * dt or buf.newest_stamp_ns() is None:
            return  # a sim started paused (no tick yet), or joined while paused: none will come
        # The paused sim's last tick is at least the newest one received: its run state (a
        # different topic) may lag the ticks a step produced, on a loaded machine.
        newest = max(state.stamp_ns, buf.newest_stamp_ns())
        due_ns = None
        periods = [round(c.period_s * NS_PER_S) for c in spec.cameras if c.period_s]
        if with_images and periods:
            period = min(periods)
            grid = newest // period * period
            if frame_tick(grid, dt) * dt > newest:
                grid -= period
            due_ns = frame_tick(grid, dt) * dt
        deadline = time.monotonic() + left_s
        while True:
            joint_seq, frames_seq = buf.seq(images=False), buf.seq(images=True)
            have_tick = (buf.newest_stamp_ns() or -1) >= newest
            obs = buf.newest(images=True) if due_ns is not None else None
            have_frames = due_ns is None or (obs is not None and obs.stamp_ns >= due_ns) \
                or due_ns in self.link.skipped_frames
            left = deadline - time.monotonic()
            if (have_tick and have_frames) or left <= 0:
                return
            if not have_tick:
                buf.wait_newer(joint_seq, images=False, timeout_s=min(left, 0.1))
            else:  # in slices: a skip report comes on another topic
                buf.wait_newer(frames_seq, images=True, timeout_s=min(left, 0.1))

    @staticmethod
    def _tick(stamp_ns: int, spec: Spec) -> int:
        return stamp_ns // spec.control_dt_ns

    def _what(self, spec: Spec, with_images: bool) -> str:
        if not with_images:
            return f"a new joint_states tick from the sim in {self.link.namespace}"
        return (f"a new tick with all {len(spec.cameras)} camera frames ({', '.join(c.name for c in spec.cameras)}) "
                f"and its joint_states from the sim in {self.link.namespace}")

    def _waited_for(self, spec: Spec, with_images: bool) -> str:
        buf, state = self.link.buffer, self.link.run_state
        arrival = buf.joint_arrival_s
        newest = self._tick(buf.newest_stamp_ns() or 0, spec)
        last = "no joint tick received yet" if arrival is None else \
            f"the last joint tick came {time.monotonic() - arrival:.1f} s ago (tick {newest})"
        frames = buf.newest_frames_stamp_ns()
        return (f"waited {self.timeout_s:g} s for {self._what(spec, with_images)}; {last}"
                + ("" if not with_images else "; no complete frame set yet" if frames is None
                   else f"; the newest complete frame set is of tick {self._tick(frames, spec)}")
                + f"; run state: {'unknown' if state is None else state.reason}; "
                f"sim in the ROS graph: {'yes' if self.link.sim_present() else 'no'}")

    def _nothing_at_hand(self, spec: Spec, with_images: bool) -> str:
        state = self.link.run_state
        period = min((c.period_s or 0 for c in spec.cameras), default=0)
        return (f"the sim in {self.link.namespace} is paused at tick {self._tick(state.stamp_ns, spec)} and this "
                f"server has no tick {'with its camera frames ' if with_images else ''}at hand (a paused sim "
                "publishes nothing): step it"
                + (f" (a frame comes every {period:g} s of sim time)" if with_images and period else "")
                + ", resume it, or observe with images=false after a step")

    def _observation(self, spec: Spec, obs: Observation, object_poses: bool, state,
                     picture: tuple = (None, "png", None)) -> Answer:
        """``state``: the run state the observation was chosen by (its ``paused``)."""
        reset = self.link.last_reset
        tick = self._tick(obs.stamp_ns, spec)
        data = {
            "tick": tick,
            "stamp_ns": obs.stamp_ns,
            "sim_time_s": obs.stamp_ns / NS_PER_S,
            "paused": None if state is None else state.paused,
            "joints": dict(zip(spec.joint_names, obs.joints.position.tolist())),
            "velocities": dict(zip(spec.joint_names, obs.joints.velocity.tolist())),
            "efforts_nm": dict(zip(spec.joint_names, obs.joints.effort.tolist())),  # the servos' load
            "images": [],
            "newest_tick": self._tick(obs.newest_stamp_ns, spec),
        }
        notes = []
        data["sim_instance"] = spec.instance
        if self._observed_instance not in (None, spec.instance):  # the tick count started over
            data["new_sim"] = True
            notes.append(f"a new sim (instance {spec.instance}) since this server's last observation (instance "
                         f"{self._observed_instance}): its ticks count from its own start")
        self._observed_instance = spec.instance
        if obs.frames is not None and obs.newest_stamp_ns > obs.stamp_ns:
            notes.append(f"the sim's newest tick is {data['newest_tick']}; its cameras last rendered tick {tick}, "
                         "so joints and images are both of that tick")
        # The reset is a tick of its own, of the new episode: only older ticks are from before it.
        if reset is not None and reset.stamp_ns > obs.stamp_ns and reset.reason in ("reset", "blow_up"):
            data["before_last_reset"] = True
            notes.append(f"this tick is from before the {reset.reason} at tick {self._tick(reset.stamp_ns, spec)}: "
                         "the scene has changed since; step or resume until a frame of the new episode comes")
        if obs.targets is None:
            notes.append(f"no servo targets of tick {tick} at hand")
        else:  # what each servo was told to hold during the tick, and how far off it is (position - target,
            # as move's joint_errors_rad)
            data["targets"] = dict(zip(spec.joint_names, obs.targets.tolist()))
            data["tracking_errors_rad"] = dict(zip(spec.joint_names, (obs.joints.position - obs.targets).tolist()))
        if object_poses:
            if obs.object_poses is None:
                notes.append(f"no ground-truth object poses of tick {tick} at hand")
            else:
                data["object_poses"] = dict(zip(spec.objects, obs.object_poses.tolist()))
        if notes:
            data["notes"] = notes
        wanted, image_format, width_px = picture
        images = []
        for frame in () if obs.frames is None else obs.frames.frames:
            if wanted is None or frame.camera in wanted:
                payload, mime, width, height = for_agent(frame, image_format, width_px)
                # meta: the image as the sim published it (what the recorder's checks read); returned: this payload
                data["images"].append({**frame.meta(), "returned": {"mime_type": mime, "width": width,
                                                                    "height": height, "bytes": len(payload)}})
                images.append((frame.camera, payload, mime))
        return Answer(data, images)

    # --- act and move -----------------------------------------------------------------------
    def _ranges(self, spec: Spec) -> dict[str, tuple[float, float]]:
        return {j.name: (j.lower, j.upper) for j in spec.joints}

    def _left(self, started: float) -> float:
        return max(self.timeout_s - (time.monotonic() - started), 0.0)

    def _valid_targets(self, targets, spec: Spec, nothing: str) -> dict[str, float]:
        """Targets by joint name as the sim validates them; else refused (``nothing``: what was not done)."""
        if not isinstance(targets, dict):
            raise self._refuse(f"targets must be an object {{joint: target}}, got {type(targets).__name__}")
        try:
            return validate_command(list(targets), list(targets.values()), (), (), self._ranges(spec))
        except (CommandRejected, TypeError, ValueError) as exc:
            raise self._refuse(f"refused, {nothing}: {exc}") from None

    def _check_ticks(self, ticks) -> None:
        if isinstance(ticks, bool) or not isinstance(ticks, int) or not 1 <= ticks <= MAX_STEP_TICKS:
            raise self._refuse(f"refused, nothing stepped: ticks must be a whole number in 1..{MAX_STEP_TICKS}, "
                               f"got {ticks!r}")

    def act(self, targets: dict) -> Answer:
        started = time.monotonic()  # one bound for the whole call
        spec = self._spec()
        valid = self._valid_targets(targets, spec, "nothing sent")
        self.link.wait_listener(contract.JOINT_COMMANDS, self._left(started))
        newest = self._newest_tick_stamp_ns(started)
        self.link.send_targets(valid)
        data = {"sent": valid, "after_tick": None if newest is None else self._tick(newest, spec),
                "takes_effect": "from the sim's next control tick; joints not named keep their targets"}
        if newest is None:
            data["notes"] = ["no tick seen yet (a paused sim publishes none): after_tick is unknown"]
        return Answer(data)

    def _newest_tick_stamp_ns(self, started: float) -> int | None:
        """The newest tick this server has; a server that has seen none yet while the sim runs
        waits for its first (ticks come every control dt), within the call's bound."""
        buffer = self.link.buffer
        newest = buffer.newest_stamp_ns()
        state = self.link.run_state
        if newest is None and (state is None or not state.paused):
            buffer.wait_newer(buffer.seq(images=False), images=False, timeout_s=min(STATE_WAIT_S, self._left(started)))
            newest = buffer.newest_stamp_ns()
        return newest

    def check_duration(self, duration_s, spec: Spec) -> float:
        """A timed move's duration: at least one control tick (shorter is a jump, not a move),
        at most MAX_MOVE_S; else refused, naming the range."""
        dt = spec.control_dt_s
        if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) \
                or not math.isfinite(duration_s) or not dt <= duration_s <= MAX_MOVE_S:
            raise self._refuse(f"refused, nothing sent: duration_s must be in [{dt:g}, {MAX_MOVE_S:g}] s "
                               f"(one control tick .. {MAX_MOVE_S:g} s), got {duration_s!r}")
        return float(duration_s)

    def move(self, targets: dict, duration_s: float) -> Answer:
        started = time.monotonic()  # one bound for the whole call
        spec = self._spec()
        self.check_duration(duration_s, spec)
        if not isinstance(targets, dict):
            raise self._refuse(f"targets must be an object {{joint: target}}, got {type(targets).__name__}")
        duration_ns = round(duration_s * NS_PER_S)
        point = JointTrajectoryPoint()
        point.time_from_start.sec, point.time_from_start.nanosec = contract.split_stamp(duration_ns)
        try:
            point.positions = [float(v) for v in targets.values()]
            validate_trajectory(list(targets), [point], 0, self._ranges(spec))
        except (CommandRejected, TypeError, ValueError) as exc:
            raise self._refuse(f"refused, nothing sent: {exc}") from None
        self.link.wait_listener(contract.JOINT_TRAJECTORY, self._left(started))
        self.link.send_move({k: float(v) for k, v in targets.items()}, duration_ns)
        return Answer({"sent": dict(targets), "duration_s": duration_s,
                       "semantics": "linear in sim time from the current targets, starting now; a pause freezes it, "
                                    "a reset drops it, an act naming one of its joints takes that joint over"})

    # --- the sim's services -----------------------------------------------------------------
    def _service(self, name: str) -> tuple[bool, str]:
        return self.link.call(name, self.timeout_s)

    def _run_state(self) -> dict | None:
        state = self.link.run_state
        return None if state is None else asdict(state)

    def pause(self) -> Answer:
        return self._trigger("pause")

    def resume(self) -> Answer:
        return self._trigger("resume")

    def _trigger(self, name: str) -> Answer:
        ok, message = self._service(name)
        if not ok:
            raise self._refuse(f"the sim refused {name}: {message}")
        answer = RunAnswer.from_json(message)
        self._await_state(lambda s: s.paused == answer.paused)
        return Answer({"success": ok, **_answer_data(answer)})

    def _await_state(self, predicate) -> None:
        """Until this server's view of the run state shows what the sim just answered (bounded:
        STATE_WAIT_S), so that the next observe sees the sim as it now is."""
        self.link.wait_state(predicate, min(self.timeout_s, STATE_WAIT_S))

    def step(self, ticks: int = 1) -> Answer:
        self._check_ticks(ticks)
        message, done = "", 0
        for done in range(ticks):
            try:
                ok, message = self._service("step")
            except SimUnavailable as exc:
                if not done:
                    raise
                raise SimUnavailable(f"stepped {done} of {ticks} ticks, then: {exc}") from None
            if not ok:
                if not done:
                    raise self._refuse(f"the sim refused step: {message}")
                raise self._refuse(f"stepped {done} of {ticks} ticks, then the sim refused: {message}")
        answer = RunAnswer.from_json(message)
        stamp = answer.tick * self._spec().control_dt_ns
        self._await_state(lambda s: s.paused and s.stamp_ns >= stamp)
        return Answer({"stepped": done + 1, **_answer_data(answer)})

    def step_request(self, ticks: int, targets: dict | None) -> Answer:
        """Lockstep in one request, whatever ``ticks``: from the paused sim's last tick, hold
        ``targets`` (validated like act) and step; the sim's answer. Refused while the sim runs."""
        started = time.monotonic()
        self._check_ticks(ticks)
        spec = self._spec()
        valid = self._valid_targets(targets, spec, "nothing stepped") if targets else {}
        state = self.link.run_state
        if state is None or not state.paused:
            raise self._refuse("refused, nothing stepped: step_observe is lockstep and the sim runs; pause it first")
        dt = spec.control_dt_ns
        from_index = max(state.stamp_ns, self.link.buffer.newest_stamp_ns() or 0) // dt
        result = self.link.step_request(from_index, valid, ticks, self._left(started))
        if result.reason != "step":
            raise self._refuse(f"the sim refused the step from tick {from_index}, nothing changed: {result.detail}")
        self._await_state(lambda s: s.paused and s.stamp_ns >= result.stamp_ns)
        data = {"from_tick": from_index, "stepped": result.stamp_ns // dt - from_index, "sent": valid}
        if result.blew_up:
            data["blew_up"] = True
            data.setdefault("notes", []).append("the scene blew up and was reset: the step ended at that tick")
        return Answer(data)

    def reset(self, seed: int | None = None) -> Answer:
        if seed is not None:
            top = int(params.SIM["seed"].maximum)  # the sim's seed parameter's range, defined once
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= top:
                raise self._refuse(f"refused, nothing reset: seed must be a whole number in 0..{top}, got {seed!r}")
            ok, reason = self.link.set_seed(seed, self.timeout_s)
            if not ok:
                raise self._refuse(f"the sim refused seed {seed}, nothing reset: {reason}")
        ok, message = self._service("reset")
        if not ok:
            raise self._refuse(f"the sim refused reset: {message}")
        answer = RunAnswer.from_json(message)
        stamp = answer.tick * self._spec().control_dt_ns
        self._await_state(lambda s: s.reason == "reset" and s.stamp_ns == stamp)
        return Answer({"success": ok, **_answer_data(answer)})

    # --- status -----------------------------------------------------------------------------
    def status(self) -> Answer:
        spec = self._spec()
        link = self.link
        deadline = time.monotonic() + self.timeout_s
        seq = link.changed
        while link.diagnostics is None and time.monotonic() < deadline:  # the sim's first ~1 Hz status
            seq = link.wait_changed(seq, deadline - time.monotonic())
        newest, arrival = link.buffer.newest_stamp_ns(), link.buffer.joint_arrival_s
        data = {
            "namespace": link.namespace,
            "sim_present": link.sim_present(),
            "run_state": self._run_state(),
            "sim": None if link.diagnostics is None else {k: _number(v) for k, v in link.diagnostics.items()},
            "sim_message": link.diagnostics_message,
            "server": {"timeout_s": self.timeout_s, "last_refusal": self.last_refusal, "sims_seen": link.instances,
                       "newest_tick": None if newest is None else self._tick(newest, spec),
                       "frame_sets_incomplete": link.buffer.frame_sets_dropped,
                       "object_poses_missed": self.poses_missed,
                       "newest_tick_age_s": None if arrival is None else round(time.monotonic() - arrival, 3)},
        }
        if link.diagnostics is None:
            data["note"] = (f"no diagnostics from the sim within {self.timeout_s:g} s "
                            "(it publishes them about once a second)")
        return Answer(data)
