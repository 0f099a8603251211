"""A bag made by the real recorder (``robogym_recorder --record``) from a real sim, over real DDS,
with what the sim published live beside it (another path than the bag), to judge an export by.

The sim runs at real_time_factor 0 (every frame rendered, one small camera). Each episode starts
paused (the sim's start or a reset), gets one command, runs ~0.7 s of sim time, and ends with the
next reset. ``test_export_recorder_bag.py`` records in-process; ``test_lerobot_export.py`` runs
this file as a script with a Python that has rclpy (LeRobot's venv has none):

    python test/realbag.py OUT_DIR    # writes OUT_DIR/bag and OUT_DIR/live.json
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from robogym_ros import contract
from robogym_ros.checks import frame_due_stamps
from robogym_ros.contract import RunAnswer

ROOT = Path(__file__).parents[2]
# one command per episode (rad, inside each joint's range); the other joints hold the reset pose
COMMANDS = ({"left_shoulder_pan": 0.3, "right_wrist_roll": 0.5},
            {"left_shoulder_pan": -0.3, "right_wrist_roll": -0.5},
            {"left_shoulder_pan": 0.5, "right_wrist_roll": 1.0})
SIM_PARAMS = dict(start_paused=True, seed=2, real_time_factor=0.0, cameras=["overhead"], camera_width_px=64,
                  camera_height_px=48, diagnostics_period_s=0.1)
EPISODE_TICKS = 70


def targets_observer():
    """The harness's observer, plus the targets topic (ROS imported here: LeRobot's venv has none)."""
    from sensor_msgs.msg import JointState
    from simharness import Observer

    from robogym_ros.ros import qos

    class TargetsObserver(Observer):
        def __init__(self, namespace: str):
            super().__init__(namespace)
            self.targets: list[JointState] = []
            self.node.create_subscription(JointState, contract.TRUTH_TARGETS, self._keep(self.targets),
                                          qos.STREAM_QOS)
    return TargetsObserver


def _by_stamp(msgs) -> dict[int, list[float]]:
    return {contract.header_stamp_ns(m): list(m.position) for m in msgs}


def record(obs, out: Path) -> dict:
    """Record ``out/bag`` from the sim ``obs`` observes (started with SIM_PARAMS); returns what the
    sim published live: joint names, control dt, camera period, reset ticks, commands, and per
    stamp the ground truth positions and the targets."""
    bag = out / "bag"
    log = open(out / "recorder.log", "w+")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    rec = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.recorder", "--record", str(bag),
                            "--keep-pixels-mb", "0", "--ros-args", "-r", f"__ns:=/{obs.namespace}"],
                           stdout=log, stderr=subprocess.STDOUT, env=env)
    dt = obs.spec["control_dt_ns"]
    try:
        # The recorder subscribes to the targets and the images once it has the spec; give DDS a
        # moment to match after that, so the sim's first tick is in the bag.
        image_topic = obs.spec["cameras"][0]["image_topic"]
        obs.wait_for(lambda: obs.node.count_subscribers(image_topic) >= 1
                     and obs.node.count_subscribers(f"/{obs.namespace}/{contract.TRUTH_TARGETS}") >= 2,
                     20, "the recorder's subscriptions")
        time.sleep(1.0)
        resets = []  # the stamp of each reset tick, from the service's answer
        for e, command in enumerate(COMMANDS):
            if e:
                reply = obs.call("reset")
                assert reply.success, reply.message
                resets.append(RunAnswer.from_json(reply.message).tick * dt)
            obs.send(list(command), list(command.values()))  # paused: it drives the episode from its next tick
            obs.wait_for(lambda: obs.diag_values().get("commands_accepted") == str(e + 1), 5, "the command accepted")
            n = len(obs.snapshot(obs.truth))
            assert obs.call("resume").success
            obs.wait_for(lambda: len(obs.snapshot(obs.truth)) >= n + EPISODE_TICKS, 20, "0.7 s of sim time")
        assert obs.call("pause").success
        time.sleep(0.5)
        rec.send_signal(signal.SIGINT)
        assert rec.wait(30) == 0, Path(log.name).read_text()
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        log.close()
    return {"names": list(obs.snapshot(obs.truth)[0].name), "control_dt_ns": dt,
            "period_ns": round(obs.spec["cameras"][0]["period_s"] * 1e9), "resets": resets,
            "commands": list(COMMANDS), "truth": _by_stamp(obs.snapshot(obs.truth)),
            "targets": _by_stamp(obs.snapshot(obs.targets))}


def as_arrays(live: dict) -> dict:
    """``record``'s answer (or its JSON) with int stamps and numpy rows (JSON keeps floats exact)."""
    out = dict(live)
    for key in ("truth", "targets"):
        out[key] = {int(s): np.array(v, dtype=np.float64) for s, v in live[key].items()}
    return out


def load_live(path: Path) -> dict:
    return as_arrays(json.loads(Path(path).read_text()))


def check_episodes(episodes, live) -> None:
    """Exported episodes (an export plan's, or a dataset's rows) against what the sim published live
    and the commands sent. Each episode: ``(first_tick_ns, last_tick_ns, frame_stamps_ns, state,
    action)``; ``last_tick_ns`` None where the source does not know it (a dataset)."""
    dt, period, resets, names = live["control_dt_ns"], live["period_ns"], live["resets"], live["names"]
    assert len(episodes) == len(live["commands"])
    for e, ((first_tick, last_tick, stamps, state, action), command) in enumerate(zip(episodes, live["commands"])):
        # cut at the sim's reset ticks: a reset tick is its episode's first (the new scene)
        assert first_tick == (resets[e - 1] if e else contract.FIRST_TICK_INDEX * dt), (e, first_tick)
        if e < len(resets):  # the last episode ends where the recording does
            assert last_tick in (None, resets[e] - dt)
            last_tick = resets[e] - dt
        elif last_tick is None:
            last_tick = max(live["truth"])
        # the frames the camera schedule predicts, less the last tick's (it has no next tick)
        due = frame_due_stamps(first_tick, last_tick, period, dt, first_tick_ns=dt)
        assert np.array_equal(stamps, due[(due < last_tick) & (due % period == 0)]), (e, stamps, due)
        # state and action as the sim published them live (another path than the bag)
        np.testing.assert_array_equal(state, [live["truth"][int(s)] for s in stamps])
        np.testing.assert_array_equal(action, [live["targets"][int(s) + dt] for s in stamps])
        # and as the test commanded: the commanded joints at their command, the others holding the
        # targets of the episode's first tick (after a reset: the reset pose)
        hold = live["targets"][first_tick]
        if e:
            np.testing.assert_array_equal(hold, live["truth"][first_tick])
        want = hold.copy()
        for name, value in command.items():
            want[names.index(name)] = value
        np.testing.assert_array_equal(action, np.tile(want, (len(stamps), 1)))


def main(out: str) -> int:
    import rclpy
    from simharness import new_namespace, start_sim
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rclpy.init()
    sim, obs = start_sim(new_namespace("realbag"), out_dir, targets_observer(), **SIM_PARAMS)
    try:
        live = record(obs, out_dir)
    finally:
        obs.close()
        code = sim.stop()
        rclpy.try_shutdown()
    (out_dir / "live.json").write_text(json.dumps(live))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
