"""The sim node's life: start-up errors, parameters (typed, ranged, live), the death of its
physics process, and clean stops on every signal. Real processes, real DDS."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from simharness import SimProcessUnderTest, new_namespace, start_sim

from robogym_ros.params import SIM_PARAMS

STOP_WITHIN_S = 2.0  # issue 7: every node stops within 2 s, physics child and cameras included
CONSOLE_SIM = Path(sys.executable).with_name("robogym_sim")


def physics_child(node_pid: int) -> int | None:
    """The node's physics process (python -m robogym_ros.sim), or None."""
    out = subprocess.run(["pgrep", "-P", str(node_pid), "-f", "robogym_ros.sim"],
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_no_traceback(text: str) -> None:
    for marker in ("Traceback", "AttributeError", "Exception ignored", "RuntimeError: Unable"):
        assert marker not in text, text


# --- start-up errors: one line, exit 1 --------------------------------------------------------

NOT_MJCF = "this is not an MJCF file\n"
NO_SERVOS = """<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1"/></body>
</worldbody><actuator><motor joint="j"/></actuator></mujoco>"""


@pytest.mark.parametrize("params, expected", [
    ({"decimation": 0}, "decimation = 0 is outside its range 1 .. 1000"),
    ({"seed": -1}, "seed = -1 is outside its range 0 .. 2147483647"),
    ({"diagnostics_period_s": 0.0}, "diagnostics_period_s = 0.0 is outside its range 0.05 .. 3600"),
    ({"camera_period_s": -1.0}, "camera_period_s = -1.0 is outside its range 0 .. 3600"),
    ({"physics_dt_s": 1e-10}, "physics_dt_s = 1e-10 is outside its range 1e-05 .. 1"),
    ({"model": "/nonexistent/nope.xml"}, "Error opening file '/nonexistent/nope.xml'"),
    ({"model": "NOT_MJCF"}, "XML parse error"),
    ({"model": "NO_SERVOS"}, "the model has no position actuators"),
    ({"cameras": ["no_such_camera"]}, "no camera named 'no_such_camera' in the model"),
], ids=lambda v: str(v)[:40])
@pytest.mark.long
def test_a_start_up_error_is_one_fatal_line_and_exit_1(tmp_path, params, expected):
    files = {"NOT_MJCF": NOT_MJCF, "NO_SERVOS": NO_SERVOS}
    if params.get("model") in files:
        path = tmp_path / f"{params['model']}.xml"
        path.write_text(files[params["model"]])
        params = {**params, "model": str(path)}
    namespace = new_namespace("bad")
    sim = SimProcessUnderTest(namespace, tmp_path, **params)
    code = sim.proc.wait(60)
    out = sim.output()
    sim.stop()
    assert code == 1, out  # Jazzy once aborted here (134: a thread of the half-built node left in a wait)
    fatal = [line for line in out.splitlines() if "FATAL" in line]
    assert len(fatal) == 1 and expected in fatal[0], out
    assert f"[{namespace}.robogym_sim]:" in fatal[0], out  # the node's own logger, as its other lines
    assert "terminate called" not in out, out
    assert_no_traceback(out)
    assert "published" not in out  # no teardown chatter from a node that never ran


def test_a_second_sim_in_a_namespace_refuses_to_start_unless_allowed(tmp_path, ros):
    """Two sims in one namespace would publish every stream twice: the second exits 1 with one
    FATAL line naming the first (its node and instance, from its latched spec); the first runs on.
    allow_second_instance:=true starts it anyway."""
    namespace = new_namespace("twice")
    for name in ("first", "second", "third"):  # a log of its own each: named by the namespace
        (tmp_path / name).mkdir()
    first, obs = start_sim(namespace, tmp_path / "first", camera_period_s=0.0)
    # named now: a second sim whose start-up wait ends before discovery (busy cores) publishes its
    # own spec before the elder's arrives and it exits, and the observer then holds that one
    elder = f"{obs.spec['node']} (instance {obs.spec['instance']})"
    second = third = None
    try:
        second = SimProcessUnderTest(namespace, tmp_path / "second", camera_period_s=0.0)
        code = second.proc.wait(60)
        out = second.output()
        assert code == 1, out
        fatal = [line for line in out.splitlines() if "FATAL" in line]
        assert len(fatal) == 1, out
        assert f"another sim already runs in namespace '/{namespace}'" in fatal[0], out
        assert elder in fatal[0], out
        assert "allow_second_instance:=true" in fatal[0], out
        assert_no_traceback(out)
        assert first.proc.poll() is None, first.output()
        third = SimProcessUnderTest(namespace, tmp_path / "third", camera_period_s=0.0, allow_second_instance=True)
        wait_for_line(Path(third.log.name), "joints, physics dt")
        assert third.proc.poll() is None and "FATAL" not in third.output()
    finally:
        for sim in (second, third):
            if sim is not None:
                sim.stop()
        obs.close()
        first.stop()


def test_integers_are_accepted_for_double_parameters(make_sim):
    """`-p real_time_factor:=0` arrives as an INTEGER; docs/sim_node.md's own 'as fast as possible'."""
    sim, obs = make_sim(real_time_factor=0, physics_dt_s=1, camera_period_s=0)
    assert obs.spec["real_time_factor"] == 0.0 and obs.spec["physics_dt_s"] == 1.0
    assert_no_traceback(sim.output())


# --- parameters: live, refused with the range, the params file -------------------------------

def set_parameter(node, target: str, name: str, value) -> tuple[bool, str]:
    client = node.create_client(SetParameters, f"{target}/set_parameters")
    try:
        assert client.wait_for_service(timeout_sec=10.0)
        pv = ParameterValue()
        if isinstance(value, float):
            pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, value
        else:
            pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, value
        future = client.call_async(SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)]))
        deadline = time.monotonic() + 10
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        result = future.result().results[0]
        return result.successful, result.reason
    finally:
        node.destroy_client(client)


