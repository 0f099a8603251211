"""Lens model of the InnoMaker U20CAM wrist/overhead camera (no ROS, no MuJoCo).

The real camera has an equidistant fisheye (r = f * theta) that a GL renderer cannot
draw directly. So a wider *pinhole* image is rendered first and then resampled into the
fisheye image with ``cv2.remap``; the maps come from ``cv2.fisheye.undistortPoints`` with
the very K and D published in CameraInfo, so a calibrated K, D later drops straight in.

Conventions (OpenCV): pixel (0, 0) is the *centre* of the top-left pixel, so an image of
width w spans x in [-0.5, w - 0.5] and its principal point is cx = (w - 1) / 2. Points
are given in the ROS optical frame: z forward, x right, y down.

Square pixels (fx == fy): the 640x480 mode is the central 4:3 region of a 1920x1080
sensor scaled by the same factor both ways, and for an equidistant lens the angle is
proportional to the pixel radius, so 79.5 deg horizontally implies 79.5 * 3/4 = 59.625 deg
vertically - the quoted 59.6 is that number rounded. f is therefore taken from the
horizontal FOV and the vertical FOV is only checked against it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

EQUIDISTANT = "equidistant"  # sensor_msgs/distortion_models, 4 coefficients k1..k4
PLUMB_BOB = "plumb_bob"  # 5 coefficients k1 k2 t1 t2 k3

# How far the requested vertical FOV may disagree with the one square pixels imply.
_VFOV_TOLERANCE_DEG = 0.1
# Extra source pixels beyond the outermost sampled ray, so bilinear taps stay inside.
_SOURCE_MARGIN_PX = 1.0


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.flags.writeable = False  # a frozen Lens must not be edited through its arrays
    return a


@dataclass(frozen=True)
class Lens:
    """A camera's optics: equidistant fisheye (or pinhole) intrinsics, the pinhole source the
    renderer draws, and the remap from one to the other. Frozen; its arrays are read-only."""

    width_px: int
    height_px: int
    hfov_deg: float = 79.5
    vfov_deg: float = 59.6  # checked against hfov in fisheye mode; unused for the pinhole
    fisheye: bool = True
    # Source pinhole focal length / fisheye focal length. 1.0 matches the fisheye's
    # resolution at the image centre (the periphery is then oversampled); lower renders
    # fewer pixels at the cost of a softer centre.
    source_scale: float = 1.0

    K: np.ndarray = field(init=False, repr=False, compare=False)
    D: np.ndarray = field(init=False, repr=False, compare=False)
    distortion_model: str = field(init=False, repr=False, compare=False)
    R: np.ndarray = field(init=False, repr=False, compare=False)
    P: np.ndarray = field(init=False, repr=False, compare=False)
    source_width_px: int = field(init=False, repr=False, compare=False)
    source_height_px: int = field(init=False, repr=False, compare=False)
    source_fovy_deg: float = field(init=False, repr=False, compare=False)
    _maps: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w, h = int(self.width_px), int(self.height_px)
        if w <= 0 or h <= 0:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        if not 0.0 < self.hfov_deg < 180.0:
            raise ValueError(f"hfov_deg must be in (0, 180), got {self.hfov_deg}")
        if self.source_scale <= 0.0:
            raise ValueError(f"source_scale must be positive, got {self.source_scale}")
        half_w_px, half_h_px = w / 2.0, h / 2.0  # centre to outer pixel edge
        half_hfov_rad = math.radians(self.hfov_deg / 2.0)

        if self.fisheye:
            f_px = half_w_px / half_hfov_rad  # equidistant: r = f * theta
            implied_vfov_deg = 2.0 * math.degrees(half_h_px / f_px)
            if abs(implied_vfov_deg - self.vfov_deg) > _VFOV_TOLERANCE_DEG:
                raise ValueError(
                    f"{w}x{h} with square pixels at hfov {self.hfov_deg} deg gives vfov "
                    f"{implied_vfov_deg:.3f} deg, not {self.vfov_deg} deg; pass a matching "
                    "vfov_deg (or a calibrated K, D)")
            D = np.zeros(4)
            model = EQUIDISTANT
        else:
            f_px = half_w_px / math.tan(half_hfov_rad)
            D = np.zeros(5)
            model = PLUMB_BOB
        K = np.array([[f_px, 0.0, (w - 1) / 2.0],
                      [0.0, f_px, (h - 1) / 2.0],
                      [0.0, 0.0, 1.0]])
        # The published image is the (only) image: no rectification, P = [K | 0].
        P = np.hstack([K, np.zeros((3, 1))])

        set_ = object.__setattr__  # frozen dataclass: derived fields are set once, here
        set_(self, "K", _frozen(K))
        set_(self, "D", _frozen(D))
        set_(self, "distortion_model", model)
        set_(self, "R", _frozen(np.eye(3)))
        set_(self, "P", _frozen(P))

        if not self.fisheye:
            set_(self, "source_width_px", w)
            set_(self, "source_height_px", h)
            set_(self, "source_fovy_deg", 2.0 * math.degrees(math.atan(half_h_px / f_px)))
            set_(self, "_maps", ())
            return

        # Ray of every output pixel centre, as normalised pinhole coordinates (x/z, y/z).
        u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        pix = np.stack([u.ravel(), v.ravel()], axis=-1).reshape(-1, 1, 2)
        norm = cv2.fisheye.undistortPoints(pix, K, D).reshape(h, w, 2)

        # Smallest pinhole (square pixels, centred) that holds every ray plus a bilinear tap.
        f_src_px = self.source_scale * f_px
        half_src_w = math.ceil(f_src_px * float(np.abs(norm[..., 0]).max()) + _SOURCE_MARGIN_PX)
        half_src_h = math.ceil(f_src_px * float(np.abs(norm[..., 1]).max()) + _SOURCE_MARGIN_PX)
        src_w, src_h = 2 * half_src_w, 2 * half_src_h
        set_(self, "source_width_px", src_w)
        set_(self, "source_height_px", src_h)
        # GL's frustum spans the outer pixel edges: tan(fovy/2) = (H/2) / f.
        set_(self, "source_fovy_deg", 2.0 * math.degrees(math.atan(half_src_h / f_src_px)))

        map_x = (f_src_px * norm[..., 0] + (src_w - 1) / 2.0).astype(np.float32)
        map_y = (f_src_px * norm[..., 1] + (src_h - 1) / 2.0).astype(np.float32)
        # Fixed-point maps remap faster than float ones. The second pair reads a
        # bottom-up image (OpenGL's row order) directly, which saves the renderer a flip.
        top_down = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
        bottom_up = cv2.convertMaps(map_x, (src_h - 1) - map_y, cv2.CV_16SC2)
        set_(self, "_maps", (top_down, bottom_up))

    def distort(self, pinhole_rgb: np.ndarray, *, bottom_up: bool = False,
                out: np.ndarray | None = None) -> np.ndarray:
        """Fisheye image (h, w, 3) uint8 RGB from the source pinhole image: a new array, or
        written into ``out`` (C-contiguous (h, w, 3) uint8) and returned.

        ``pinhole_rgb`` has shape (source_height_px, source_width_px, 3), or 4 channels RGBA
        (alpha dropped), top row first unless ``bottom_up`` (rows as glReadPixels returns
        them); a view into a larger image (a mosaic) will do. RGBA is what a GL framebuffer
        holds, so reading it back is a plain copy; and OpenCV remaps 4 channels faster than 3.
        """
        shape = pinhole_rgb.shape
        if (shape[:2] != (self.source_height_px, self.source_width_px) or len(shape) != 3
                or shape[2] not in (3, 4) or pinhole_rgb.dtype != np.uint8):
            raise ValueError(
                f"expected a {(self.source_height_px, self.source_width_px)} x 3 or 4 channel uint8 "
                f"pinhole image, got {shape} {pinhole_rgb.dtype}")
        if out is not None and (out.shape != (self.height_px, self.width_px, 3) or out.dtype != np.uint8
                                or not out.flags.c_contiguous):
            raise ValueError(f"out must be a C-contiguous ({self.height_px}, {self.width_px}, 3) uint8 "
                             f"array, got {out.shape} {out.dtype}")
        if not self.fisheye:
            source = (pinhole_rgb[::-1] if bottom_up else pinhole_rgb)[..., :3]
            if out is None:
                return np.array(source, order="C")  # a copy, also of a flipped view
            out[...] = source
            return out
        map1, map2 = self._maps[1 if bottom_up else 0]
        # Without ``out`` cv2 allocates the output: callers never share memory between frames.
        remapped = cv2.remap(pinhole_rgb, map1, map2, cv2.INTER_LINEAR,
                             dst=out if shape[2] == 3 else None,
                             borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        if shape[2] == 4:
            return cv2.cvtColor(remapped, cv2.COLOR_RGBA2RGB, dst=out)
        return remapped

    def project(self, points_cam: np.ndarray) -> np.ndarray:
        """Pixels (N, 2) of points (N, 3) in the optical frame; NaN for points not in front."""
        pts = np.asarray(points_cam, dtype=np.float64).reshape(-1, 3)
        out = np.full((len(pts), 2), np.nan)
        front = pts[:, 2] > 0.0  # both models divide by z; behind the camera is meaningless
        if front.any():
            obj = np.ascontiguousarray(pts[front]).reshape(-1, 1, 3)
            zero = np.zeros(3)
            if self.fisheye:
                img, _ = cv2.fisheye.projectPoints(obj, zero, zero, self.K, self.D)
            else:
                img, _ = cv2.projectPoints(obj, zero, zero, self.K, self.D)
            out[front] = img.reshape(-1, 2)
        return out
