"""What holds the block: the expert's grasp checks, from MuJoCo's contacts of what it observes.

The expert sees joint positions and the block's and tray's poses, the whole configuration of the
scene; from it MuJoCo's collision detection says what touches the block
(robogym_ros.task.placement.PlacementJudge), exactly as the env's success test does. So a
check can tell the cases apart as the physics does:

- **held**: both jaws of the arm touch the block (wherever along the jaws it sits: a block that
  slid in the jaws is still held, and the expert goes on from where it now is);
- **slipping**: it touches the arm but not both jaws (hanging on one jaw, against the palm);
- **fell**: it touches no part of the arm; where it lies then (table, tray) is named.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robogym_ros.task import scene
from robogym_ros.task.placement import BlockContacts, PlacementJudge

# Jaws stopped by a 25 mm block sit at ~0.35 rad; shut is <= 0; above the max they are open.
GRIPPER_HOLDING_MIN_RAD = 0.12
GRIPPER_HOLDING_MAX_RAD = 0.6


@dataclass(frozen=True)
class Hold:
    """One arm's hold on the block at one percept."""
    side: str
    state: str  # "held" | "slipping" | "fell"
    contacts: BlockContacts
    gripper_rad: float

    @property
    def held(self) -> bool:
        return self.state == "held"

    def reason(self, where: str) -> str:
        """Why the block is not held, in words that match the physics (``where``: e.g. "on the way
        to the tray")."""
        if self.state == "slipping":
            return (f"the block slipped out of the {self.side} jaws {where}: it touches the {self.side} arm "
                    f"but not both jaws (gripper {self.gripper_rad:.2f} rad)")
        lies = ("in the tray" if self.contacts.tray else "on the table" if self.contacts.table
                else "in the air")
        other = [s for s, t in zip(scene.SIDES, self.contacts.arm) if t and s != self.side]
        if other:
            lies = f"against the {other[0]} arm"
        return f"the block fell from the {self.side} gripper {where}: it touches no part of that arm and lies {lies}"


class HoldChecks:
    """Contacts of the block from percepts (q in scene.JOINT_NAMES order, block and tray poses)."""

    def __init__(self, model_path: str):
        self.judge = PlacementJudge(model_path, scene.JOINT_NAMES, scene.OBJECT_BODIES)

    def contacts(self, percept) -> BlockContacts:
        return self.judge.contacts(percept.q, np.stack([percept.block_pose, percept.tray_pose]))

    def hold(self, percept, side: str) -> Hold:
        c = self.contacts(percept)
        k = scene.SIDES.index(side)
        grip = float(percept.q[k * len(scene.ARM_JOINTS) + len(scene.ARM_JOINTS) - 1])
        jaws_on_block = c.grasp[k] and GRIPPER_HOLDING_MIN_RAD < grip < GRIPPER_HOLDING_MAX_RAD
        state = "held" if jaws_on_block else ("slipping" if c.arm[k] else "fell")
        return Hold(side, state, c, grip)
