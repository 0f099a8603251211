"""Parameter batches tell the truth: an atomic batch with one refused change changes nothing,
live parameters included; through SetParameters each answer says whether that parameter took
effect; a value of the wrong type gets the project's message; an unknown params-file key is
named. Real sim process, real DDS.

What the physics process really runs at is read from /diagnostics' ``real_time_factor_target``
(the loop's own status), not from the node's parameter store, so an answer that disagrees with
the running sim shows.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

from rcl_interfaces.srv import DescribeParameters, GetParameters, SetParameters, SetParametersAtomically
from rclpy.parameter import Parameter, parameter_value_to_python
from simharness import Observer, new_namespace

from robogym_ros.params import SIM


def call(node, srv_type, name: str, request, timeout_s: float = 10.0):
    client = node.create_client(srv_type, name)
    try:
        assert client.wait_for_service(timeout_sec=timeout_s), f"{name} not available"
        future = client.call_async(request)
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.done(), f"no answer from {name}"
        return future.result()
    finally:
        node.destroy_client(client)


def messages(**values):
    return [Parameter(name, value=value).to_parameter_msg() for name, value in values.items()]


class Sim:
    """The parameter services of one sim, and what its physics loop and spec say."""

    def __init__(self, obs):
        self.obs = obs
        self.target = f"/{obs.namespace}/robogym_sim"

    def set_atomically(self, **values):
        request = SetParametersAtomically.Request(parameters=messages(**values))
        return call(self.obs.node, SetParametersAtomically, f"{self.target}/set_parameters_atomically",
                    request).result

    def set(self, **values):
        request = SetParameters.Request(parameters=messages(**values))
        return call(self.obs.node, SetParameters, f"{self.target}/set_parameters", request).results

    def get(self, *names):
        response = call(self.obs.node, GetParameters, f"{self.target}/get_parameters",
                        GetParameters.Request(names=list(names)))
        return [parameter_value_to_python(v) for v in response.values]

    def running(self) -> dict:
        """Diagnostics published after now: what the physics loop runs with."""
        before = len(self.obs.snapshot(self.obs.diagnostics))
        self.obs.wait_for(lambda: len(self.obs.snapshot(self.obs.diagnostics)) >= before + 2, 10,
                          "fresh diagnostics")
        return self.obs.diag_values()


def test_an_atomic_batch_with_one_refused_change_changes_nothing(make_sim):
    _, obs = make_sim(camera_period_s=0.0, diagnostics_period_s=0.1)
    sim = Sim(obs)
    assert sim.running()["real_time_factor_target"] == "1.0"
    # The case: a live change and a fixed one.
    result = sim.set_atomically(real_time_factor=3.0, decimation=3)
    assert not result.successful and "decimation is fixed while the sim runs" in result.reason, result.reason
    # Refused by the node's own check (cameras off at start-up), the live change listed first.
    result = sim.set_atomically(real_time_factor=3.0, max_lag_s=0.2, camera_period_s=0.2)
    assert not result.successful and "cameras were off at start-up" in result.reason, result.reason
    # Refused by a range, after a live change.
    result = sim.set_atomically(max_lag_s=0.2, diagnostics_period_s=0.0)
    assert not result.successful, result.reason
    running = sim.running()
    assert running["real_time_factor_target"] == "1.0", running  # was 3.0: applied, then refused
    assert sim.get("real_time_factor", "max_lag_s", "diagnostics_period_s") == [1.0, 0.5, 0.1]
    assert obs.spec["real_time_factor"] == 1.0
    # An accepted batch takes effect whole: the physics loop, the store and the spec agree.
    result = sim.set_atomically(real_time_factor=2.0, max_lag_s=0.2)
    assert result.successful, result.reason
    assert sim.running()["real_time_factor_target"] == "2.0"
    assert sim.get("real_time_factor", "max_lag_s") == [2.0, 0.2]
    obs.wait_for(lambda: obs.spec["real_time_factor"] == 2.0, 5, "the spec with 2.0")


def test_set_parameters_answers_each_parameter_truthfully_and_a_wrong_type_gets_our_message(make_sim):
    _, obs = make_sim(camera_period_s=0.0, diagnostics_period_s=0.1)
    sim = Sim(obs)
    # SetParameters (`ros2 param set`, `ros2 param load`) sets each parameter on its own, by
    # ROS's definition: each answer must say what happened to that one, and be true.
    results = sim.set(decimation=3, real_time_factor=2.0, camera_period_s=0.2)
    assert [r.successful for r in results] == [False, True, False], [r.reason for r in results]
    assert sim.running()["real_time_factor_target"] == "2.0"
    assert sim.get("decimation", "real_time_factor", "camera_period_s") == [5, 2.0, 0.0]
    assert obs.spec["decimation"] == 5
    # `ros2 param set ... real_time_factor fast`: a string for a double.
    (result,) = sim.set(real_time_factor="fast")
    assert not result.successful
    assert result.reason.startswith("real_time_factor must be a double in 0 .. 100, got 'fast' (a string)"), \
        result.reason
    assert SIM["real_time_factor"].description in result.reason
    (result,) = sim.set(decimation=2.5)
    assert result.reason.startswith("decimation must be an integer in 1 .. 1000, got 2.5 (a double)"), \
        result.reason
    (result,) = sim.set(max_lag_s=True)
    assert result.reason.startswith("max_lag_s must be a double in 0.001 .. 60 [s], got True (a bool)"), \
        result.reason
    # Nothing changed, and the declared type is still the one `ros2 param describe` shows.
    assert sim.running()["real_time_factor_target"] == "2.0"
    response = call(obs.node, DescribeParameters, f"{sim.target}/describe_parameters",
                    DescribeParameters.Request(names=["real_time_factor", "decimation"]))
    assert [d.type for d in response.descriptors] == [Parameter.Type.DOUBLE.value, Parameter.Type.INTEGER.value]
    # An integer for a double is still accepted, as on the command line.
    (result,) = sim.set(real_time_factor=1)
    assert result.successful, result.reason
    assert sim.running()["real_time_factor_target"] == "1.0"


def test_an_unknown_params_file_key_is_named_with_the_closest_parameter(ros, tmp_path):
    params_file = tmp_path / "sim.yaml"
    params_file.write_text("/**:\n  ros__parameters:\n    frobnicate: 7\n    real_time_facter: 2.0\n"
                           "    camera_period_s: 0.0\n    use_sim_time: false\n")
    ns = new_namespace("unknown")
    log = tmp_path / "sim.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r", f"__ns:=/{ns}",
                                 "--params-file", str(params_file)], stdout=out, stderr=subprocess.STDOUT)
    obs = Observer(ns)
    try:
        obs.wait_for(lambda: obs.spec is not None and "real_time_facter" in log.read_text(), 30, "spec and warning")
    finally:
        obs.close()
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    text = log.read_text()
    assert code == 0, text
    assert "unknown parameter 'frobnicate' (params file or -p) ignored: robogym_sim has no such parameter" in text, \
        text
    assert "unknown parameter 'real_time_facter'" in text and "did you mean 'real_time_factor'?" in text, text
    assert "unknown parameter 'use_sim_time'" not in text, text  # every node's own parameter: not unknown
    assert obs.spec["real_time_factor"] == 1.0, obs.spec  # the typo changed nothing, as before: now it says so


def test_an_undeclared_parameter_is_named_by_set_and_by_an_atomic_batch(make_sim):
    """rclpy's own answer names nothing ("Invalid access to undeclared parameter(s): []")."""
    _, obs = make_sim(camera_period_s=0.0, diagnostics_period_s=0.1)
    sim = Sim(obs)
    (result,) = sim.set(frobnicate=1)  # `ros2 param set /robogym_sim frobnicate 1`
    assert not result.successful
    assert "'frobnicate'" in result.reason and "robogym_sim has no such parameter" in result.reason, result.reason
    result = sim.set_atomically(real_time_factor=2.0, frobnicate=1, real_time_facter=3.0)
    assert not result.successful
    assert "'frobnicate'" in result.reason and "'real_time_facter' (did you mean 'real_time_factor'?)" in \
        result.reason, result.reason
    # Nothing of the batch was set, the declared parameter included.
    assert sim.running()["real_time_factor_target"] == "1.0"
    assert sim.get("real_time_factor") == [1.0]