def test_ros2_param_set_real_time_factor_takes_effect(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, diagnostics_period_s=0.5)
    target = f"/{obs.namespace}/robogym_sim"
    obs.wait_for(lambda: obs.diag_values().get("real_time_factor_achieved", "nan") != "nan", 10, "rtf")
    ok, reason = set_parameter(obs.node, target, "real_time_factor", 2.0)
    assert ok, reason
    obs.wait_for(lambda: obs.spec["real_time_factor"] == 2.0, 5, "the spec republished with 2.0")
    time.sleep(1.6)  # two diagnostics periods at the new pace
    values = obs.diag_values()
    assert values["real_time_factor_target"] == "2.0"
    assert 1.6 < float(values["real_time_factor_achieved"]) < 2.4, values
    # An integer is accepted for the double, as on the command line.
    ok, reason = set_parameter(obs.node, target, "real_time_factor", 1)
    assert ok, reason
    obs.wait_for(lambda: obs.spec["real_time_factor"] == 1.0, 5, "the spec republished with 1.0")


def test_ros2_param_set_refuses_with_the_range_and_changes_nothing(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, start_paused=True)
    target = f"/{obs.namespace}/robogym_sim"
    ok, reason = set_parameter(obs.node, target, "decimation", 0)
    assert not ok and "Min: 1, Max: 1000" in reason, reason
    ok, reason = set_parameter(obs.node, target, "decimation", 10)
    assert not ok and "decimation is fixed while the sim runs: restart it" in reason, reason
    ok, reason = set_parameter(obs.node, target, "diagnostics_period_s", 0.0)
    assert not ok and "out of range" in reason, reason
    ok, reason = set_parameter(obs.node, target, "camera_period_s", 0.1)
    assert not ok and "cameras were off at start-up" in reason, reason
    assert obs.spec["decimation"] == 5 and obs.spec["control_dt_ns"] == 10_000_000


def test_an_edited_params_file_takes_effect(tmp_path, ros):
    """What sim.launch.py does with params_file: the YAML, edited, is what the node runs with."""
    text = (Path(__file__).parents[3] / "config" / "sim.yaml").read_text()
    edited = text.replace("decimation: 5 ", "decimation: 4 ").replace("seed: 0 ", "seed: 7 ")
    assert edited != text
    params_file = tmp_path / "sim.yaml"
    params_file.write_text(edited)
    from simharness import Observer
    ns = new_namespace("yaml")
    proc = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args",
                             "-r", f"__ns:=/{ns}", "--params-file", str(params_file),
                             "-p", "camera_period_s:=0.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    obs = Observer(ns)
    try:
        obs.wait_for(lambda: obs.spec is not None, 30, "spec")
        assert obs.spec["decimation"] == 4 and obs.spec["control_dt_ns"] == 8_000_000
    finally:
        obs.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(15) == 0, proc.communicate()[0]


