"""robogym_mcp driven by the mcp SDK's own client, over stdio and over streamable HTTP, against
a real sim process (``python -m robogym_ros.nodes.sim_node``) over real DDS.

What the agent gets is checked against what the sim published, seen by an observer of our
own: an observation's images are, pixel for pixel, the images the sim published stamped with
the observation's tick, its joints are that tick's joint_states, and the recorder's image
check (stamp on the tick grid and on a received joint tick) passes on them."""
from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

import pytest
from trajectory_msgs.msg import JointTrajectory

pytest.importorskip("mcp", reason="mcp is not installed (pip install -e '.[agents]')")

from mcpharness import TOOLS, HttpServer, SimWatcher, http_agent, pixels_digest, run_async, stdio_agent  # noqa: E402

from robogym_ros import (
    checks,  # noqa: E402
    contract,  # noqa: E402
)
from robogym_ros.checks.results import ImageMeta  # noqa: E402
from robogym_ros.contract import header_stamp_ns  # noqa: E402
from robogym_ros.ros.qos import COMMAND_QOS  # noqa: E402
from robogym_ros.task.placement import SUCCESS_TEXT  # noqa: E402

TOKEN = "test-token-0123456789abcdef"
# The server's timeout for these scenarios: generous, as the machine may be loaded (a sim, the
# server, an observer and other work on two cores); test_mcp_robust.py holds the timeouts to account.
TIMEOUT = ("--timeout-s", "15")


def check_observation(watcher: SimWatcher, spec: dict, data: dict, images: list) -> None:
    """Three images and 12 joints of one tick, as the sim published them."""
    dt = spec["control_dt_s"]
    dt_ns = round(dt * 1e9)
    assert len(data["joints"]) == 12 and len(images) == 3 and len(data["images"]) == 3
    assert data["stamp_ns"] == data["tick"] * dt_ns
    metas = [ImageMeta(**{k: v for k, v in m.items() if k != "returned"}) for m in data["images"]]
    result = checks.check_images(metas, dt_ns, joint_stamps_ns=[data["stamp_ns"]],
                                 expected_sizes={c["name"]: (c["width"], c["height"]) for c in spec["cameras"]})
    assert result.status == "pass", (result.summary, [f.message for f in result.findings])
    assert {m.stamp_ns for m in metas} == {data["stamp_ns"]}
    watcher.wait_for(lambda: watcher.joints_at(data["stamp_ns"]) is not None, 10, "the observed tick at the observer")
    assert watcher.joints_at(data["stamp_ns"]) == data["joints"]  # the tick's joint_states, bit for bit
    for meta, rgb in zip(metas, images):
        key = (meta.camera, meta.stamp_ns)
        watcher.wait_for(lambda: key in watcher.image_digests, 10, f"{key} at the observer")
        assert pixels_digest(rgb) == watcher.image_digests[key], f"{meta.camera}: not the image the sim published"


def check_last_frame_tick(watcher: SimWatcher, spec: dict, obs: dict, newest: int) -> None:
    """A paused sim whose last tick is ``newest``: the observation is of the last tick up to it the
    camera clock made a frame of, or (only if the sim skipped that frame and said so) an earlier one."""
    dt_ns = round(spec["control_dt_s"] * 1e9)
    period_ns = round(spec["cameras"][0]["period_s"] * 1e9)
    assert obs["newest_tick"] == newest, obs
    due = newest * dt_ns // period_ns * period_ns // dt_ns
    if obs["tick"] != due:
        watcher.wait_for(lambda: due * dt_ns in watcher.snapshot(watcher.skipped_frames), 5,
                         f"a skip report of tick {due}'s frame (observe gave tick {obs['tick']})")
        assert obs["tick"] < due and obs["tick"] * dt_ns % period_ns == 0, obs["tick"]


