"""``robogym_mcp``: the command line.

    robogym_mcp [--namespace NS] [--timeout-s 5] [--ground-truth]                 # stdio (what desktop agents start)
    robogym_mcp --transport http [--host 127.0.0.1] [--port 8765] [--token T]     # streamable HTTP at /mcp
    ros2 run robogym_ros robogym_mcp --namespace lab1   (or --ros-args -r __ns:=/lab1)

Over stdio, stdout is the MCP channel: everything else (ROS logs, this program's lines) goes
to stderr. Over HTTP it binds 127.0.0.1 unless told otherwise, and anywhere else only with a
token (``--token`` or ``ROBOGYM_MCP_TOKEN``), which every request must then carry as
``Authorization: Bearer <token>``. Exit 0 on a stop (end of stdin, SIGINT, SIGTERM), 2 on a
usage error (one line).
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading

from robogym_ros.ros.arguments import EXIT_USAGE, ArgumentParser

SPIN_STOP_S = 10.0  # how long a stop waits for the ROS thread's last spin
TOKEN_ENV = "ROBOGYM_MCP_TOKEN"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 600):
        raise argparse.ArgumentTypeError(f"a number of seconds in (0, 600], got {text[:40]!r}")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="robogym_mcp",
                            description="An MCP server for LLM agents to drive a running robogym sim.")
    parser.add_server_options(
        port=8765, host_help="HTTP: the address to bind (beyond localhost: a token)",
        port_help="HTTP: the port (the endpoint is /mcp)",
        token_help=f"HTTP: the bearer token every request must carry (or {TOKEN_ENV}; the environment "
                   "keeps it out of the process list)")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="stdio (default: the client starts this program) or streamable HTTP")
    parser.add_argument("--timeout-s", type=_seconds, default=5.0,
                        help="the longest any call waits for the sim before it answers with what it waited for")
    parser.add_argument("--ground-truth", action="store_true",
                        help="let observe return the block's and tray's true poses (object_poses=true)")
    return parser.parse_server_args(argv, token_env=TOKEN_ENV)


def _say(line: str) -> None:
    print(f"robogym_mcp: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    from rclpy.utilities import remove_ros_args
    args = parse_args(remove_ros_args(argv)[1:])
    if args.transport == "http":
        from robogym_ros.live.guard import check_bind
        try:
            check_bind(args.host, args.token, token_env=TOKEN_ENV)
        except ValueError as exc:
            _say(f"error: {exc}")
            return EXIT_USAGE

    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        _say(f"error: the MCP SDK is not installed ({exc}): pip install 'mcp>=2,<3' (the agents extra: "
             "pip install -e '.[agents]')")
        return EXIT_USAGE
    import anyio
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from robogym_ros.nodes.mcp.server import build_server
    from robogym_ros.nodes.mcp.tools import SimTools
    from robogym_ros.ros.sim_client import SimClient

    def stop(_signum, _frame):  # SIGTERM ends the server as Ctrl-C does (once): the finally below runs
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the console script only noted it so far
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = spinner = None
    stopping = threading.Event()
    try:
        node = rclpy.create_node(f"robogym_mcp_{os.getpid()}", namespace=args.namespace or "")
        link = SimClient(node, joints=True, objects=args.ground_truth)
        executor = SingleThreadedExecutor()
        executor.add_node(node)

        def spin():
            while not stopping.is_set():
                try:
                    executor.spin_once(timeout_sec=0.1)
                except Exception as exc:  # noqa: BLE001 - one bad callback must not end the server
                    if stopping.is_set():
                        return
                    node.get_logger().error(f"a callback failed, going on: {type(exc).__name__}: {exc}")
        spinner = threading.Thread(target=spin, name="ros_spin", daemon=True)
        spinner.start()
        tools = SimTools(link, args.timeout_s, ground_truth=args.ground_truth)
        server = build_server(tools)
        where = (f"the sim in {link.namespace} (ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', 'unset: 0')}, "
                 f"timeout {args.timeout_s:g} s)")
        if args.transport == "stdio":
            _say(f"serving MCP over stdio for {where}")
            anyio.run(server.run_stdio_async)
        else:
            anyio.run(_serve_http, server, args, where)
    except KeyboardInterrupt:
        pass
    finally:
        stopping.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if spinner is not None:
            spinner.join(SPIN_STOP_S)
            if spinner.is_alive():  # tearing ROS down under a spinning executor aborts the process
                _say(f"the ROS thread did not stop within {SPIN_STOP_S:g} s; exiting without tearing ROS down")
                sys.stderr.flush()
                os._exit(0)
        if executor is not None:
            executor.remove_node(node)
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


async def _serve_http(server, args, where: str) -> None:
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from robogym_ros.live.guard import BearerGuard, allowed_hosts, allowed_origins
    hosts, origins = allowed_hosts(args.host), allowed_origins(args.host)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=hosts is not None,
                                         allowed_hosts=hosts or [], allowed_origins=origins or [])
    app = server.streamable_http_app(host=args.host, transport_security=security)
    if args.token:
        app = BearerGuard(app, args.token)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    # uvicorn takes SIGINT/SIGTERM while it serves (a graceful stop) and raises them again once it
    # has stopped, into this program's handlers: the ROS side is then closed as after Ctrl-C.
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(http.serve)
        while not http.started and not http.should_exit:
            await anyio.sleep(0.05)
        if http.started:
            _say(f"serving MCP over streamable HTTP at http://{args.host}:{args.port}/mcp for {where}"
                 + (" (bearer token required)" if args.token else ""))

