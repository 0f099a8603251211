"""What a report's camera contact sheet drew: frames from outside the judged window are painted a
colour nothing else in a sheet has, and found again in the PNG."""
from pathlib import Path

import cv2

OUTSIDE_RGB = (255, 0, 255)  # frames outside the judged window, in a colour nothing else in a sheet has


def shows_outside_frames(png: Path) -> bool:
    """Whether a contact sheet drew any pixel of an OUTSIDE_RGB frame (a block of them: a whole frame)."""
    bgr = cv2.imread(str(png)).astype(int)
    magenta = (bgr[..., 2] > 240) & (bgr[..., 1] < 15) & (bgr[..., 0] > 240)
    return int(magenta.sum()) > 100