async def drive(agent, watcher: SimWatcher) -> None:
    assert await agent.tool_names() == TOOLS
    spec, _ = await agent.ok("spec")
    assert [j["name"] for j in spec["joints"]] == [j["name"] for j in watcher.spec["joints"]]
    assert len(spec["joints"]) == 12
    assert [c["name"] for c in spec["cameras"]] == ["left_wrist", "right_wrist", "overhead"]
    dt_ns = round(spec["control_dt_s"] * 1e9)
    # success as the env judges it, in words built from the judge's own thresholds
    assert spec["success"].startswith(SUCCESS_TEXT) and "30 mm" not in spec["success"]

    # the server's first call is an act while the sim runs: it names the tick it came after
    watcher.wait_for(lambda: watcher.snapshot(watcher.targets), 10, "the sim's servo targets")
    pan = watcher.snapshot(watcher.targets)[-1]
    held = pan.position[list(pan.name).index("left_shoulder_pan")]
    first, _ = await agent.ok("act", targets={"left_shoulder_pan": held})
    assert isinstance(first["after_tick"], int) and "notes" not in first, first
    watcher.wait_for(lambda: watcher.diag_values().get("commands_accepted") == "1", 10, "the act in diagnostics")

    data, images = await agent.ok("observe")
    check_observation(watcher, spec, data, images)
    assert data["paused"] is False

    # a bad act: refused naming the joint, nothing sent, nothing changed
    counts = watcher.diag_values()
    targets_before = watcher.snapshot(watcher.targets)[-1].position.tolist()
    for targets, words in (({"left_elbow": 0.3}, "refused, nothing sent: unknown joint 'left_elbow'"),
                           ({"left_shoulder_pan": 0.2, "left_gripper": 9.0},
                            "refused, nothing sent: target for 'left_gripper' is 9, outside its range"),
                           # JSON has no infinity: the client sends null, the tool's schema refuses it
                           ({"left_shoulder_pan": 0.2, "right_wrist_flex": float("inf")}, "targets.right_wrist_flex"),
                           # a JSON true or a number in a string is not a target (never coerced to 1.0, 0.5)
                           ({"left_shoulder_pan": True}, "targets.left_shoulder_pan"),
                           ({"left_shoulder_pan": "0.5"}, "targets.left_shoulder_pan")):
        is_error, text, _, _ = await agent.call("act", targets=targets)
        assert is_error and words in text, text
    await asyncio.sleep(1.5)  # a diagnostics period: a command sent would show as accepted or rejected
    after = watcher.diag_values()
    assert (after["commands_accepted"], after["commands_rejected"]) == \
        (counts["commands_accepted"], counts["commands_rejected"]), (counts, after)
    assert watcher.snapshot(watcher.targets)[-1].position.tolist() == targets_before
    status, _ = await agent.ok("status")
    assert "'left_gripper' is 9" in status["server"]["last_refusal"]

    # a good act: the sim holds the target from the next tick on, and the joint moves
    start = data["joints"]["left_shoulder_pan"]
    sent, _ = await agent.ok("act", targets={"left_shoulder_pan": 0.6})
    assert sent["sent"] == {"left_shoulder_pan": 0.6}
    moved = None
    for _ in range(50):
        obs, images = await agent.ok("observe")
        if obs["joints"]["left_shoulder_pan"] > start + 0.2:
            moved = obs
            break
    assert moved is not None, "left_shoulder_pan did not move toward its new target"
    assert moved["tick"] > sent["after_tick"]
    check_observation(watcher, spec, moved, images)
    watcher.wait_for(lambda: watcher.target_at(moved["stamp_ns"], "left_shoulder_pan") is not None, 10,
                     "the observed tick's targets at the observer")
    assert watcher.target_at(moved["stamp_ns"], "left_shoulder_pan") == 0.6

    # a timed move: refused like act, or followed in sim time through the targets in between
    is_error, text, _, _ = await agent.call("move", targets={"left_wrist_roll": 9.0}, duration_s=0.5)
    assert is_error and "'left_wrist_roll' is 9, outside its range" in text, text
    # an argument the tool does not take (misspelt duration_s) is refused, naming it, not dropped
    is_error, text, _, _ = await agent.call("move", targets={"left_wrist_roll": 0.4}, duration=0.5, duration_s=0.5)
    assert is_error and "duration\n" in text and "Extra inputs are not permitted" in text, text
    for duration_s in (0.0, 1e-12, spec["control_dt_s"] / 2, 61):  # less than a tick is a jump, not a move
        is_error, text, _, _ = await agent.call("move", targets={"left_wrist_roll": 0.4}, duration_s=duration_s)
        assert is_error and f"duration_s must be in [{spec['control_dt_s']:g}, 60] s" in text, text
    n_targets = len(watcher.snapshot(watcher.targets))
    await agent.ok("move", targets={"left_wrist_roll": 0.4}, duration_s=0.5)
    def roll(msg) -> float:
        return msg.position[list(msg.name).index("left_wrist_roll")]
    watcher.wait_for(lambda: roll(watcher.snapshot(watcher.targets)[-1]) == 0.4, 20, "the move's end")
    path = [roll(m) for m in watcher.snapshot(watcher.targets)[n_targets:]]
    between = [v for v in path if 0.0 < v < 0.4]
    assert len(between) >= 40, path  # 0.5 s of sim time at 100 Hz: the targets in between, not a jump

    # pause, step, resume and reset: the sim's own services, the sim's own answers
    paused, _ = await agent.ok("pause")
    assert paused["action"] == "pause" and paused["paused"] is True
    watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "pause", 10, "the pause state")
    pause_state = watcher.snapshot(watcher.states)[-1]
    assert pause_state.paused
    last = pause_state.stamp_ns  # the last tick before the pause
    watcher.wait_for(lambda: watcher.joints_at(last) is not None, 10, "the last tick before the pause")
    await asyncio.sleep(0.5)
    stamps = [header_stamp_ns(m) for m in watcher.snapshot(watcher.joint_states)]
    assert max(stamps) == last  # nothing moves while paused: no tick after it
    n = len(stamps)
    stepped, _ = await agent.ok("step", ticks=12)
    assert stepped["stepped"] == 12 and stepped["tick"] == last // dt_ns + 12
    assert stepped["action"] == "step" and stepped["t_s"] == stepped["tick"] * dt_ns / 1e9
    watcher.wait_for(lambda: len(watcher.snapshot(watcher.joint_states)) >= n + 12, 10, "12 stepped ticks")
    new = [header_stamp_ns(m) for m in watcher.snapshot(watcher.joint_states)[n:]]
    assert new == [last + k * dt_ns for k in range(1, 13)]  # exactly 12 ticks, one control dt apart
    obs, images = await agent.ok("observe")  # paused: the last frame tick stepped (frames every 10 ticks)
    assert obs["paused"] is True
    check_last_frame_tick(watcher, spec, obs, last // dt_ns + 12)
    check_observation(watcher, spec, obs, images)
    is_error, text, _, _ = await agent.call("step", ticks=0)
    assert is_error and "ticks must be a whole number in 1..1000" in text

    for seed in (2**63, 2**31, -1):  # beyond the sim's seed range: refused with the range, nothing reset
        is_error, text, _, _ = await agent.call("reset", seed=seed)
        assert is_error and "seed must be a whole number in 0..2147483647" in text, text
    reset, _ = await agent.ok("reset", seed=3)
    assert reset["seed"] == 3 and reset["scene"] == 1 and reset["paused"] is True
    assert reset["action"] == "reset" and reset["draw"]["block_side"] in ("left", "right")
    watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "reset", 10, "the reset state")
    state = watcher.snapshot(watcher.states)[-1]
    assert state.paused and (state.seed, state.scene) == (3, 1) and state.stamp_ns == reset["tick"] * dt_ns
    obs, _ = await agent.ok("observe", images=False)  # the reset is a tick of its own, of the new episode
    assert obs["tick"] == reset["tick"] and not obs.get("before_last_reset"), obs
    resumed, _ = await agent.ok("resume")
    assert resumed["action"] == "resume" and resumed["paused"] is False
    watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "resume", 10, "the resume state")
    is_error, text, _, _ = await agent.call("step")
    assert is_error and "the sim refused step: step is only allowed while paused" in text
    obs, images = await agent.ok("observe")  # a frame of the reset tick may still be on its way: that one or later
    assert obs["tick"] >= reset["tick"] and not obs.get("before_last_reset"), obs
    check_observation(watcher, spec, obs, images)


