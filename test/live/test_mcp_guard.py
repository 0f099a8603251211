"""Who may drive the sim over HTTP (robogym_ros.live.guard): localhost, or a holder of the token.
The bind policy, the header check, the ASGI guard in front of the MCP app, and the command
lines that refuse to serve beyond localhost without a token (before anything is bound) or to
start on a namespace ROS refuses (one line each, exit 2)."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys

import pytest

from robogym_ros.live.guard import BearerGuard, bearer_matches, check_bind, is_local

TOKEN = "a-token-of-24-characters"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2", "[::1]"])
def test_localhost_needs_no_token(host):
    assert is_local(host)
    check_bind(host, None, token_env="T")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "robot-pc.local"])
def test_beyond_localhost_without_a_token_is_refused_with_what_to_do(host):
    assert not is_local(host)
    with pytest.raises(ValueError, match=rf"refusing to serve on '{host}' without a token: .* Set MY_TOKEN"):
        check_bind(host, None, token_env="MY_TOKEN")
    check_bind(host, TOKEN, token_env="MY_TOKEN")


def test_a_short_token_is_refused():
    with pytest.raises(ValueError, match="the token has 5 characters; use at least 16"):
        check_bind("0.0.0.0", "12345", token_env="T")


@pytest.mark.parametrize("token", [" " * 20, "\t" * 16, "   "])
def test_a_blank_token_is_refused_naming_the_argument(token):
    for host in ("0.0.0.0", "127.0.0.1"):
        with pytest.raises(ValueError, match=r"--token \(or T\) is blank"):
            check_bind(host, token, token_env="T")


@pytest.mark.parametrize("module", ["robogym_ros.nodes.mcp", "robogym_ros.nodes.viewer"])
def test_the_programs_refuse_a_token_of_spaces_at_start_up(module):
    port = free_port()
    args = [sys.executable, "-m", module, "--host", "0.0.0.0", "--port", str(port), "--token", " " * 20]
    if module.endswith("mcp"):
        args += ["--transport", "http"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 2, run.stderr
    assert "--token" in run.stderr and "is blank" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) <= 2, run.stderr
    with socket.socket() as s:  # nothing was ever bound
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_the_bearer_header_must_carry_exactly_the_token():
    assert bearer_matches(f"Bearer {TOKEN}", TOKEN) and bearer_matches(f"bearer  {TOKEN} ", TOKEN)
    for header in (None, "", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer"):
        assert not bearer_matches(header, TOKEN), header


def test_the_asgi_guard_answers_401_and_never_calls_the_app_without_the_token():
    reached = []

    async def app(scope, receive, send):
        reached.append(scope["type"])
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

    guard = BearerGuard(app, TOKEN)

    async def request(headers):
        sent = []

        async def send(message):
            sent.append(message)
        await guard({"type": "http", "headers": headers}, None, send)
        return sent[0]["status"], dict(sent[0].get("headers", []))

    status, headers = asyncio.run(request([]))
    assert status == 401 and headers[b"www-authenticate"].startswith(b"Bearer")
    assert asyncio.run(request([(b"authorization", b"Bearer wrong-token-wrong-token")]))[0] == 401
    assert reached == []
    assert asyncio.run(request([(b"authorization", f"Bearer {TOKEN}".encode())]))[0] == 200
    asyncio.run(guard({"type": "lifespan"}, None, None))  # the app's start-up passes (no request)
    assert reached == ["http", "lifespan"] and guard.refused == 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("module, env", [("robogym_ros.nodes.mcp", "ROBOGYM_MCP_TOKEN"),
                                         ("robogym_ros.nodes.viewer", "ROBOGYM_VIEWER_TOKEN")])
def test_the_programs_refuse_to_serve_beyond_localhost_without_a_token(module, env):
    port = free_port()
    args = [sys.executable, "-m", module, "--host", "0.0.0.0", "--port", str(port)]
    if module.endswith("mcp"):
        args += ["--transport", "http"]
    environ = {k: v for k, v in os.environ.items() if k != env}
    run = subprocess.run(args, capture_output=True, text=True, timeout=60, env=environ)
    assert run.returncode == 2, run.stderr
    assert "refusing to serve on '0.0.0.0' without a token" in run.stderr and env in run.stderr
    assert len(run.stderr.strip().splitlines()) <= 2, run.stderr  # a line, not a traceback
    with socket.socket() as s:  # nothing was ever bound
        assert s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("module", ["robogym_ros.nodes.mcp", "robogym_ros.nodes.viewer"])
def test_a_bad_namespace_is_one_line_naming_it(module):
    run = subprocess.run([sys.executable, "-m", module, "--namespace", "lab 1"], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 2, run.stderr
    assert "--namespace 'lab 1' is not a ROS namespace: namespace must not contain characters" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
