"""A reference agent for robogym_mcp: it finishes the handover with the skill tools only.

A client of the MCP tools and nothing else of robogym_ros: it imports ``mcp``, ``numpy`` and the
standard library, and starts the programs it needs as a user would (``robogym_mcp`` over stdio,
and with ``--start-sim`` a sim with its cameras off). The sim's ground truth (``--ground-truth``)
gives it the block's and tray's poses; the env's own ``task.success`` in ``observe`` says whether
it is done. Success is what the sim's physics says, never what this agent thinks.

The plan, one decision per tool call:
  1. the arm on the block's side grasps it from above (a top-down grasp across its short side),
     lifts it, and sets it down at the relay point between the arms (on the table, in reach of
     both), then backs away;
  2. the other arm grasps it there, carries it over the tray, lowers it in and lets go, backs away;
  3. observe until the block is at rest: the env's success, judged by the physics.

Modes:
  --lockstep   the sim is paused; every wait steps it (thinking costs no sim time)
  (default)    real time: the sim runs, and the agent thinks --think-s seconds before each
               decision, on the observation it made before thinking, while the world moves on

  python examples/mcp_agent.py --start-sim --lockstep --seed 3
  python examples/mcp_agent.py --start-sim --think-s 0.5 --seed 3

Exit 0: the env's success held at the end; 1: the episode failed (the reason printed); 2: usage
or the programs would not start.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

RELAY_M = (0.10, 0.0)  # where the picking arm sets the block down: 0.22 m from both pan axes
LIFTS_M = (0.07, 0.055, 0.04, 0.03)  # how far above its grasp a carried block travels: the highest in reach
READY_M = RETREAT_M = {"left": [0.14, 0.20, 0.09], "right": [0.14, -0.20, 0.09]}  # out of the other arm's way
JAW_CLEARANCE_M = 0.003  # the fixed jaw's way down, this far off the block's face
OPEN, SETTLE_S, MAX_SETTLE_S = "open", 0.5, 4.0
MOVED_M, REPLANS = 0.005, 3  # the block this far off its planned place: plan its grasp again, so many times at most
SIM_START_S = 60.0


def block_grasp(pose) -> tuple[list[float], float]:
    """A top-down grasp of a block resting on a surface: the grasp point and the jaws' closing
    direction (yaw), across the block's short horizontal side."""
    w, x, y, z = pose[3:7]
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    upright = abs(rot[2, 2]) > 0.7
    across = rot[:, 0] if upright else rot[:, int(np.argmin(np.abs(rot[2, :2])))]
    yaw = math.atan2(across[1], across[0])
    z_m = pose[2] + 0.015 if upright else max(pose[2] - 0.0125 + 0.018 + 0.004, pose[2])
    return [float(pose[0]), float(pose[1]), float(z_m)], yaw


class Failed(Exception):
    """The episode cannot go on: the reason."""


