"""robogym_mcp when the sim is not there, dies, or comes back, and with two agents on one sim.

Every call answers within the server's stated timeout (``--timeout-s``) with what it waited
for, never a hang; the server keeps serving through it, says a sim that stopped is gone, and
picks the sim up again when a new one starts in the namespace. Two agents on one sim see one
world: the same ticks, each other's pause, and for a joint both command, the later command's
target."""
from __future__ import annotations

import asyncio
import os
import signal

import pytest

pytest.importorskip("mcp", reason="mcp is not installed (pip install -e '.[agents]')")

from mcpharness import SimWatcher, run_async, stdio_agent  # noqa: E402
from simharness import new_namespace, start_sim  # noqa: E402
from spinning import Spinning  # noqa: E402

TIMEOUT_S = 2.0
SLACK_S = 2.5  # a loaded 2-core machine: the call's own work and the MCP round trip on top
CALLS = {"spec": {}, "observe": {}, "act": {"targets": {"left_gripper": 0.5}},
         "move": {"targets": {"left_gripper": 0.5}, "duration_s": 1.0}, "pause": {}, "resume": {},
         "step": {"ticks": 3}, "reset": {"seed": 1}, "status": {}}


async def every_call_answers_in_time(agent, words: dict[str, str]) -> None:
    """Every tool errs within the timeout, its text naming what it waited for."""
    for name, arguments in CALLS.items():
        is_error, text, _, took = await agent.call(name, **arguments)
        assert is_error, f"{name}: {text}"
        assert took < TIMEOUT_S + SLACK_S, f"{name} took {took:.1f} s: {text}"
        assert words.get(name, words["*"]) in text, f"{name}: {text}"


async def picked_up(agent, before: dict | None) -> dict:
    """The spec of a sim that just started, as soon as discovery brings it to the server (every
    call answering in time meanwhile), and an observation of it."""
    for _ in range(60):
        is_error, spec, _, took = await agent.call("spec")
        assert took < TIMEOUT_S + SLACK_S, (took, spec)
        if not is_error and (before is None or spec["sim_instance"] != before["sim_instance"]):
            break
        await asyncio.sleep(0.5)
    assert not is_error and (before is None or spec["sim_instance"] != before["sim_instance"]), spec
    data, images = await agent.ok("observe")
    assert len(images) == 3 and len(data["joints"]) == 12
    assert data["sim_instance"] == spec["sim_instance"]
    if before is not None:  # the first observation of a sim that came after another says so
        assert data.get("new_sim") is True and any("a new sim" in n for n in data["notes"]), data
        again, _ = await agent.ok("observe")
        assert "new_sim" not in again, again
    return spec


async def seen_by(agent, name: str, predicate, tries: int = 50, period_s: float = 0.1) -> dict:
    """The answer of ``name`` once ``predicate`` holds for it, or the last answer after ``tries``:
    another agent's pause or resume reaches this agent's server on the sim's run-state topic, a
    few ms after the sim answered the other agent."""
    for _ in range(tries):
        data, _ = await agent.ok(name)
        if predicate(data):
            break
        await asyncio.sleep(period_s)
    return data


