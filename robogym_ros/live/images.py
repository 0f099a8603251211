"""Frames as pictures: PNG for agents (lossless: the pixels the sim rendered), JPEG of all
cameras side by side for viewers (browser-native, every frame a keyframe)."""
from __future__ import annotations

import cv2
import numpy as np

from robogym_ros.live.frames import Frame, FrameSet


def png(frame: Frame) -> bytes:
    """The frame as PNG, lossless (compression 1: fast, the size matters little here)."""
    return _png_bgr(np.ascontiguousarray(frame.rgb()[..., ::-1]), frame.camera)


def _png_bgr(bgr: np.ndarray, what: str = "image") -> bytes:
    ok, data = cv2.imencode(".png", bgr, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise ValueError(f"{what}: PNG encoding failed")
    return data.tobytes()


IMAGE_FORMATS = {"png": "image/png", "jpeg": "image/jpeg"}


def for_agent(frame: Frame, image_format: str = "png", width_px: int | None = None,
              quality: int = 85) -> tuple[bytes, str, int, int]:
    """The frame as an agent asked for it: PNG (lossless) or JPEG, at its own size or scaled to
    ``width_px`` (the aspect kept; area averaging). Returns (payload, MIME type, width, height)."""
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"image_format must be one of {sorted(IMAGE_FORMATS)}, got {image_format!r}")
    bgr = np.ascontiguousarray(frame.rgb()[..., ::-1])
    if width_px is not None and width_px != frame.width:
        height_px = max(1, round(frame.height * width_px / frame.width))
        bgr = cv2.resize(bgr, (width_px, height_px),
                         interpolation=cv2.INTER_AREA if width_px < frame.width else cv2.INTER_LINEAR)
    payload = _png_bgr(bgr, frame.camera) if image_format == "png" else jpeg(bgr, quality)
    return payload, IMAGE_FORMATS[image_format], bgr.shape[1], bgr.shape[0]


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
