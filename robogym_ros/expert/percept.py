"""What the expert sees, and how it says it gave up."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Percept:
    """What the expert sees at one tick: exactly what the env observes (no privileged state)."""
    time_s: float  # sim time since the episode began
    q: np.ndarray  # 12 joint positions (rad), scene.JOINT_NAMES order
    block_pose: np.ndarray  # x y z qw qx qy qz (world, m)
    tray_pose: np.ndarray


@dataclass(frozen=True)
class ExpertFailure:
    """Where the expert gave up and why."""
    phase: str
    reason: str