@pytest.mark.long
def test_no_sim_a_sim_that_stops_one_that_dies_and_one_that_returns(tmp_path, ros):
    namespace = new_namespace("mcp")

    async def scenario():
        async with stdio_agent(namespace, "--timeout-s", str(TIMEOUT_S)) as agent:
            # no sim at all: each call says so within the timeout
            await every_call_answers_in_time(agent, {
                "*": f"no sim in /{namespace}: waited 2 s for its latched spec on /{namespace}/robogym_sim/spec",
                "pause": f"/{namespace}/robogym_sim/pause service did not appear within 2 s",
                "resume": f"/{namespace}/robogym_sim/resume service did not appear within 2 s",
                "step": f"/{namespace}/robogym_sim/step service did not appear within 2 s",
                "reset": f"/{namespace}/robogym_sim/set_parameters service did not appear within 2 s"})

            # a sim starts: picked up, without a restart of the server
            sim, watcher = await asyncio.to_thread(start_sim, namespace, tmp_path, SimWatcher)
            first = await picked_up(agent, None)

            # it stops cleanly: it leaves the ROS graph at once, and its kept spec is not served as alive
            watcher.close()
            assert await asyncio.to_thread(sim.stop) == 0, sim.output()
            await asyncio.sleep(1.0)
            for name in ("spec", "observe"):
                is_error, text, _, took = await agent.call(name)
                assert is_error and took < TIMEOUT_S + SLACK_S, (name, took, text)
                assert f"the sim in /{namespace} is gone: no publisher of /{namespace}/robogym_sim/spec" in text, text

            # another starts, and dies (SIGKILL: no goodbye on the ROS graph): every call still answers in time
            sim, watcher = await asyncio.to_thread(start_sim, namespace, tmp_path, SimWatcher)
            second = await picked_up(agent, first)
            os.kill(sim.proc.pid, signal.SIGKILL)
            await asyncio.to_thread(sim.proc.wait, 10)
            watcher.close()
            sim.log.close()
            is_error, text, _, took = await agent.call("observe")
            assert is_error and took < TIMEOUT_S + SLACK_S, (took, text)
            assert "waited 2 s for a new tick with all 3 camera frames" in text and "the last joint tick came" in text
            for name in ("pause", "step", "status", "act", "spec"):
                is_error, text, _, took = await agent.call(name, **CALLS[name])
                assert took < TIMEOUT_S + SLACK_S, f"{name} took {took:.1f} s: {text}"

            # a third in the namespace: picked up again; its ticks, not the dead one's
            sim, watcher = await asyncio.to_thread(start_sim, namespace, tmp_path, SimWatcher)
            try:
                await picked_up(agent, second)
                status, _ = await agent.ok("status")
                assert status["server"]["sims_seen"] == 3 and status["sim_present"] is True
            finally:
                watcher.close()
                assert await asyncio.to_thread(sim.stop) == 0, sim.output()
    run_async(scenario)


def test_two_agents_on_one_sim_see_one_world_and_the_later_command_wins(make_sim):
    _sim, watcher = make_sim(SimWatcher)

    async def scenario():
        async with stdio_agent(watcher.namespace, "--timeout-s", "15") as a, \
                stdio_agent(watcher.namespace, "--timeout-s", "15") as b:
            for agent in (a, b):  # both have seen the sim run (a paused sim publishes nothing to see)
                await agent.ok("observe")
            await a.ok("pause")
            # A's pause reaches B's server on the sim's run-state topic, ms later
            seen_by_b = await seen_by(b, "observe", lambda data: data["paused"])
            assert seen_by_b["paused"] is True  # A's pause is B's pause
            a_obs, _ = await a.ok("observe")
            # one world: the same tick for both
            assert (a_obs["tick"], a_obs["newest_tick"]) == (seen_by_b["tick"], seen_by_b["newest_tick"])
            await a.ok("act", targets={"left_shoulder_pan": 0.5, "right_gripper": 1.0})
            await asyncio.sleep(0.5)  # both commands are in before the next tick
            await b.ok("act", targets={"left_shoulder_pan": -0.5})
            await asyncio.sleep(0.5)
            stepped, _ = await b.ok("step", ticks=1)
            tick_ns = stepped["tick"] * round(watcher.spec["control_dt_s"] * 1e9)
            watcher.wait_for(lambda: watcher.target_at(tick_ns, "left_shoulder_pan") is not None, 10, "the targets")
            assert watcher.target_at(tick_ns, "left_shoulder_pan") == -0.5  # B's, the later
            assert watcher.target_at(tick_ns, "right_gripper") == 1.0  # A's: B did not name it
            await b.ok("resume")
            # B's resume reaches A's server the same way (its status is what that server last heard)
            status_a = await seen_by(a, "status", lambda data: data["run_state"]["paused"] is False)
            assert status_a["run_state"]["paused"] is False  # B's resume is A's resume
    run_async(scenario)