@pytest.mark.long
def test_an_agent_drives_a_real_sim_over_stdio(make_sim):
    _sim, watcher = make_sim(SimWatcher)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT) as agent:
            await drive(agent, watcher)
    run_async(scenario)


@pytest.mark.long
def test_an_agent_drives_a_real_sim_over_http_and_a_request_without_the_token_is_refused(make_sim):
    _sim, watcher = make_sim(SimWatcher)
    server = HttpServer(watcher.namespace, *TIMEOUT, token=TOKEN)
    try:
        assert "bearer token required" in server.output()
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        for headers in ({}, {"Authorization": "Bearer not-the-token-at-all"}):
            request = urllib.request.Request(server.url, data=body, method="POST", headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 401

        async def scenario():
            async with http_agent(server.url, TOKEN) as agent:
                await drive(agent, watcher)
        run_async(scenario)
    finally:
        assert server.stop() == 0, server.text


def test_step_observe_of_100_ticks_is_one_step_request_and_observes_the_last_tick(make_sim):
    """Targets, 100 ticks and the observation of the last, in one call and one message to the sim;
    refused (nothing sent) while the sim runs or with a bad target."""
    _sim, watcher = make_sim(SimWatcher)
    requests: list[JointTrajectory] = []
    sub = watcher.node.create_subscription(JointTrajectory, contract.STEP_REQUEST_TOPIC, requests.append, COMMAND_QOS)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT) as agent:
            spec, _ = await agent.ok("spec")
            dt_ns = round(spec["control_dt_s"] * 1e9)
            is_error, text, _, _ = await agent.call("step_observe", ticks=5)
            assert is_error and "the sim runs; pause it first" in text, text
            await agent.ok("pause")
            watcher.wait_for(lambda: watcher.snapshot(watcher.states)[-1].reason == "pause", 10, "the pause")
            last = watcher.snapshot(watcher.states)[-1].stamp_ns // dt_ns
            is_error, text, _, _ = await agent.call("step_observe", ticks=5, targets={"left_gripper": 9.0})
            assert is_error and "'left_gripper' is 9, outside its range" in text, text
            await asyncio.sleep(0.5)
            assert requests == []  # refusals send nothing
            # this test's counter hears the server's requests only once discovery has matched the two
            watcher.wait_for(lambda: watcher.node.count_publishers(sub.topic_name) >= 1, 10, "the server's publisher")
            await asyncio.sleep(1.0)
            n = len(watcher.snapshot(watcher.joint_states))
            obs, _ = await agent.ok("step_observe", ticks=100, targets={"left_shoulder_pan": 0.3}, images=False)
            assert (obs["from_tick"], obs["stepped"], obs["tick"]) == (last, 100, last + 100), obs
            assert obs["paused"] is True and obs["sent"] == {"left_shoulder_pan": 0.3}
            watcher.wait_for(lambda: watcher.joints_at(obs["stamp_ns"]) is not None, 10, "the last tick")
            assert watcher.joints_at(obs["stamp_ns"]) == obs["joints"]  # that tick's joint_states
            await asyncio.sleep(0.5)
            assert len(requests) == 1, len(requests)  # one message, whatever the ticks
            stamps = [header_stamp_ns(m) for m in watcher.snapshot(watcher.joint_states)[n:]]
            assert stamps == [(last + k) * dt_ns for k in range(1, 101)]
            assert watcher.target_at((last + 1) * dt_ns, "left_shoulder_pan") == 0.3  # held from the first tick
            # with images: the newest tick the cameras made a frame of, joints and images of that tick
            obs, images = await agent.ok("step_observe", ticks=7)
            check_last_frame_tick(watcher, spec, obs, last + 107)
            check_observation(watcher, spec, obs, images)
    run_async(scenario)


