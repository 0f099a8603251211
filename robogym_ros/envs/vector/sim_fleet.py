"""K sim nodes in namespaces of their own, as child processes: what ``launch/multi_sim.launch.py``
starts in a ROS install, for machines without ``ros2 launch`` (a pip venv, a benchmark).

    with SimFleet(4, seed=10, start_paused=True, camera_period_s=0.0) as fleet:
        envs = gym.vector.AsyncVectorEnv([fleet.env_fn(i) for i in range(4)], context="spawn")

Sim i gets namespace ``{prefix}{i}`` and seed ``seed + i``. Each process inherits this
process's environment: set ROS_AUTOMATIC_DISCOVERY_RANGE and ROS_DOMAIN_ID first.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from robogym_ros.envs.ros.namespaces import normalize_namespace
from robogym_ros.params import SIM
from robogym_ros.processes import stop_processes


def sim_command(namespace: str, **params: Any) -> list[str]:
    """The command line of one sim node; parameters are checked against robogym_ros.params."""
    args = [sys.executable, "-m", "robogym_ros.nodes.sim_node", "--ros-args", "-r",
            f"__ns:={normalize_namespace(namespace) or '/'}"]
    for name, value in params.items():
        if name not in SIM:
            raise ValueError(f"unknown sim parameter {name!r}; known: {', '.join(SIM)}")
        value = SIM[name].coerce(value)
        if isinstance(value, bool):
            text = str(value).lower()
        elif isinstance(value, tuple):
            text = "[" + ",".join(value) + "]"
        elif isinstance(value, str):
            text = json.dumps(value)
        else:
            text = repr(value)
        args += ["-p", f"{name}:={text}"]
    return args


def make_ros_env(namespace: str, **env_kwargs):
    """An env in a ROS mode (default lockstep) on the sim in ``namespace``; picklable through functools.partial."""
    from robogym_ros.envs.handover import HandoverEnv
    return HandoverEnv(**{"mode": "ros_lockstep", **env_kwargs, "namespace": namespace})


class SimFleet:
    """K sim nodes; ``stop()`` (or leaving the ``with`` block) ends them with SIGINT, then SIGKILL."""

    def __init__(self, count: int, *, prefix: str = "sim", seed: int = 0, log_dir: str | None = None,
                 **params: Any):
        if not (isinstance(count, int) and count >= 1):
            raise ValueError(f"count must be an integer >= 1, got {count!r}")
        normalize_namespace(f"{prefix}0")  # a bad prefix fails before anything starts
        self.namespaces = [f"{prefix}{i}" for i in range(count)]
        self.seeds = [seed + i for i in range(count)]
        commands = [sim_command(ns, seed=s, **params) for ns, s in zip(self.namespaces, self.seeds)]
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="robogym_fleet_")
        self.exit_codes: list[int] | None = None
        self._procs: list[subprocess.Popen] = []
        self._logs = []
        try:
            for ns, cmd in zip(self.namespaces, commands):
                log = open(os.path.join(self.log_dir, f"{ns}.log"), "w")
                self._logs.append(log)
                self._procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
        except BaseException:
            self.stop()
            raise

    def dead(self) -> dict[str, str]:
        """The sims that have exited, each with the end of its log (why it died)."""
        out = {}
        for ns, proc, log in zip(self.namespaces, self._procs, self._logs):
            if proc.poll() is not None:
                if not log.closed:
                    log.flush()
                with open(log.name) as f:
                    out[ns] = f"exit code {proc.returncode}: " + f.read()[-800:]
        return out

    def env_fn(self, i: int, **env_kwargs):
        """A picklable constructor of an env on sim ``i`` (for AsyncVectorEnv)."""
        return functools.partial(make_ros_env, self.namespaces[i], **env_kwargs)

    def stop(self, timeout_s: float = 15.0) -> list[int]:
        """Exit codes (0 = clean); also kept in ``exit_codes``. A second call changes nothing."""
        if self.exit_codes is not None:
            return self.exit_codes
        codes = stop_processes(self._procs, timeout_s)
        for log in self._logs:
            log.close()
        self.exit_codes = codes
        return codes

    def __enter__(self) -> "SimFleet":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
