"""The command line the node programs share: errors in one line with exit code 2, and the
options both servers for agents and people have (robogym_mcp, robogym_viewer): which sim, and
where and how to serve it.

Nothing here imports rclpy at module level, so ``--help`` and a bad argument answer at once."""
from __future__ import annotations

import argparse
import os

from robogym_ros.checks import clip

EXIT_USAGE = 2  # a bad argument: nothing was started


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose error is one line saying what was wrong (clipped), and exit code 2."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {clip(message, 300)}\n")

    def add_server_options(self, *, port: int, host_help: str, port_help: str, token_help: str) -> None:
        """--namespace, --host, --port and --token, as :meth:`parse_server_args` checks them."""
        self.add_argument("--namespace", default=None, help="the sim's namespace (default: the node's, '/')")
        self.add_argument("--host", default="127.0.0.1", help=host_help)
        self.add_argument("--port", type=int, default=port, help=port_help)
        self.add_argument("--token", default=None, help=token_help)

    def parse_server_args(self, argv: list[str] | None, *, token_env: str) -> argparse.Namespace:
        """The arguments, with the token from ``token_env`` where no --token is given (the
        environment keeps it out of the process list), the port in range and the namespace
        absolute; an error names what was wrong."""
        args = self.parse_args(argv)
        if args.token is None:
            args.token = os.environ.get(token_env) or None
        if not 0 <= args.port <= 65535:
            self.error(f"--port must be in 0..65535, got {args.port}")
        try:
            args.namespace = namespace_argument(args.namespace)
        except ValueError as exc:
            self.error(str(exc))
        return args


def namespace_argument(text: str | None) -> str | None:
    """A --namespace argument as an absolute ROS namespace (None: the node's own), or ValueError
    naming what ROS refuses in it."""
    if text is None or not text.strip("/"):
        return None
    from rclpy.exceptions import InvalidNamespaceException
    from rclpy.validate_namespace import validate_namespace
    namespace = "/" + text.strip("/")
    try:
        validate_namespace(namespace)
    except InvalidNamespaceException as exc:
        raise ValueError(f"--namespace {text[:80]!r} is not a ROS namespace: "
                         f"{' '.join(str(exc).split(':')[1].split()) if ':' in str(exc) else exc}") from None
    return namespace