def test_observe_while_paused_waits_for_the_frame_of_a_stepped_tick(make_sim):
    """A sim started paused publishes nothing: observe says so (and what to do) at once; after a
    step past a frame tick it returns that tick's frames, not an error, though they come some
    ms after the tick."""
    _sim, watcher = make_sim(SimWatcher, start_paused=True)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT) as agent:
            is_error, text, _, took = await agent.call("observe")
            # at once: not the call's 15 s timeout (the first call also waits for the server to see the sim:
            # 3.3 s once on a slow moment of this machine)
            assert is_error and "is paused at tick 0" in text and "step it" in text and took < 7.5, (took, text)
            for _ in range(3):
                await agent.ok("step", ticks=10)
                data, images = await agent.ok("observe")
                spec, _ = await agent.ok("spec")
                check_observation(watcher, spec, data, images)
                assert data["tick"] == data["newest_tick"]  # ticks 10, 20, 30 are frame ticks
    run_async(scenario)


def test_the_watcher_keeps_the_sims_skip_reports_and_keeps_watching(ros):
    """The harness's own check: test_mcp's frame rule leans on ``SimWatcher.skipped_frames``. A
    skip report (published as the sim publishes it) is kept by its stamp, and the watcher's
    executor lives on to take the next run state (a callback that raised would end its spin)."""
    import rclpy
    from simharness import new_namespace, wait_for
    from std_msgs.msg import Header, String

    from robogym_ros import contract
    from robogym_ros.ros import qos
    from robogym_ros.ros.stamps import stamp_msg

    namespace = new_namespace("watch")
    watcher = SimWatcher(namespace)
    node = rclpy.create_node("stand_in_sim", namespace=f"/{namespace}")
    try:
        skips = node.create_publisher(Header, contract.CAMERA_SKIPS_TOPIC, qos.STREAM_QOS)
        states = node.create_publisher(String, contract.STATE_TOPIC, qos.STATE_QOS)
        wait_for(lambda: skips.get_subscription_count() >= 1 and states.get_subscription_count() >= 1, 10,
                 "the watcher's subscriptions")
        skips.publish(Header(stamp=stamp_msg(3_900_000_000), frame_id="left_wrist,right_wrist,overhead"))
        watcher.wait_for(lambda: watcher.snapshot(watcher.skipped_frames) == [3_900_000_000], 10, "the skip report")
        states.publish(String(data=contract.RunState(paused=True, stamp_ns=3_910_000_000, reason="step").to_json()))
        watcher.wait_for(lambda: len(watcher.snapshot(watcher.states)) == 1, 10, "the next run state")
    finally:
        watcher.close()
        node.destroy_node()