def test_config_yaml_is_generated_from_the_parameter_table():
    from robogym_ros.params import sim_yaml
    assert (Path(__file__).parents[3] / "config" / "sim.yaml").read_text() == sim_yaml(), \
        "config/sim.yaml is stale: python -m robogym_ros.params > config/sim.yaml"
    assert {p.name for p in SIM_PARAMS} >= {"real_time_factor", "camera_period_s", "max_lag_s",
                                            "diagnostics_period_s"}
    assert all(p.live for p in SIM_PARAMS if p.name in ("real_time_factor", "camera_period_s",
                                                          "max_lag_s", "diagnostics_period_s"))


# --- the physics process dies: the node says how, and exits non-zero ---------------------------

def test_the_node_exits_when_its_physics_process_is_killed(tmp_path, ros):
    sim, obs = start_sim(new_namespace("death"), tmp_path, camera_period_s=0.0)
    try:
        obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) > 5, 10, "ticks")
        child = physics_child(sim.proc.pid)
        assert child is not None
        os.kill(child, signal.SIGKILL)
        assert sim.proc.wait(STOP_WITHIN_S + 1.0) == 3
    finally:
        obs.close()
        sim.stop()
    out = sim.output()
    assert "physics process died (killed by SIGKILL): the sim cannot go on" in out, out
    assert_no_traceback(out)


