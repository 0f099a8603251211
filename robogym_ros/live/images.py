"""Frames as pictures: PNG for agents (lossless: the pixels the sim rendered), JPEG of all
cameras side by side for viewers (browser-native, every frame a keyframe)."""
from __future__ import annotations

import cv2
import numpy as np

from robogym_ros.live.frames import Frame, FrameSet


def png(frame: Frame) -> bytes:
    """The frame as PNG, lossless (compression 1: fast, the size matters little here)."""
    ok, data = cv2.imencode(".png", np.ascontiguousarray(frame.rgb()[..., ::-1]), [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise ValueError(f"{frame.camera}: PNG encoding failed")
    return data.tobytes()


def side_by_side(frame_set: FrameSet) -> np.ndarray:
    """Every camera's image of one tick in a row, as BGR (OpenCV's order), top-aligned on black
    where heights differ."""
    height = max(f.height for f in frame_set.frames)
    row = np.zeros((height, sum(f.width for f in frame_set.frames), 3), np.uint8)
    x = 0
    for frame in frame_set.frames:
        row[:frame.height, x:x + frame.width] = frame.rgb()[..., ::-1]
        x += frame.width
    return row


def jpeg(bgr: np.ndarray, quality: int = 80) -> bytes:
    ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()
