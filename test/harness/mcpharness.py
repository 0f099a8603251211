"""Test harness for robogym_mcp: the mcp SDK's own client over stdio (it starts the server) and
over streamable HTTP (a server process started here), and an observer of the sim that also
keeps its run states, its servo targets and every camera image's digest by stamp."""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import cv2
import numpy as np
from sensor_msgs.msg import Image, JointState
from simharness import Observer, stop_process, wait_for
from std_msgs.msg import Header, String

from robogym_ros import contract
from robogym_ros.contract import RunState
from robogym_ros.params import DEFAULT_CAMERAS
from robogym_ros.ros import qos
from robogym_ros.wire.decode import decode_image

REPO = Path(__file__).parents[2]
TOOLS = {"spec", "observe", "act", "move", "pause", "resume", "step", "step_observe", "reset", "status", "move_gripper",
         "grip"}


def server_env(**extra) -> dict[str, str]:
    """The server's environment: an MCP client passes only what it is given (and a few basics),
    so the ROS domain, the discovery range and this checkout's path are passed explicitly."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


def pixels_digest(rgb: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(rgb).tobytes(), digest_size=16).hexdigest()


class SimWatcher(Observer):
    """The harness's observer plus the run states, the servo targets the physics held
    (ground_truth/joint_targets), each camera image's pixel digest by stamp, and the stamps of
    the frames the sim reported skipped (its renderer was still busy: real time never waits)."""

    def __init__(self, namespace: str, cameras=DEFAULT_CAMERAS):
        super().__init__(namespace)
        self.states: list[RunState] = []
        self.targets: list[JointState] = []
        self.image_digests: dict[tuple[str, int], str] = {}
        self.skipped_frames: list[int] = []
        n = self.node
        n.create_subscription(Header, f"/{namespace}/{contract.CAMERA_SKIPS_TOPIC}", self._on_skipped, qos.STREAM_QOS)
        n.create_subscription(String, f"/{namespace}/{contract.STATE_TOPIC}",
                              lambda m: self._keep(self.states)(RunState.from_json(m.data)), qos.STATE_QOS)
        n.create_subscription(JointState, contract.TRUTH_TARGETS, self._keep(self.targets), qos.STREAM_QOS)
        for cam in cameras:
            n.create_subscription(Image, contract.image_topic(cam), self._on_image(cam),
                                  qos.profile(contract.QosSpec(depth=100)), raw=True)

    def _on_skipped(self, msg: Header) -> None:
        with self._lock:
            self.skipped_frames.append(contract.join_stamp(msg.stamp.sec, msg.stamp.nanosec))

    def _on_image(self, camera: str):
        def callback(data: bytes) -> None:
            f = decode_image(data)
            rgb = np.frombuffer(f.pixels(data), np.uint8).reshape(f.height, f.width, 3)
            with self._lock:
                self.image_digests[(camera, f.stamp_ns)] = pixels_digest(rgb)
        return callback

    def target_at(self, stamp_ns: int, joint: str) -> float | None:
        for msg in reversed(self.snapshot(self.targets)):
            if contract.header_stamp_ns(msg) == stamp_ns:
                return msg.position[list(msg.name).index(joint)]
        return None

    def joints_at(self, stamp_ns: int) -> dict[str, float] | None:
        for msg in reversed(self.snapshot(self.joint_states)):
            if contract.header_stamp_ns(msg) == stamp_ns:
                return dict(zip(msg.name, msg.position))
        return None


class Agent:
    """An MCP client session with a few conveniences; every call goes through the SDK."""

    def __init__(self, session):
        self.session = session

    async def tool_names(self) -> set[str]:
        return {t.name for t in (await self.session.list_tools()).tools}

    async def call(self, name: str, **arguments):
        """(is_error, data: the JSON of the first text block, or its text when not JSON,
        images: decoded RGB arrays, seconds the call took)."""
        started = time.monotonic()
        result = await self.session.call_tool(name, arguments)
        took = time.monotonic() - started
        text = result.content[0].text if result.content and result.content[0].type == "text" else ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = text
        images = []
        for block in result.content[1:]:
            assert block.type == "image" and block.mime_type in ("image/png", "image/jpeg"), block
            payload = np.frombuffer(base64.b64decode(block.data), np.uint8)
            images.append(cv2.imdecode(payload, cv2.IMREAD_COLOR)[..., ::-1])
        self.mime_types = [b.mime_type for b in result.content[1:]]
        return bool(result.is_error), data, images, took

    async def ok(self, name: str, **arguments):
        is_error, data, images, _took = await self.call(name, **arguments)
        assert not is_error, f"{name}({arguments}) failed: {data}"
        return data, images


@contextlib.asynccontextmanager
async def stdio_agent(namespace: str, *args: str, errlog=None):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "robogym_ros.nodes.mcp", "--namespace", namespace, *args],
                                   env=server_env(), cwd=str(REPO))
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield Agent(session)


@contextlib.asynccontextmanager
async def http_agent(url: str, token: str | None = None):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield Agent(session)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProgramUnderTest:
    """``python -m <args>``: a program of this package under test, its output in a log, until stop()."""

    def __init__(self, args: list[str], ready: str | None = None, env: dict | None = None):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="robogym_", suffix=".log", delete=False)
        self.proc = subprocess.Popen([sys.executable, "-m", *args], stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env or server_env(), cwd=str(REPO))
        if ready:
            try:
                wait_for(lambda: ready in self.output() or self.proc.poll() is not None, 60, ready)
                assert self.proc.poll() is None, self.output()
            except BaseException:
                self.stop()  # never leave it running
                raise

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def stop(self) -> int:
        if self.log.closed:
            return self.proc.returncode
        stop_process(self.proc)
        self.text = self.output()
        self.log.close()
        os.unlink(self.log.name)
        return self.proc.returncode


class HttpServer(ProgramUnderTest):
    """``python -m robogym_ros.nodes.mcp --transport http`` on a free port, until stop()."""

    def __init__(self, namespace: str, *args: str, token: str | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        super().__init__(["robogym_ros.nodes.mcp", "--transport", "http", "--port", str(self.port),
                          "--namespace", namespace, *args], ready="serving MCP",
                         env=server_env(**({"ROBOGYM_MCP_TOKEN": token} if token else {})))


def run_async(coroutine_fn, *args, timeout_s: float = 240.0):
    """Run an async scenario to its end on a fresh event loop (in a thread, so that a test's
    own threads stay free), failing the test if it hangs past ``timeout_s``."""
    import asyncio
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = asyncio.run(coroutine_fn(*args))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"the scenario did not end within {timeout_s} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