class Agent:
    """One episode's decisions, each a tool call of the server in ``session``."""

    def __init__(self, session, lockstep: bool, think_s: float, log, verbose: bool = False):
        self.session, self.lockstep, self.think_s, self.log = session, lockstep, think_s, log
        self.verbose = verbose  # the block's pose after every move (one more observe each)
        self.control_dt_s = 0.01  # the sim's, from its spec once it is found
        self.calls = 0

    async def call(self, name: str, **arguments) -> dict:
        self.calls += 1
        result = await self.session.call_tool(name, arguments)
        text = result.content[0].text if result.content and result.content[0].type == "text" else ""
        if result.is_error:
            raise Failed(f"{name}: {text}")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return {"text": text}

    async def decide(self) -> None:
        """The agent's thinking time: in real time the world moves on meanwhile."""
        if self.think_s > 0:
            await asyncio.sleep(self.think_s)

    async def look(self) -> dict:
        return await self.call("observe", images=False, object_poses=True)

    async def move(self, arm: str, position_m, yaw_rad: float, opening=None, duration_s: float = 1.0,
                   think: bool = True, any_yaw: bool = False) -> dict:
        """A gripper move (the decision made before it), trying the other closing direction when
        the arm cannot take the first (the jaws close either way); ``any_yaw`` (a held block may
        turn on its way): the nearest yaw the arm can take there."""
        if think:
            await self.decide()
        last = None
        turns = (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6) if any_yaw else (0, 6, -6)
        for yaw in (yaw_rad + k * math.pi / 6 for k in turns):
            yaw = math.atan2(math.sin(yaw), math.cos(yaw))
            try:
                args = {"arm": arm, "position_m": [float(v) for v in position_m], "yaw_rad": yaw,
                        "duration_s": duration_s, "wait": True}
                if opening is not None:
                    args["opening"] = opening
                done = await self.call("move_gripper", **args)
                self.log(f"  {arm} to {np.round(position_m, 3).tolist()} yaw {yaw:+.2f}: {done['outcome']}, "
                         f"{done['gripper_position_error_mm']:.1f} mm off")
                if self.verbose:
                    self.log(f"    block {np.round((await self.look())['object_poses']['block'], 3).tolist()}")
                return done | {"yaw_rad": yaw}
            except Failed as exc:
                last = exc
                if "unreachable" not in str(exc):
                    raise
        raise last

    async def move_above(self, arm: str, xy, z_m: float, yaw_rad: float, opening=None,
                         duration_s: float = 1.0, any_yaw: bool = False) -> dict:
        """To the highest of LIFTS_M above ``z_m`` over ``xy`` that the arm can take with its
        jaws down (close in to its base, a high pose may be out of reach)."""
        for lift in LIFTS_M[:-1]:
            try:
                return await self.move(arm, [xy[0], xy[1], z_m + lift], yaw_rad, opening, duration_s, think=False,
                                       any_yaw=any_yaw)
            except Failed as exc:
                if "unreachable" not in str(exc):
                    raise
        return await self.move(arm, [xy[0], xy[1], z_m + LIFTS_M[-1]], yaw_rad, opening, duration_s, think=False,
                               any_yaw=any_yaw)

    async def grip(self, arm: str, opening, duration_s: float = 0.5) -> dict:
        await self.decide()
        return await self.call("grip", arm=arm, opening=opening, duration_s=duration_s, wait=True)

    async def settle(self, seconds: float) -> None:
        if self.lockstep:
            await self.call("step", ticks=max(1, round(seconds / self.control_dt_s)))
        else:
            await asyncio.sleep(seconds)

    async def block_moved(self, block_pose) -> list[float] | None:
        """The block's pose now if it is no longer where the plan has it (an arm brushed it)."""
        now = (await self.look())["object_poses"]["block"]
        if np.linalg.norm(np.subtract(now[:3], block_pose[:3])) > MOVED_M:
            self.log(f"  the block moved to {np.round(now, 3).tolist()}: planning the grasp again")
            return now
        return None

    async def pick_and_set_down(self, arm: str, block_pose, at_xy, on_z_m: float) -> None:
        """Grasp the block from above, lift it, carry it over ``at_xy`` and set it down there with
        its grasp point ``on_z_m`` above the surface it rests on, open, back away."""
        site, yaw = block_grasp(block_pose)
        self.log(f"  block at {np.round(block_pose, 3).tolist()}: grasp at {np.round(site, 3).tolist()}, "
                 f"yaw {yaw:+.2f}")
        await self.decide()
        # Up out of the folded rest first: a joint-space move from it to over the block sweeps
        # the jaws through where the block stands.
        await self.move(arm, READY_M[arm], yaw, OPEN, 1.0, think=False)
        for _ in range(REPLANS):
            done = await self.move_above(arm, site[:2], site[2], yaw, OPEN, 1.0)
            moved = await self.block_moved(block_pose)  # a block close to the ready point can be knocked over
            if moved is None:
                break
            await self.settle(SETTLE_S)
            block_pose = (await self.look())["object_poses"]["block"]
            site, yaw = block_grasp(block_pose)
        else:
            raise Failed(f"the block kept moving under the {arm} arm ({REPLANS} plans)")
        yaw = done["yaw_rad"]
        # The fixed jaw comes down a little off the block's face (the moving one closes it up),
        # and the last few cm straight down in two moves: one long joint-space move sweeps sideways.
        site = [site[0] + JAW_CLEARANCE_M * math.cos(yaw), site[1] + JAW_CLEARANCE_M * math.sin(yaw), site[2]]
        await self.move(arm, [site[0], site[1], site[2] + 0.02], yaw, OPEN, 0.6, think=False)
        await self.move(arm, site, yaw, OPEN, 0.6, think=False)
        closed = await self.grip(arm, "close")
        if closed["outcome"] == "reached":  # shut: nothing between the jaws
            raise Failed(f"{arm} closed on nothing: the block was not between its jaws ({closed})")
        lift = site[2] - block_pose[2]  # the grasp point above the block's centre
        await self.decide()
        await self.move_above(arm, site[:2], site[2], yaw, None, 1.0)
        await self.decide()
        yaw = (await self.move_above(arm, at_xy, on_z_m + lift, yaw, None, 1.5, any_yaw=True))["yaw_rad"]
        await self.move(arm, [at_xy[0], at_xy[1], on_z_m + lift + 0.008], yaw, None, 1.0, think=False)
        await self.grip(arm, OPEN, 0.4)
        await self.decide()
        await self.move_above(arm, at_xy, on_z_m + lift, yaw, None, 0.8)
        await self.move(arm, RETREAT_M[arm], 0.0, None, 1.0)

    async def resting_block(self) -> tuple[list[float], list[float]]:
        """The block's and the tray's poses once the block is still (its released fall and bounce)."""
        previous, waited = None, 0.0
        while True:
            obs = await self.look()
            block, tray = obs["object_poses"]["block"], obs["object_poses"]["tray"]
            if previous is not None and np.linalg.norm(np.subtract(block[:3], previous[:3])) < 0.001:
                return block, tray
            if waited >= MAX_SETTLE_S:
                return block, tray
            previous = block
            await self.settle(0.2)
            waited += 0.2

    async def episode(self, seed: int) -> dict:
        reset = await self.call("reset", seed=seed)
        self.log(f"reset seed {seed}: block on the {reset['draw']['block_side']}, tick {reset['tick']}")
        if self.lockstep:
            await self.call("step", ticks=2)
        else:
            await self.call("resume")
        obs = await self.look()
        block, tray = obs["object_poses"]["block"], obs["object_poses"]["tray"]
        picker = "left" if block[1] > 0 else "right"
        placer = "right" if picker == "left" else "left"
        self.log(f"{picker} picks the block and sets it down at the relay point {RELAY_M}")
        rest_z = block[2]  # the block's centre above the table, as it lies
        await self.pick_and_set_down(picker, block, RELAY_M, rest_z)
        block, tray = await self.resting_block()
        self.log(f"{placer} takes it from {np.round(block[:3], 3).tolist()} into the tray at "
                 f"{np.round(tray[:3], 3).tolist()}")
        tray_floor_m = tray[2] + 0.004  # the floor's top above the tray body's origin (its underside)
        block_half_z = block[2]  # resting on the table: its centre height is its half-height as it lies
        await self.pick_and_set_down(placer, block, tray[:2], tray_floor_m + block_half_z)
        waited = 0.0
        while True:
            obs = await self.look()
            task = obs.get("task") or {}
            if task.get("success") or waited >= MAX_SETTLE_S:
                return {"success": bool(task.get("success")), "stage": task.get("stage"), "tick": obs["tick"],
                        "reset_tick": reset["tick"], "sim_s": round(obs["sim_time_s"] - reset["t_s"], 3),
                        "calls": self.calls}
            await self.settle(SETTLE_S)
            waited += SETTLE_S


