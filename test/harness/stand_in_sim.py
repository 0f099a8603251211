"""A stand-in for the sim node in this process: the sim's topics with real physics ticks and frames,
made to fail on cue (frames withheld, a sim killed mid-run), for the recorder's fault and stop
tests."""
from __future__ import annotations

import os
import signal
import subprocess
import time

from recorder_runs import (
    PUB_QOS,
    FaultyPublisher,
    RecorderRun,
    assert_no_traceback,
    make_spec,
)
from sensor_msgs.msg import Image
from simharness import SimProcessUnderTest
from std_msgs.msg import Header, String

from robogym_ros import contract
from robogym_ros.contract import CameraSpec, RunState
from robogym_ros.nodes.sim_node import tick_messages
from robogym_ros.ros import qos, stamps

CAMERAS = ("left_wrist", "overhead")
PERIOD_NS = 50_000_000  # 5 ticks at 10 ms


class StandInSim(FaultyPublisher):
    """The faulty publisher plus what the real sim also publishes: run state, frames, skip reports."""

    def __init__(self, ns, spec):
        super().__init__(ns, spec)
        n = self.node
        self.pub["state"] = n.create_publisher(String, contract.STATE_TOPIC, qos.STATE_QOS)
        self.pub["skips"] = n.create_publisher(Header, contract.CAMERA_SKIPS_TOPIC, PUB_QOS)
        for cam in spec.cameras:
            self.pub[f"img:{cam.name}"] = n.create_publisher(Image, contract.image_topic(cam.name), PUB_QOS)

    def state(self, paused: bool, stamp_ns: int, reason: str) -> None:
        self.pub["state"].publish(String(data=RunState(paused, stamp_ns, reason).to_json()))

    def frame(self, camera: str, stamp_ns: int) -> None:
        img = Image(height=6, width=8, encoding="rgb8", step=24, data=bytes(144))
        img.header.stamp = stamps.stamp_msg(stamp_ns)
        self.pub[f"img:{camera}"].publish(img)

    def tick(self, t, names, *, frames: bool = True) -> None:
        """What the sim publishes for tick ``t``: joint_states, ground truth and (``frames``) a frame of
        each camera when the tick is on the camera period."""
        self.pub["js"].publish(tick_messages.joint_state(t, names))
        self.pub["gt"].publish(tick_messages.joint_state(t, names))
        if frames and t.stamp_ns % PERIOD_NS == 0:
            for cam in CAMERAS:
                self.frame(cam, t.stamp_ns)

    def skip(self, stamp_ns: int, cameras) -> None:
        h = Header(frame_id=",".join(cameras))
        h.stamp = stamps.stamp_msg(stamp_ns)
        self.pub["skips"].publish(h)

    def wait_matched(self, recorder, timeout_s: float = 30.0, keys=None) -> None:
        """Until the recorder subscribes to ``keys`` (default: joint_states, truth and, with cameras,
        every camera's images and the skip reports: a frame or skip published before its subscription
        matched is lost on the way, and a test of the frames would judge that instead; CI saw it once,
        a contact sheet of 2 frames instead of 6)."""
        if keys is None:
            images = tuple(k for k in self.pub if k.startswith("img:"))
            keys = ("js", "gt", *images, *(("skips",) if images else ()))
        deadline = time.monotonic() + timeout_s
        while any(self.pub[k].get_subscription_count() < 1 for k in keys):
            if recorder.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the recorder never subscribed:\n{recorder.output()}")
            time.sleep(0.01)
        time.sleep(0.3)


def camera_spec(ns, physics, period_ns=PERIOD_NS, instance="standin-1", frames="skip_when_busy"):
    from dataclasses import replace
    cams = tuple(CameraSpec(c, f"/{ns}/{contract.image_topic(c)}", f"/{ns}/{contract.info_topic(c)}", width=8,
                            height=6, period_s=period_ns * 1e-9) for c in CAMERAS)
    return replace(make_spec(ns, physics), cameras=cams, instance=instance, camera_frames=frames,
                   real_time_factor=1.0)


def run_stand_in(tmp_path, spec, ns, script, *args, timeout_s=60.0, keys=None):
    sim = StandInSim(ns, spec)
    run = RecorderRun(tmp_path, *args, ns=ns)
    try:
        sim.wait_matched(run, keys=keys)
        script(sim)
        rc, out, verdict = run.wait(timeout_s)
    finally:
        run.stop()
        sim.close()
    assert_no_traceback(out)
    return rc, out, verdict


def wait_for_log(run, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in run.output():
        if run.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} from the recorder:\n{run.output()}")
        time.sleep(0.05)


def record_and_kill_the_sim(tmp_path, ns: str, *recorder_args: str, wait_s: float):
    """A real sim (cameras off) and a recorder of it; the sim SIGKILLed 1.5 s after the recorder
    has its spec. The recorder's (exit code, output, verdict)."""
    sim = SimProcessUnderTest(ns, tmp_path, camera_period_s=0.0)
    run = RecorderRun(tmp_path, *recorder_args, "--spec-timeout", "30", ns=ns)
    try:
        wait_for_log(run, "spec from", 30)
        time.sleep(1.5)
        kill_tree(sim.proc.pid)
        return run.wait(wait_s)
    finally:
        run.stop()
        sim.stop()


def kill_tree(pid: int) -> None:
    """SIGKILL a process and its children (the sim node and its physics process)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    for p in [pid, *map(int, children)]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
