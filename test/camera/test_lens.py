"""Lens numbers and the remap, without any rendering (numpy + OpenCV only)."""
import math

import cv2
import numpy as np
import pytest

from robogym_ros.camera.lens import EQUIDISTANT, PLUMB_BOB, Lens


def _angle_to_pixel_deg(lens: Lens, u_px: float, v_px: float) -> float:
    """Angle between the optical axis and the ray through pixel coordinate (u, v)."""
    pt = np.array([[[u_px, v_px]]], dtype=np.float64)
    if lens.fisheye:
        xy = cv2.fisheye.undistortPoints(pt, lens.K, lens.D).reshape(2)
    else:
        xy = cv2.undistortPoints(pt, lens.K, lens.D).reshape(2)
    return math.degrees(math.atan(math.hypot(*xy)))


@pytest.mark.parametrize("w, h", [(640, 480), (320, 240)])
def test_fisheye_fov_centre_to_edge(w, h):
    lens = Lens(w, h)
    cx, cy = lens.K[0, 2], lens.K[1, 2]
    # Image edges are the outer pixel edges: -0.5 and w - 0.5 in OpenCV coordinates.
    assert _angle_to_pixel_deg(lens, -0.5, cy) == pytest.approx(39.75, abs=0.1)
    assert _angle_to_pixel_deg(lens, w - 0.5, cy) == pytest.approx(39.75, abs=0.1)
    assert _angle_to_pixel_deg(lens, cx, -0.5) == pytest.approx(29.8, abs=0.1)
    assert _angle_to_pixel_deg(lens, cx, h - 0.5) == pytest.approx(29.8, abs=0.1)


def test_pinhole_mode_keeps_horizontal_fov():
    lens = Lens(640, 480, fisheye=False)
    assert lens.distortion_model == PLUMB_BOB
    np.testing.assert_array_equal(lens.D, np.zeros(5))
    assert _angle_to_pixel_deg(lens, -0.5, lens.K[1, 2]) == pytest.approx(39.75, abs=0.01)
    assert (lens.source_width_px, lens.source_height_px) == (640, 480)
    # The source pinhole *is* the output: its vertical FOV follows from K.
    assert lens.source_fovy_deg == pytest.approx(2 * math.degrees(math.atan(240 / lens.K[1, 1])))


@pytest.mark.parametrize("fisheye", [True, False])
def test_intrinsics_layout(fisheye):
    lens = Lens(640, 480, fisheye=fisheye)
    K = lens.K
    assert K.shape == (3, 3) and K[0, 0] == K[1, 1]  # square pixels
    assert (K[0, 2], K[1, 2]) == (319.5, 239.5)  # pixel-centre convention
    assert K[0, 1] == 0 and tuple(K[2]) == (0, 0, 1)
    np.testing.assert_array_equal(lens.R, np.eye(3))
    assert lens.P.shape == (3, 4)
    np.testing.assert_array_equal(lens.P[:, :3], K)
    np.testing.assert_array_equal(lens.P[:, 3], 0)
    if fisheye:
        assert lens.distortion_model == EQUIDISTANT
        np.testing.assert_array_equal(lens.D, np.zeros(4))
    with pytest.raises(ValueError):
        lens.K[0, 0] = 1.0  # read-only: the Lens is frozen all the way down


def test_inconsistent_vfov_is_refused():
    with pytest.raises(ValueError, match="vfov"):
        Lens(640, 480, vfov_deg=66.0)
    Lens(640, 480, vfov_deg=66.0, fisheye=False)  # pinhole: vfov follows from the aspect


def test_source_covers_every_output_ray():
    lens = Lens(640, 480)
    # The extreme rays are the corners; the pinhole must be wider than the fisheye's edge.
    assert lens.source_width_px > 640 and lens.source_height_px > 480
    f_src = (lens.source_height_px / 2) / math.tan(math.radians(lens.source_fovy_deg / 2))
    assert f_src == pytest.approx(lens.K[0, 0], rel=1e-9)  # centre resolution kept
    for corner in [(0, 0), (639, 0), (0, 479), (639, 479)]:
        xy = cv2.fisheye.undistortPoints(np.array([[corner]], np.float64), lens.K, lens.D).reshape(2)
        src = f_src * xy + [(lens.source_width_px - 1) / 2, (lens.source_height_px - 1) / 2]
        assert 0 <= src[0] < lens.source_width_px - 1 and 0 <= src[1] < lens.source_height_px - 1
    # And the remap never reads outside: a white source gives a white image, corners too.
    white = np.full((lens.source_height_px, lens.source_width_px, 3), 255, np.uint8)
    assert lens.distort(white).min() == 255


def _dot_image(lens: Lens, points_cam: np.ndarray, radius_px: float = 3.0) -> np.ndarray:
    """Source pinhole image with an anti-aliased white disc at each point's projection."""
    f_src = (lens.source_height_px / 2) / math.tan(math.radians(lens.source_fovy_deg / 2))
    cx, cy = (lens.source_width_px - 1) / 2, (lens.source_height_px - 1) / 2
    img = np.zeros((lens.source_height_px, lens.source_width_px, 3), np.uint8)
    shift = 4  # sub-pixel centres for cv2.circle
    for x, y, z in points_cam:
        u, v = f_src * x / z + cx, f_src * y / z + cy
        cv2.circle(img, (round(u * 2**shift), round(v * 2**shift)), round(radius_px * 2**shift),
                   (255, 255, 255), -1, cv2.LINE_AA, shift)
    return img


