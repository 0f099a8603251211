"""ROS 2 node ``robogym_viewer``: serves a page with the sim's three cameras live and its run
state, with buttons that call the sim's own services.

    robogym_viewer [--namespace NS] [--host 127.0.0.1] [--port 8080] [--token T] [--jpeg-quality 80]
    ros2 run robogym_ros robogym_viewer --namespace lab1      then open http://127.0.0.1:8080/

Why MJPEG (JPEG frames as multipart/x-mixed-replace) and not H.264: every JPEG frame is a
keyframe, so a viewer that falls behind simply gets the newest frame (no decoder state to keep,
no wait for the next keyframe), any browser decodes it natively (no WebCodecs, no codec
licence question in a distribution's Chromium), and at these sizes (three 320x240 cameras at
10 Hz: ~40 KB a frame) the bandwidth is no issue on localhost. Each frame is encoded once,
whatever the number of viewers (robogym_ros.live.hub).

Nothing here may slow the physics: the physics runs in its own process (SCHED_FIFO or nice
-10); this node lowers its own priority (nice +10), takes images RELIABLE from the
sim's short keep-last history, takes no per-tick topic at all (sim time
comes with each frame and with the sim's ~1 Hz diagnostics), and encodes on a thread that only
ever takes the newest frame set. bench/bench_viewer.py measures the pacing with it open.
A paused sim publishes no frames, so nothing is encoded or sent until something changes.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import asdict

from robogym_ros import contract
from robogym_ros.contract import RunAnswer
from robogym_ros.live.guard import check_bind
from robogym_ros.live.hub import FrameHub
from robogym_ros.live.images import jpeg, side_by_side
from robogym_ros.live.latest import Latest
from robogym_ros.live.viewer_page import page
from robogym_ros.live.viewer_server import ViewerServer
from robogym_ros.ros.arguments import ArgumentParser
from robogym_ros.ros.node_runner import StoppableNode, run_node
from robogym_ros.ros.sim_client import SimClient, SimRefused, SimUnavailable

TOKEN_ENV = "ROBOGYM_VIEWER_TOKEN"
CONTROL_TIMEOUT_S = 5.0  # a button's call to the sim's service answers within this
NICE = 10


def _float_or_none(text: str | None):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None



def _said(answer: RunAnswer) -> str:
    """The sim's typed answer as the page's one line."""
    if answer.action == "reset":
        return f"paused, tick {answer.tick}: scene {answer.scene} of seed {answer.seed}"
    if answer.action == "step":
        return f"paused at tick {answer.tick} ({answer.t_s:.3f} s)"
    return "paused" if answer.paused else "running"

class ViewerNode(StoppableNode):
    """The sim's cameras and run state, served on ``host:port``."""

    def __init__(self, host: str, port: int, token: str | None, jpeg_quality: int, namespace: str | None, **kwargs):
        self.server = self.hub = None
        super().__init__(f"robogym_viewer_{os.getpid()}", namespace=namespace or "", **kwargs)
        self.hub = FrameHub(lambda frame_set: jpeg(side_by_side(frame_set), jpeg_quality), on_error=self._on_error)
        self.state: Latest[dict] = Latest()
        self.link = SimClient(self, joints=False, on_frame_set=self.hub.offer, on_change=self._publish_state)
        self.server = ViewerServer(host, port, hub=self.hub, state=self.state, page=page(self.link.namespace),
                                   control=self._control, token=token).start()
        self.create_timer(1.0, self._publish_state)  # a sim that went away without a word
        self._publish_state()
        shown = f"[{self.server.host}]" if ":" in self.server.host else self.server.host
        self.get_logger().info(f"viewer of the sim in {self.link.namespace} at http://{shown}:{self.server.port}/"
                               + ("?token=<token>" if token else ""))

    def _on_error(self, error: str) -> None:
        self.get_logger().error(f"a frame could not be encoded: {error}")

    def _publish_state(self) -> None:
        link = self.link
        run, diag, spec = link.run_state, link.diagnostics or {}, link.spec
        sim_time = _float_or_none(diag.get("sim_time_s"))
        self.state.publish({
            "namespace": link.namespace,
            "sim_present": link.sim_present(),
            "paused": None if run is None else run.paused,
            "reason": None if run is None else run.reason,
            "sim_time_s": sim_time if sim_time is not None or run is None else run.stamp_ns / contract.NS_PER_S,
            "real_time_factor": _float_or_none(diag.get("real_time_factor_achieved")),
            "late_steps": None if "late_steps" not in diag else int(float(diag["late_steps"])),
            "cameras": [] if spec is None else [c.name for c in spec.cameras],
            "control_dt_ns": None if spec is None else spec.control_dt_ns,
        }, only_if_changed=True)

    def _control(self, name: str) -> dict:
        try:
            answer = self.link.trigger(name, CONTROL_TIMEOUT_S)
        except (SimUnavailable, SimRefused) as exc:
            return {"ok": False, "message": str(exc)}
        return {"ok": True, "message": _said(answer), "answer": asdict(answer)}

    def destroy_node(self):
        if self.server is not None:
            self.server.close()
        if self.hub is not None:
            self.hub.close()
        return super().destroy_node()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="robogym_viewer", description="A live web view of a running robogym sim.")
    parser.add_server_options(port=8080, host_help="the address to serve on (beyond localhost: a token)",
                              port_help="the port (0: any free one, logged)",
                              token_help=f"a token every request must carry (or {TOKEN_ENV})")
    parser.add_argument("--jpeg-quality", type=int, default=80, help="JPEG quality of the frames, 1..100")
    args = parser.parse_server_args(argv, token_env=TOKEN_ENV)
    if not 1 <= args.jpeg_quality <= 100:
        parser.error(f"--jpeg-quality must be in 1..100, got {args.jpeg_quality}")
    try:
        check_bind(args.host, args.token, token_env=TOKEN_ENV)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    from rclpy.utilities import remove_ros_args
    argv = list(sys.argv if argv is None else argv)
    args = parse_args(remove_ros_args(argv)[1:])
    try:
        os.nice(NICE)  # below the physics and every other node: watching must never cost the sim
    except OSError:
        pass
    return run_node(lambda: ViewerNode(args.host, args.port, args.token, args.jpeg_quality, args.namespace),
                    argv, errors=(ValueError, OSError))