def thread_policies(pid: int) -> dict[int, int]:
    """Scheduling policy (0 other, 1 FIFO, 3 batch, 5 idle) of each thread of a process."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = int(Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[38])
        except (OSError, IndexError):
            pass  # a thread that ended meanwhile
    return out


def test_a_sim_started_from_a_real_time_thread_runs_its_node_at_the_ordinary_policy(tmp_path, ros):
    """Started from a SCHED_FIFO thread (a library had made its caller real time), the node would
    inherit FIFO, and its threads, at one FIFO priority, never take turns: the camera threads kept
    the tick pump off both cores and physics waited (rtf 0.14). The node takes the ordinary policy
    for all its threads; physics keeps its own real-time policy."""
    before = (os.sched_getscheduler(0), os.sched_getparam(0))
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
    except PermissionError:
        pytest.skip("SCHED_FIFO needs privileges here (CAP_SYS_NICE)")
    try:
        sim = SimProcessUnderTest(new_namespace("fifo"), tmp_path)
    finally:
        os.sched_setscheduler(0, *before)
    from simharness import Observer
    obs = Observer(sim.namespace)
    try:
        obs.wait_for(lambda: len(obs.snapshot(obs.joint_states)) > 5, 30, "ticks")
        node = thread_policies(sim.proc.pid)
        assert node and all(p in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE) for p in node.values()), node
        physics = thread_policies(physics_child(sim.proc.pid))
        assert os.SCHED_FIFO in physics.values(), physics
    finally:
        obs.close()
        assert sim.stop() == 0
    assert "started with a real-time scheduling policy" in sim.output()


# --- clean stops ---------------------------------------------------------------------------------

def start_console_sim(tmp_path, *params: str, session: bool = False) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"sim_{time.monotonic_ns()}.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([str(CONSOLE_SIM), "--ros-args", "-r", f"__ns:=/{new_namespace('stop')}",
                                 *params], stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=session)
    return proc, log


def wait_for_line(log: Path, text: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def stop_and_time(proc: subprocess.Popen, signals, group: bool = False) -> float:
    t0 = time.monotonic()
    for sig in signals:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        time.sleep(0.05)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()  # never leave a sim behind to talk to the next test
        proc.wait()
        raise
    return time.monotonic() - t0


@pytest.mark.skipif(not CONSOLE_SIM.exists(), reason="the robogym_sim console script is not installed")
@pytest.mark.parametrize("scenario", [
    "sigint", "two_sigints", "sigterm", "sigint_to_the_group", "sigint_at_rtf0_with_cameras",
    "sigint_while_importing", "sigint_while_starting"])
@pytest.mark.long
def test_every_signal_stops_the_sim_cleanly(tmp_path, scenario):
    params = ["-p", "camera_period_s:=0.0"]
    if scenario == "sigint_at_rtf0_with_cameras":
        params = ["-p", "real_time_factor:=0.0"]
    proc, log = start_console_sim(tmp_path, *params, session=scenario == "sigint_to_the_group")
    if scenario == "sigint_while_importing":
        time.sleep(0.3)  # the entry point is importing rclpy and mujoco
    elif scenario == "sigint_while_starting":
        wait_for_line(log, "")  # nothing to wait for: the node is being built
        time.sleep(1.0)
    else:
        wait_for_line(log, "control dt")
        time.sleep(1.0)
    child = physics_child(proc.pid)
    signals = {"two_sigints": [signal.SIGINT, signal.SIGINT], "sigterm": [signal.SIGTERM]}.get(
        scenario, [signal.SIGINT])
    took_s = stop_and_time(proc, signals, group=scenario == "sigint_to_the_group")
    out = log.read_text()
    assert proc.returncode == 0, out
    assert took_s <= STOP_WITHIN_S, f"took {took_s:.2f} s to stop:\n{out}"
    assert_no_traceback(out)
    if child is not None:
        time.sleep(0.2)
        assert not alive(child), "the physics process outlived the node"


def test_a_rejected_command_reason_is_bounded(make_sim):
    sim, obs = make_sim(camera_period_s=0.0, start_paused=True, diagnostics_period_s=0.2)
    huge = "x" * 5_000_000
    obs.send([huge], [0.0])
    obs.wait_for(lambda: obs.diag_values().get("commands_rejected") == "1", 20, "the rejection")
    reason = obs.diag_values()["last_rejection"]
    assert reason.startswith("unknown joint 'xxxx") and "(5000000 characters)" in reason
    assert len(reason) <= 400
    assert max(len(line) for line in sim.output().splitlines()) < 1000


CONSOLE_MOTION = Path(sys.executable).with_name("robogym_motion")


@pytest.mark.skipif(not CONSOLE_MOTION.exists(), reason="the robogym_motion console script is not installed")
@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGINT, signal.SIGINT], [signal.SIGTERM]],
                         ids=["sigint", "two_sigints", "sigterm"])
def test_the_motion_node_stops_cleanly(tmp_path, signals):
    log = tmp_path / "motion.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([str(CONSOLE_MOTION), "--ros-args", "-r", f"__ns:=/{new_namespace('mot')}"],
                                stdout=f, stderr=subprocess.STDOUT)
    time.sleep(2.0)  # imported and spinning (it waits for /clock)
    took_s = stop_and_time(proc, signals)
    out = log.read_text()
    assert proc.returncode == 0, out
    assert took_s <= STOP_WITHIN_S, f"took {took_s:.2f} s to stop:\n{out}"
    assert re.search(r"sent \d+ commands", out)  # its own teardown ran, with the context still valid
    assert_no_traceback(out)


STUCK_NODE = """
import sys, time
from robogym_ros.ros import node_runner
node_runner.RELEASE_S = 1.0

class Stuck(node_runner.StoppableNode):
    def __init__(self):
        super().__init__("stuck_node")
        self.timer = self.create_timer(0.01, self.spinning)  # runs once the node spins, not while built

    def spinning(self):
        self.timer.cancel()
        print("spinning", flush=True)

    def finish(self, signal_name):
        print(f"finished ({signal_name})", flush=True)
        return 3

    def destroy_node(self):
        time.sleep(3600)  # what a release that hangs in rclpy looks like from here

sys.exit(node_runner.run_node(Stuck))
"""


def test_a_release_that_hangs_still_ends_the_node_with_its_code_and_one_line(tmp_path):
    """Once the node's work is done (finish), releasing rclpy's handles is bounded (RELEASE_S):
    a hang there still ends the process on Ctrl-C, with the run's exit code and a line saying so."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK_NODE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    assert proc.stdout.readline() == "spinning\n"
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 3, out
    assert "finished (SIGINT)" in out
    assert "[stuck_node] releasing rclpy's handles took over 1 s: exiting without them (exit 3)" in out, out