def _centroid(img: np.ndarray, near_px: np.ndarray, window_px: int = 12) -> np.ndarray:
    u0, v0 = np.round(near_px).astype(int)
    g = img[..., 0].astype(np.float64)
    v_lo, u_lo = max(v0 - window_px, 0), max(u0 - window_px, 0)
    patch = g[v_lo:v0 + window_px + 1, u_lo:u0 + window_px + 1]
    vs, us = np.mgrid[v_lo:v_lo + patch.shape[0], u_lo:u_lo + patch.shape[1]]
    return np.array([(us * patch).sum(), (vs * patch).sum()]) / patch.sum()


@pytest.mark.parametrize("w, h", [(640, 480), (320, 240)])
def test_remap_agrees_with_project(w, h):
    """A dot drawn in the source pinhole lands where project() puts its 3D point."""
    lens = Lens(w, h)
    # Centre, edges, and close to each corner (the corner ray is ~49.7 deg off axis).
    points = np.array([[0, 0, 1], [0.6, 0, 1], [0, -0.45, 1],
                       [0.88, 0.64, 1], [-0.88, -0.64, 1], [0.88, -0.64, 1], [-0.88, 0.64, 1]])
    out = lens.distort(_dot_image(lens, points, radius_px=3.0 * w / 640))
    expected = lens.project(points)
    for p, e in zip(points, expected):
        assert 0 <= e[0] < w and 0 <= e[1] < h, p
        err = np.linalg.norm(_centroid(out, e) - e)
        assert err < 0.5 * w / 640 + 0.2, (p, e, err)


def test_bottom_up_equals_flipped_input():
    lens = Lens(320, 240)
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, (lens.source_height_px, lens.source_width_px, 3), dtype=np.uint8)
    src = cv2.GaussianBlur(noise, (0, 0), 2.0)
    # Not bit-exact: the fixed-point maps round y and (h - 1 - y) to 1/32 px separately.
    diff = np.abs(lens.distort(src[::-1].copy(), bottom_up=True).astype(int) - lens.distort(src))
    assert diff.max() <= 2


@pytest.mark.parametrize("fisheye", [True, False])
def test_distort_returns_fresh_array(fisheye):
    lens = Lens(320, 240, fisheye=fisheye)
    src = np.zeros((lens.source_height_px, lens.source_width_px, 3), np.uint8)
    a, b = lens.distort(src), lens.distort(src)
    assert a.shape == (240, 320, 3) and a.dtype == np.uint8
    assert not np.shares_memory(a, b) and not np.shares_memory(a, src)
    with pytest.raises(ValueError, match="pinhole image"):
        lens.distort(np.zeros((240, 320, 3), np.uint8) if fisheye else np.zeros((10, 10, 3), np.uint8))


@pytest.mark.parametrize("fisheye", [True, False])
@pytest.mark.parametrize("bottom_up", [True, False])
def test_distort_into_out_equals_a_new_array_and_reads_views(fisheye, bottom_up):
    """``out`` gets exactly what a new array would, also from a view into a wider image (a
    camera's cell of the renderer's mosaic); a wrong ``out`` is refused."""
    lens = Lens(320, 240, fisheye=fisheye)
    h, w = lens.source_height_px, lens.source_width_px
    mosaic = np.random.default_rng(1).integers(0, 256, (h, 3 * w, 3), dtype=np.uint8)
    view = mosaic[:, w:2 * w]
    out = np.full((240, 320, 3), 7, np.uint8)
    assert lens.distort(view, bottom_up=bottom_up, out=out) is out
    np.testing.assert_array_equal(out, lens.distort(view.copy(), bottom_up=bottom_up))
    for bad in (np.zeros((240, 320, 3), np.float32), np.zeros((240, 321, 3), np.uint8),
                np.zeros((240, 640, 3), np.uint8)[:, ::2]):
        with pytest.raises(ValueError, match="out must be"):
            lens.distort(view, out=bad)


@pytest.mark.parametrize("fisheye", [True, False])
@pytest.mark.parametrize("into_out", [True, False])
def test_an_rgba_source_gives_the_rgb_image_of_its_first_three_channels(fisheye, into_out):
    """The renderer reads RGBA back from GL (a plain copy); the alpha channel never shows."""
    lens = Lens(320, 240, fisheye=fisheye)
    h, w = lens.source_height_px, lens.source_width_px
    rgba = np.random.default_rng(2).integers(0, 256, (h, 2 * w, 4), dtype=np.uint8)[:, w:]
    rgb = np.ascontiguousarray(rgba[..., :3])
    out = np.empty((240, 320, 3), np.uint8) if into_out else None
    got = lens.distort(rgba, bottom_up=True, out=out)
    assert got.shape == (240, 320, 3) and (got is out if into_out else True)
    # Not bit-exact for the fisheye: OpenCV's 3- and 4-channel remaps round differently.
    diff = np.abs(got.astype(int) - lens.distort(rgb, bottom_up=True))
    assert diff.max() <= (1 if fisheye else 0), diff.max()
    with pytest.raises(ValueError, match="3 or 4 channel"):
        lens.distort(np.zeros((h, w, 2), np.uint8))


@pytest.mark.parametrize("fisheye", [True, False])
def test_project_pixel_ray_round_trip(fisheye):
    lens = Lens(640, 480, fisheye=fisheye)
    assert np.allclose(lens.project(np.array([[0.0, 0.0, 2.0]])), [[319.5, 239.5]])
    px = np.array([[0.0, 0.0], [639.0, 479.0], [100.0, 400.0]])
    undist = cv2.fisheye.undistortPoints if fisheye else cv2.undistortPoints
    xy = undist(px.reshape(-1, 1, 2), lens.K, lens.D).reshape(-1, 2)
    pts = np.hstack([xy, np.ones((3, 1))]) * 1.7  # any depth along the ray
    np.testing.assert_allclose(lens.project(pts), px, atol=1e-6)
    assert np.isnan(lens.project(np.array([[0.1, 0.0, -1.0]]))).all()  # behind the camera
