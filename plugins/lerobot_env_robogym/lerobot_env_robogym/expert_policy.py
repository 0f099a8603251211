"""robogym_ros' scripted expert behind LeRobot's policy interface, for LeRobot's own evaluator.

``lerobot.scripts.lerobot_eval.eval_policy`` runs any ``torch.nn.Module`` with ``reset()`` and
``select_action(batch)``; this one sees what a trained state policy sees (``observation.state``
and ``observation.environment_state``, float32 as LeRobot's ``preprocess_observation`` gives
them) and answers with the expert's targets (rad). Scored by the same code that scores a trained
checkpoint, on the same seeds, it is the reference a trained policy's ``pc_success`` stands beside.
"""
from __future__ import annotations

import numpy as np
import torch
from lerobot.utils.constants import OBS_ENV_STATE, OBS_STATE

from robogym_ros.contract import POSE_SIZE
from robogym_ros.expert.percept import Percept
from robogym_ros.expert.policy import HandoverExpert


class ExpertPolicy(torch.nn.Module):
    """One scripted expert per sub-env of a LeRobot eval batch; ``step_s``: one env step (s)."""

    def __init__(self, n_envs: int = 1, step_s: float = 0.04, model_path: str | None = None):
        super().__init__()
        self.experts = [HandoverExpert(model_path) for _ in range(n_envs)]
        self.step_s = step_s
        self._steps = 0

    def reset(self) -> None:
        for e in self.experts:
            e.reset()
        self._steps = 0

    def select_action(self, batch: dict) -> torch.Tensor:
        q = batch[OBS_STATE].double().cpu().numpy()
        poses = batch[OBS_ENV_STATE].double().cpu().numpy()
        if len(q) != len(self.experts):
            raise ValueError(f"a batch of {len(q)} observations for {len(self.experts)} experts")
        t = self._steps * self.step_s
        targets = [e(Percept(t, q[i], poses[i, :POSE_SIZE], poses[i, POSE_SIZE:2 * POSE_SIZE]))
                   for i, e in enumerate(self.experts)]
        self._steps += 1
        return torch.from_numpy(np.stack(targets).astype(np.float32))