def start_sim(namespace: str, log_path: str) -> subprocess.Popen:
    """A sim of the scene with its cameras off (this agent reads ground truth), started paused."""
    args = [sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r", f"__ns:={namespace}",
            "-p", "camera_period_s:=0.0", "-p", "start_paused:=true"]
    return subprocess.Popen(args, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)


async def run(args) -> int:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    def log(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    sim = None
    if args.start_sim:
        sim = start_sim(args.namespace, args.sim_log)
    # The server gets this process's environment: ROS_DOMAIN_ID and the discovery range above all.
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "robogym_ros.nodes.mcp", "--ground-truth", "--namespace",
                                         args.namespace, "--timeout-s", str(args.timeout_s)],
                                   env=dict(os.environ))
    started = time.monotonic()
    try:
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=sys.stderr if not args.quiet else quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    agent = Agent(session, args.lockstep, 0.0 if args.lockstep else args.think_s, log, args.verbose)
                    deadline = time.monotonic() + SIM_START_S
                    while True:  # a sim just started: its spec comes once discovery matched
                        try:
                            agent.control_dt_s = (await agent.call("spec"))["control_dt_s"]
                            break
                        except Failed:
                            if time.monotonic() > deadline:
                                raise
                    if args.lockstep:
                        await agent.call("pause")
                    try:
                        outcome = await agent.episode(args.seed)
                    except Failed as exc:
                        outcome = {"success": False, "failed": str(exc)[:300], "calls": agent.calls}
                    if not args.lockstep:
                        await agent.call("pause")
    finally:
        if sim is not None:
            sim.terminate()
            try:
                sim.wait(10)
            except subprocess.TimeoutExpired:
                sim.kill()
    outcome.update(seed=args.seed, mode="lockstep" if args.lockstep else "real time",
                   think_s=0.0 if args.lockstep else args.think_s, wall_s=round(time.monotonic() - started, 1))
    print(json.dumps(outcome), flush=True)
    return 0 if outcome["success"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the reset's seed (0..2147483647)")
    parser.add_argument("--lockstep", action="store_true", help="pause the sim; every wait steps it")
    parser.add_argument("--think-s", type=float, default=0.0, help="real time: seconds of thinking per decision")
    parser.add_argument("--namespace", default="/robogym_agent", help="the sim's ROS namespace")
    parser.add_argument("--start-sim", action="store_true", help="start a sim (cameras off) in the namespace")
    parser.add_argument("--sim-log", default=os.devnull, help="with --start-sim: where its output goes")
    parser.add_argument("--timeout-s", type=float, default=15.0, help="the server's per-call timeout")
    parser.add_argument("--quiet", action="store_true", help="print only the outcome (one JSON line)")
    parser.add_argument("--verbose", action="store_true", help="log the block's pose after every move")
    args = parser.parse_args()
    if not 0 <= args.seed <= 2**31 - 1 or not 0 <= args.think_s <= 60:
        parser.error("--seed must be in 0..2147483647 and --think-s in 0..60")
    if not args.namespace.startswith("/"):
        args.namespace = "/" + args.namespace
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        print(f"mcp_agent: the MCP SDK is needed: pip install 'mcp>=2,<3' ({exc})", file=sys.stderr)
        return 2
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
