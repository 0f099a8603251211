"""The MCP side of robogym_mcp: one MCP tool per SimTools method, with the descriptions an
agent reads, and the conversion of answers into MCP content (JSON text, the same as
structured content, then one PNG image per camera). A refusal or an unanswered call is a tool
result with ``is_error`` and the reason as its text, so the agent can read it and go on.
"""
from __future__ import annotations

import base64
import json
import math
from typing import Callable, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

# Strict: a JSON true or "0.5" is refused by the schema, not coerced to 1.0 or 0.5 (an int is a float).
from pydantic import ConfigDict, StrictBool, StrictFloat, StrictInt

from robogym_ros.nodes.mcp.skills import SkillTools
from robogym_ros.nodes.mcp.tools import MAX_MOVE_S, MAX_STEP_TICKS, Answer, Refused, SimTools
from robogym_ros.ros.sim_client import SimUnavailable

INSTRUCTIONS = (
    "You drive a simulated pair of SO-101 robot arms (ROS 2 + MuJoCo). Call spec first: joints with their "
    "ranges (rad), cameras, rates, the task and what success means. The sim runs in real time while you think "
    "unless you pause it; observe gives joints and the three camera images of one and the same tick; act sets "
    "servo targets by joint name (refused with the reason, nothing sent, if a name or value is wrong). For "
    "lockstep: pause, act, step N ticks, observe. Every call answers within the server's timeout, with what it "
    "waited for if the sim did not answer.")

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ACTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
RESETS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def json_safe(value):
    """JSON without NaN or infinities (strict parsers refuse them): those become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def result(call: Callable[[], Answer]) -> CallToolResult:
    try:
        answer = call()
    except (Refused, SimUnavailable) as exc:
        return CallToolResult(content=[TextContent(text=str(exc))], is_error=True)
    data = json_safe(answer.data)
    content = [TextContent(text=json.dumps(data))]
    content += [ImageContent(data=base64.b64encode(image).decode(), mime_type=mime)
                for _, image, mime in answer.images]
    return CallToolResult(content=content, structured_content=data)


def build_server(tools: SimTools) -> MCPServer:
    server = MCPServer("robogym", instructions=INSTRUCTIONS, log_level="WARNING")
    timeout = f"Answers within {tools.timeout_s:g} s"
    skills = SkillTools(tools)

    @server.tool(name="spec", annotations=READ_ONLY, description=(
        "What the sim offers: joints (name, target range lower..upper, unit), cameras, control and physics "
        f"rates, real-time factor, the task and what success means. {timeout} (waits for the sim's spec)."))
    def spec() -> CallToolResult:
        return result(tools.spec)

    @server.tool(name="observe", annotations=READ_ONLY, description=(
        "One observation, all of one tick: sim time, the tick, the 12 joint positions, velocities and efforts_nm "
        "(each servo's load), the servo targets held and tracking_errors_rad (position - target), and (images) "
        "one PNG per camera, each stamped with that tick (data.images lists them in order). While the sim runs, "
        "it is the next tick with every camera frame (frames come every camera period); while paused, the newest "
        "at hand. object_poses adds ground-truth block and tray poses (x y z qw qx qy qz, world) where the server "
        "was started with --ground-truth. grippers: each grasp point's world position (m), closing yaw, jaw angle, "
        "by forward kinematics of the measured joints. task (--ground-truth only): the env's success and stage "
        "(none, reach, grasp, lift, handover, release, place) of that tick. cameras: only these cameras' images; "
        "image_format png (lossless, default) or jpeg; image_width_px: scaled to this width (aspect kept); each "
        "data.images entry says what its payload is (returned: mime_type, width, height, bytes). latest: the newest "
        f"observation at hand at once, not the next tick. {timeout}."))
    def observe(images: StrictBool = True, object_poses: StrictBool = False, cameras: list[str] | None = None,
                image_format: Literal["png", "jpeg"] = "png", image_width_px: StrictInt | None = None,
                latest: StrictBool = False) -> CallToolResult:
        return result(lambda: skills.observe(images=images, object_poses=object_poses, cameras=cameras,
                                             image_format=image_format, image_width_px=image_width_px,
                                             latest=latest))

    @server.tool(name="act", annotations=ACTS, description=(
        "Set servo position targets by joint name, e.g. {\"left_shoulder_lift\": -0.75, \"left_gripper\": 1.2} (rad). "
        "Joints not named keep their targets. Takes effect from the sim's next control tick. A name that is "
        "unknown or repeated, a value that is not finite or outside the joint's range: refused with the sim's "
        "reason, nothing sent."))
    def act(targets: dict[str, StrictFloat]) -> CallToolResult:
        return result(lambda: tools.act(targets))

    @server.tool(name="move", annotations=ACTS, description=(
        "A timed move: the named joints go linearly (in sim time) from their current targets to these, over "
        f"duration_s (one control tick .. {MAX_MOVE_S:g} s), starting now. A pause freezes it, a reset drops it, "
        "an act "
        "naming one of its joints takes that joint over. Refused like act, nothing sent. wait: answer when it "
        "is done (paused: stepping the sim through it) with outcome reached, stalled (a joint held off its "
        "target while still: contact) or not reached, and each joint's final error (rad)."))
    def move(targets: dict[str, StrictFloat], duration_s: StrictFloat, wait: StrictBool = False) -> CallToolResult:
        return result(lambda: skills.move(targets, duration_s, wait))

    @server.tool(name="pause", annotations=ACTS, description=(
        f"Pause the sim (its own pause service): time stops, nothing moves until resume or step. {timeout}."))
    def pause() -> CallToolResult:
        return result(tools.pause)

    @server.tool(name="resume", annotations=ACTS,
                 description=f"Resume the sim in real time (its own resume service). {timeout}.")
    def resume() -> CallToolResult:
        return result(tools.resume)

    @server.tool(name="step", annotations=ACTS, description=(
        f"While paused: advance the sim by ticks control ticks (1..{MAX_STEP_TICKS}), with the targets in force, "
        f"through the sim's own step service (once per tick). Refused while running. {timeout} per tick."))
    def step(ticks: StrictInt = 1) -> CallToolResult:
        return result(lambda: tools.step(ticks))

    @server.tool(name="step_observe", annotations=ACTS, description=(
        "Lockstep in one call: optionally set targets (as act), step the paused sim by ticks (1.."
        f"{MAX_STEP_TICKS}), then observe the last tick (as observe: images, object_poses; with images, the "
        "newest tick the cameras made a frame of, newest_tick the last stepped). One request to the "
        "sim whatever ticks. Refused while the sim runs (pause first) or if another client moved it, nothing "
        f"changed. {timeout}."))
    def step_observe(ticks: StrictInt = 1, targets: dict[str, StrictFloat] | None = None, images: StrictBool = True,
                     object_poses: StrictBool = False) -> CallToolResult:
        return result(lambda: skills.step_observe(ticks, targets, images, object_poses))

    @server.tool(name="reset", annotations=RESETS, description=(
        "Start a new episode (the sim's own reset service): a new random scene, both arms folded; the sim is paused "
        "afterwards. seed: that seed's first scene (the sim's live seed parameter is set first). The cameras show "
        f"the new scene from their next frame (step or resume). {timeout}."))
    def reset(seed: StrictInt | None = None) -> CallToolResult:
        return result(lambda: tools.reset(seed))

    @server.tool(name="status", annotations=READ_ONLY, description=(
        "How the sim is doing (its diagnostics, about once a second): sim time, real-time factor achieved and "
        "target, late steps, resets, commands accepted and rejected with the sim's last rejection; the run state; "
        f"and this server's own last refusal; task: the newest success and stage observe judged. {timeout}."))
    def status() -> CallToolResult:
        return result(skills.status)

    @server.tool(name="move_gripper", annotations=ACTS, description=(
        "Move one arm's gripper (arm: left or right) so that its grasp point (between the jaws) is at position_m "
        "[x, y, z] (world frame, m) with the jaws pointing straight down and closing along yaw_rad (in the table's "
        "plane, from +x), by inverse kinematics on the sim's own model from the measured joints; opening (optional): "
        "\"open\", \"close\" or the gripper target (rad). A timed move over duration_s. A pose the arm cannot take "
        "is refused with how far off the best solution stays, nothing sent. wait: answer when done with outcome "
        "and the gripper's measured position error (mm, forward kinematics of the measured joints)."))
    def move_gripper(arm: str, position_m: list[StrictFloat], yaw_rad: StrictFloat = 0.0,
                     opening: str | StrictFloat | None = None, duration_s: StrictFloat = 2.0,
                     wait: StrictBool = True) -> CallToolResult:
        return result(lambda: skills.move_gripper(arm, position_m, yaw_rad, opening, duration_s, wait))

    @server.tool(name="grip", annotations=ACTS, description=(
        "Open or close one arm's jaws (arm: left or right; opening: \"open\", \"close\" or the gripper target "
        "in rad) over duration_s. wait: answer when done; closing on an object ends stalled (jaws held apart)."))
    def grip(arm: str, opening: str | StrictFloat = "close", duration_s: StrictFloat = 0.5,
             wait: StrictBool = True) -> CallToolResult:
        return result(lambda: skills.grip(arm, opening, duration_s, wait))

    refuse_unknown_arguments(server)
    return server


def refuse_unknown_arguments(server: MCPServer) -> None:
    """Every tool refuses an argument it does not take (a misspelt ``duration`` would otherwise
    be dropped and the default used), naming it; its schema says so (additionalProperties)."""
    for tool in server._tool_manager.list_tools():  # the SDK offers no public switch for this
        loose = tool.fn_metadata.arg_model
        tool.fn_metadata.arg_model = type(loose.__name__, (loose,), {
            "model_config": ConfigDict(**loose.model_config, extra="forbid")})
        tool.parameters["additionalProperties"] = False
