"""The scripted motion: smooth, within the joint limits, clear of the table.

Each joint follows ``centre + amplitude * sin(2 pi t / period + phase)`` around a raised
"ready" pose, with incommensurate periods so the arms sweep a varied path that never
repeats exactly within a recording. The right arm runs half a period behind the left.
Over the first ``RAMP_S`` seconds the motion blends in from the folded pose with a
smoothstep, so the first targets equal the pose the reset left the arms in (no jump).
Angles in rad, periods in s, t in sim seconds since the motion started. Checked offline
(test_motion.py): targets inside every joint's range, no arm-table contact in 60 s; the arms
may brush the block or tray, which is real motion too.
"""
from __future__ import annotations

import math

from robogym_ros.task.scene import ARM_JOINTS, SIDES, folded_pose

RAMP_S = 2.0
#            centre  amplitude  period_s
MOTION = {
    "shoulder_pan": (0.0, 0.35, 6.0),
    "shoulder_lift": (-0.30, 0.15, 7.0),
    "elbow_flex": (0.45, 0.25, 5.0),
    "wrist_flex": (0.80, 0.25, 4.5),
    "wrist_roll": (0.0, 1.00, 8.0),
    "gripper": (0.60, 0.50, 3.0),
}


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


def targets_at(t_s: float) -> dict[str, float]:
    """Position targets for all 12 joints at time t_s."""
    folded = folded_pose()
    blend = _smoothstep(t_s / RAMP_S)
    targets = {}
    for side in SIDES:
        phase = 0.0 if side == "left" else math.pi
        for joint in ARM_JOINTS:
            centre, amplitude, period_s = MOTION[joint]
            q = centre + amplitude * math.sin(2.0 * math.pi * t_s / period_s + phase)
            start = folded[f"{side}_{joint}"]
            targets[f"{side}_{joint}"] = start + blend * (q - start)
    return targets
