"""The most any ROS lockstep design reaches on this machine, beside the real one (figures only).

    python bench/bench_lockstep_ceiling.py [--steps 1000] [--action-repeat 4 1] [--repeats 3]

Issue 34 asks ros lockstep for >= 50 % of local single's steps/s at action_repeat 4 (>= 30 % at 1).
This bench measures, alternately in one run, the real lockstep and two designs that no sim node
can beat, each as a share of local single:

  local single      ``gym.make``, random actions (bench/bench_env.py's)
  ceiling           the same env with its backend swapped for a link to a server process that
                    steps the sim's own Physics in its own process: one raw message each way per
                    env step (the targets and the tick count in; the last tick's record out as
                    float64 bytes in a std_msgs/UInt8MultiArray). Nothing is validated, encoded as
                    JSON or published per tick; nothing is left but the env's own work (action
                    map, observation, placement), the physics and one DDS round trip.
  ceiling + ticks   the same, and after each answer the server publishes every tick's five
                    messages (joint_states, ground truth, servo targets, object poses, /clock) as
                    serialized CDR with the sim node's own TickMessages, as a sim that publishes
                    every tick must.
  ros lockstep      ``mode="ros_lockstep"`` on a paused ``robogym_sim`` (cameras off).

Before timing, each ceiling must return local's observations and infos bit for bit (the same
physics and targets: the same work); otherwise the bench exits, naming the first difference.
Asserts nothing else.
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import time

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # DDS stays on this host
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from bench_env import actions  # noqa: E402  (bench/: the random actions of every env bench)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

import robogym_ros.envs  # noqa: E402,F401  (registers the env)
from robogym_ros.envs import ENV_ID  # noqa: E402
from robogym_ros.ros import qos  # noqa: E402
from robogym_ros.sim.tick import Tick  # noqa: E402

PHYSICS_DT_S, DECIMATION = 0.002, 5
# std_msgs/UInt8MultiArray in CDR: encapsulation, an empty layout (no dims, data_offset 0), then the bytes.
_CDR_HEAD = b"\x00\x01\x00\x00" + struct.pack("<II", 0, 0)
_LENGTH = struct.Struct("<I")
_RESET, _STOP = -1.0, -2.0  # the first number of a request that is no step
TIMEOUT_S = 30.0


class RawLink:
    """One raw message each way: ``send`` bytes on ``out``, ``recv`` the next bytes from ``inp``,
    taken by the calling thread from an rcl wait set (no executor, as the env's TickReader)."""

    def __init__(self, name: str, out: str, inp: str):
        self.context = rclpy.Context()
        rclpy.init(args=[], context=self.context)
        self.node = rclpy.create_node(name, context=self.context, start_parameter_services=False,
                                      enable_rosout=False)
        self._pub = self.node.create_publisher(UInt8MultiArray, out, qos.COMMAND_QOS)
        self._sub = self.node.create_subscription(UInt8MultiArray, inp, lambda _msg: None, qos.COMMAND_QOS, raw=True)
        self._wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, self.context.handle)

    def matched(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self._sub.get_publisher_count() == 0 or self._pub.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise SystemExit(f"the ceiling's link {self._pub.topic_name} did not match within {timeout_s:g} s")
            time.sleep(0.01)

    def send(self, payload: bytes) -> None:
        self._pub.publish(_CDR_HEAD + _LENGTH.pack(len(payload)) + payload)

    def recv(self, timeout_s: float = TIMEOUT_S) -> bytes:
        deadline = time.monotonic() + timeout_s
        while True:
            taken = self._sub.handle.take_message(UInt8MultiArray, True)
            if taken is not None:
                raw = taken[0]
                (n,) = _LENGTH.unpack_from(raw, len(_CDR_HEAD))
                start = len(_CDR_HEAD) + _LENGTH.size
                return raw[start:start + n]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SystemExit(f"no answer on {self._sub.topic_name} within {timeout_s:g} s")
            self._wait_set.clear_entities()
            self._wait_set.add_subscription(self._sub.handle)
            self._wait_set.wait(int(remaining * 1e9))

    def close(self) -> None:
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


# --- the server: the sim's Physics in its own process, answering one message with one --------
def serve(prefix: str) -> None:
    from bench_pipeline_ceiling import tick_publishers  # bench/: the sim node's five messages a tick

    from robogym_ros.sim.physics import Physics
    from robogym_ros.task.scene import default_model_path

    model = default_model_path()
    link = RawLink(f"{prefix}server", f"{prefix}answer", f"{prefix}request")
    physics = Physics(model, PHYSICS_DT_S, DECIMATION, seed=0)
    pubs = tick_publishers(link.node, prefix, physics, model)
    link.matched(TIMEOUT_S)
    while True:
        request = np.frombuffer(link.recv(timeout_s=3600.0), np.float64)
        ticks = []
        if request[0] == _STOP:
            break
        if request[0] == _RESET:  # LocalBackend.reset(seed)
            physics = Physics(model, PHYSICS_DT_S, DECIMATION, int(request[1]))
            physics.reset_tick()
            last = physics.snapshot()
        else:  # LocalBackend.step, tick by tick when the ticks are published
            n_ticks, publish = int(request[0]), bool(request[1])
            physics.set_all_targets(request[2:].copy())
            if publish:
                for _ in range(n_ticks):
                    blew_up = physics.step_ticks(1)
                    ticks.append(physics.snapshot(blew_up=blew_up))
                    if blew_up:
                        break
                last = ticks[-1]
            else:
                last = physics.snapshot(blew_up=physics.step_ticks(n_ticks))
        link.send(last._replace(state=np.empty(0)).to_bytes())
        for tick in ticks:  # after the answer: off the env's critical path, as far as 2 cores allow
            for pub, encode in pubs:
                pub.publish(encode(tick))
    link.close()


class CeilingBackend:
    """The env's backend interface (LocalBackend's) over a :class:`RawLink` to the server."""

    realtime = False

    def __init__(self, link: RawLink, *, publish_ticks: bool):
        self._link = link
        self.publish_ticks = publish_ticks

    def reset(self, seed: int | None) -> Tick:
        if seed is None:
            raise ValueError("the ceiling resets to a seed's first scene only: reset(seed=s)")
        self._link.send(np.array([_RESET, float(seed)]).tobytes())
        return Tick.from_bytes(self._link.recv())

    def step(self, targets: np.ndarray, n_ticks: int) -> Tick:
        head = np.array([float(n_ticks), float(self.publish_ticks)])
        self._link.send(np.concatenate((head, targets)).tobytes())
        return Tick.from_bytes(self._link.recv())

    def close(self) -> None:
        pass


def _same_as_local(env, local_env, acts, what: str) -> None:
    """Exits unless ``env`` gives ``local_env``'s observations and infos for the same actions."""
    for e in (env, local_env):
        e.reset(seed=0)
    for i, a in enumerate(acts):
        (obs, _, _, _, info), (want, _, _, _, want_info) = env.step(a[0]), local_env.step(a[0])
        for key in want:
            if not np.array_equal(obs[key], want[key]):
                raise SystemExit(f"{what} step {i}: observation[{key!r}] differs from local single's: not the same "
                                 "work, no figure")
        if info != want_info:
            raise SystemExit(f"{what} step {i}: the info differs from local single's: not the same work, no figure")


def timed(env, acts) -> float:
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in acts:
        env.step(a[0])
    return len(acts) / (time.perf_counter() - t0)


def rows(n: int, action_repeat: int, repeats: int, link: RawLink, lockstep: bool) -> dict[str, float]:
    """Medians of steps/s of each design, measured one after the other ``repeats`` times."""
    def local_env():
        return gym.make(ENV_ID, action_repeat=action_repeat, max_episode_steps=n + 1)

    envs, fleet = {"local single": local_env()}, None
    try:  # every env and the fleet closed, whatever ends the run (a refused ceiling included)
        for name, publish in (("ceiling", False), ("ceiling + ticks", True)):
            env = local_env()
            env.unwrapped._backend = CeilingBackend(link, publish_ticks=publish)  # the env's only link to physics
            envs[name] = env
        acts = actions(n)
        for name in ("ceiling", "ceiling + ticks"):
            _same_as_local(envs[name], envs["local single"], acts[:min(n, 200)], name)
        if lockstep:
            from robogym_ros.envs.vector.sim_fleet import SimFleet
            fleet = SimFleet(1, prefix=f"bench_ceiling_{os.getpid()}_", seed=0, start_paused=True,
                             camera_period_s=0.0)
            try:
                envs["ros lockstep"] = gym.make(ENV_ID, mode="ros_lockstep", namespace=fleet.namespaces[0],
                                                action_repeat=action_repeat, max_episode_steps=n + 1)
            except RuntimeError as exc:
                raise SystemExit(f"{exc}\nsims that died: {fleet.dead()}") from None
        runs = {name: [] for name in envs}
        for _ in range(repeats):
            for name, env in envs.items():
                runs[name].append(timed(env, acts))
        return {name: statistics.median(r) for name, r in runs.items()}
    finally:
        for env in envs.values():
            env.close()
        if fleet is not None:
            fleet.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000, help="env steps per measurement")
    ap.add_argument("--action-repeat", type=int, nargs="+", default=[4, 1])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-lockstep", action="store_true", help="leave the real lockstep out (no sim node)")
    ap.add_argument("--serve", metavar="PREFIX", help=argparse.SUPPRESS)  # the server process
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    prefix = f"bench_ceiling_{os.getpid()}_"
    server = subprocess.Popen([sys.executable, __file__, "--serve", prefix])
    link = RawLink(f"{prefix}client", f"{prefix}request", f"{prefix}answer")
    try:
        link.matched(TIMEOUT_S)
        print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; env steps/s, median of "
              f"{args.repeats}, measured alternately")
        for ar in args.action_repeat:
            rates = rows(args.steps, ar, args.repeats, link, not args.no_lockstep)
            local = rates["local single"]
            print(f"\naction_repeat {ar} ({ar * DECIMATION} physics steps of {PHYSICS_DT_S * 1e3:g} ms per env step)")
            print(f"  {'':18s} {'steps/s':>9s} {'/ local':>8s}")
            for name, rate in rates.items():
                print(f"  {name:18s} {rate:9.0f} {rate / local:8.0%}")
            print(f"  target for ros lockstep: >= {50 if ar >= 4 else 30} % of local single; the ceilings bound "
                  "any sim node in Python (rclpy) that answers a step over DDS")
    finally:
        link.send(np.array([_STOP]).tobytes())
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        link.close()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