def test_observe_a_camera_subset_as_scaled_jpeg_the_latest_at_once_and_bad_options_refused(make_sim):
    """cameras, image_format, image_width_px and latest: the images asked for, of the observed
    tick (the JPEG is the published image scaled, within JPEG's loss), each entry saying what
    its payload is; options that cannot be met refused, naming the argument."""
    import cv2
    import numpy as np
    _sim, watcher = make_sim(SimWatcher)

    async def scenario():
        async with stdio_agent(watcher.namespace, *TIMEOUT) as agent:
            spec, _ = await agent.ok("spec")
            data, _ = await agent.ok("observe", latest=True)  # running: the newest at hand, of one tick
            assert len(data["images"]) == 3 and {m["stamp_ns"] for m in data["images"]} == {data["stamp_ns"]}
            await agent.ok("pause")
            await agent.ok("step", ticks=10)
            full, images = await agent.ok("observe")
            check_observation(watcher, spec, full, images)  # PNG: the published pixels, bit for bit
            assert agent.mime_types == ["image/png"] * 3
            small, jpegs = await agent.ok("observe", cameras=["overhead"], image_format="jpeg", image_width_px=160)
            assert small["tick"] == full["tick"] and agent.mime_types == ["image/jpeg"]
            assert [m["camera"] for m in small["images"]] == ["overhead"] and len(jpegs) == 1
            assert small["images"][0]["returned"] | {"bytes": 0} == {"mime_type": "image/jpeg", "width": 160,
                                                                     "height": 120, "bytes": 0}
            assert jpegs[0].shape == (120, 160, 3)
            overhead = images[[m["camera"] for m in full["images"]].index("overhead")]
            scaled = cv2.resize(overhead, (160, 120), interpolation=cv2.INTER_AREA).astype(np.int16)
            assert np.abs(jpegs[0].astype(np.int16) - scaled).mean() < 6.0
            assert np.abs(jpegs[0].astype(np.int16) - np.roll(scaled, 20, axis=1)).mean() > 6.0  # the check's control
            for arguments, words in (({"cameras": ["nope"]}, "cameras must be a non-empty list of this sim's cameras"),
                                     ({"cameras": []}, "cameras must be a non-empty list"),
                                     ({"image_width_px": 5}, "image_width_px must be a whole number in 16..320"),
                                     ({"image_format": "gif"}, "image_format")):
                is_error, text, _, _ = await agent.call("observe", **arguments)
                assert is_error and words in text, (arguments, text)
    run_async(scenario)