def test_the_http_transport_refuses_another_origin_a_foreign_host_and_a_simple_post(ros):
    """robogym_mcp --transport http on localhost, with curl as an attacking page would send: the
    same refusals as the viewer's (robogym_ros.live.guard's lists, which main hands the SDK)."""
    import shutil
    import subprocess

    from mcpharness import HttpServer
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    server = HttpServer(new_namespace("mcpguard"), "--timeout-s", "1")
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
            '"capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}')
    accept = "Accept: application/json, text/event-stream"

    def status(*headers: str) -> int:
        run = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", body,
                              "-H", accept, *[a for h in headers for a in ("-H", h)], server.url],
                             capture_output=True, text=True, timeout=30)
        return int(run.stdout)
    try:
        json_type = "Content-Type: application/json"
        assert status("Content-Type: text/plain") == 400
        assert status(json_type, f"Host: rebind.evil.example:{server.port}") == 421
        assert status(json_type, "Origin: http://evil.example") == 403
        assert status(json_type, f"Origin: http://localhost:{server.port}") == 200
    finally:
        assert server.stop() == 0, server.text


def test_a_running_observation_whose_ticks_poses_never_come_takes_a_later_tick_and_counts_it(make_sim):
    """A lost object-poses message (injected: this in-process server's buffer drops the poses of
    every tick in a 0.3 s window) does not end an observation without poses: after waiting a
    bounded time for them, a running observe takes a later tick, with its own poses, and status
    counts the miss."""
    import rclpy

    from robogym_ros.contract import header_stamp_ns
    from robogym_ros.nodes.mcp.tools import SimTools
    from robogym_ros.ros.sim_client import SimClient

    _sim, watcher = make_sim(SimWatcher)
    node = rclpy.create_node("poses_probe", namespace=watcher.node.get_namespace())
    link = SimClient(node, joints=True, objects=True, cameras=False)
    spinning = Spinning(node)
    try:
        tools = SimTools(link, 15.0, ground_truth=True)
        tools.spec()
        first = tools.observe(images=False, object_poses=True).data
        assert "object_poses" in first and tools.poses_missed == 0, first
        window: list[int] = []
        add = link.buffer.add_objects

        def lossy(stamp_ns: int, poses) -> None:
            if not window:
                window[:] = [stamp_ns, stamp_ns + 300_000_000]
            if not window[0] <= stamp_ns <= window[1]:
                add(stamp_ns, poses)
        link.buffer.add_objects = lossy
        data = tools.observe(images=False, object_poses=True).data
        for _ in range(10):  # a tick from before the loss whose poses came before it began is whole
            if window and data["stamp_ns"] >= window[0]:
                break
            assert "object_poses" in data and "notes" not in data, data
            data = tools.observe(images=False, object_poses=True).data
        assert "object_poses" in data and "notes" not in data, data
        assert data["stamp_ns"] > window[1] and tools.poses_missed >= 1, (data["stamp_ns"], window)
        assert tools.status().data["server"]["object_poses_missed"] == tools.poses_missed
        def truth():
            return next((m for m in watcher.snapshot(watcher.objects) if header_stamp_ns(m) == data["stamp_ns"]), None)
        watcher.wait_for(lambda: truth() is not None, 10, "the observed tick's poses at the observer")
        pose = truth().poses[0]
        assert data["object_poses"]["block"][:3] == [pose.position.x, pose.position.y, pose.position.z]
    finally:
        spinning.close()


def test_a_call_to_a_sim_known_to_be_gone_answers_at_once_naming_it(tmp_path, ros):
    """A sim that stopped has left the ROS graph: every call says it is gone well within the
    server's timeout (10 s here), instead of waiting all of it for a service or a tick that will
    not come."""
    namespace = new_namespace("gone")
    sim, watcher = start_sim(namespace, tmp_path, SimWatcher)

    async def scenario():
        nonlocal sim
        async with stdio_agent(namespace, "--timeout-s", "10") as agent:
            await picked_up(agent, None)
            watcher.close()
            assert await asyncio.to_thread(sim.stop) == 0, sim.output()
            sim = None
            await asyncio.sleep(1.0)
            for name, arguments in CALLS.items():
                is_error, text, _, took = await agent.call(name, **arguments)
                assert is_error and f"the sim in /{namespace} is gone" in text, (name, text)
                assert took < 5.0, f"{name} took {took:.1f} s of its 10 s timeout: {text}"
    try:
        run_async(scenario)
    finally:
        if sim is not None:
            watcher.close()
            sim.stop()
