"""Real MuJoCo rendering through the lens (needs a GL: MUJOCO_GL=egl works headless)."""
import os

os.environ.setdefault("MUJOCO_GL", "egl")  # must precede the first mujoco import

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from robogym_ros.camera.lens import Lens  # noqa: E402
from robogym_ros.camera.renderer import CameraRenderer, camera_pose_optical, is_software_gl  # noqa: E402

# "cam" is deliberately tilted (not axis-aligned) so a wrong optical-frame convention shows.
# Its MuJoCo axes: x = (0.8, 0.6, 0), y = (-0.3, 0.4, 0.866), looking along -z.
# The marker is an unlit (emission 1, no specular) red sphere, so its image is a flat disc.
SCENE_XML = """
<mujoco>
  <option gravity="0 0 0"/>
  <visual><headlight ambient=".4 .4 .4" diffuse=".6 .6 .6" specular="0 0 0"/></visual>
  <asset>
    <material name="red" rgba="1 0 0 1" emission="1" specular="0" shininess="0"/>
    <material name="green" rgba="0.1 0.8 0.1 1" specular="0"/>
  </asset>
  <worldbody>
    <camera name="cam" pos="0.3 -1.2 0.8" xyaxes="0.8 0.6 0 -0.3 0.4 0.866"/>
    <camera name="top" pos="0 0 3" xyaxes="1 0 0 0 1 0"/>
    <body name="marker" mocap="true" pos="0 0 0">
      <geom type="sphere" size="0.012" material="red" contype="0" conaffinity="0"/>
    </body>
    <body name="block" pos="0.82 -1.89 1.3">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" material="green"/>
    </body>
    <site name="debug" pos="0 0.3 0" size="0.05" rgba="1 0 0 1"/>
  </worldbody>
</mujoco>
"""
CAM_X = np.array([0.8, 0.6, 0.0])
CAM_Y = np.array([-0.3, 0.4, 0.866])
CAM_POS = np.array([0.3, -1.2, 0.8])
BLOCK_QPOS = slice(0, 3)
# Optical-frame points (x right, y down, z forward), m. The fisheye's corner ray is ~49.7 deg
# off axis (tan = 0.94, 0.71); the pinhole's is at tan = 0.83, 0.62.
FISHEYE_POINTS = [(0, 0, 1.0), (0.6, 0, 1.2), (0, -0.45, 0.9), (0.88, 0.64, 1.0),
                  (-0.88, -0.64, 1.0), (0.88, -0.64, 1.0), (-0.88, 0.64, 1.0)]
PINHOLE_POINTS = [(0, 0, 1.0), (0.6, 0, 1.2), (0.78, 0.58, 1.0), (-0.78, -0.58, 1.0),
                  (0.78, -0.58, 1.0), (-0.78, 0.58, 1.0)]
# Measured <= 0.12 px. The brief allows ~3 px; 0.4 also catches a half-pixel slip in a
# principal point (an error of exactly 0.5 px at the image centre).
MAX_ERROR_PX = 0.4


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(SCENE_XML)


def _state(model, marker_world=None, block_world=None):
    data = mujoco.MjData(model)
    if marker_world is not None:
        data.mocap_pos[0] = marker_world
    if block_world is not None:
        data.qpos[BLOCK_QPOS] = block_world
    mujoco.mj_forward(model, data)
    size = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)
    state = np.empty(size)
    mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
    return state, data


def _red_centroid(img):
    weight = np.clip(img[..., 0].astype(np.float64) - img[..., 1], 0, None)
    assert (weight > 64).sum() >= 3, "marker not visible"
    vs, us = np.indices(weight.shape)
    return np.array([(us * weight).sum(), (vs * weight).sum()]) / weight.sum()


def test_camera_pose_optical(model):
    _, data = _state(model)
    R, t = camera_pose_optical(model, data, "cam")
    np.testing.assert_allclose(t, CAM_POS, atol=1e-9)
    np.testing.assert_allclose(R @ [1, 0, 0], CAM_X, atol=1e-3)  # right
    np.testing.assert_allclose(R @ [0, 1, 0], -CAM_Y, atol=1e-3)  # down = -MuJoCo up
    np.testing.assert_allclose(R @ [0, 0, 1], -np.cross(CAM_X, CAM_Y), atol=1e-3)  # forward
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-9)


def _assert_markers_land(model, renderer, lens, points, R, t):
    """A marker at each optical-frame point (camera pose R, t) lands on its projection."""
    for p_opt in np.array(points, dtype=np.float64):
        state, _ = _state(model, marker_world=t + R @ p_opt)
        img = renderer.render(state)["cam"]
        # Project from the world point through the renderer's own pose, as the node will.
        R_r, t_r = renderer.camera_pose_optical("cam")
        expected = lens.project((R_r.T @ (t + R @ p_opt - t_r))[None])[0]
        err_px = np.linalg.norm(_red_centroid(img) - expected)
        assert err_px < MAX_ERROR_PX, (p_opt, expected, err_px)


@pytest.mark.parametrize("lens, points", [
    (Lens(640, 480), FISHEYE_POINTS),
    (Lens(320, 240), FISHEYE_POINTS),
    (Lens(640, 480, fisheye=False), PINHOLE_POINTS),
], ids=["fisheye640", "fisheye320", "pinhole640"])
def test_marker_lands_on_projection(model, lens, points):
    _, data = _state(model)
    R, t = camera_pose_optical(model, data, "cam")
    with CameraRenderer(model, ["cam"], lens) as renderer:
        _assert_markers_land(model, renderer, lens, points, R, t)
    # The check can tell a wrong K: 0.5 % on fx alone moves the corner point past the limit.
    corner = np.array(points[3]).reshape(1, 1, 3)
    K_wrong = lens.K.copy()
    K_wrong[0, 0] *= 1.005
    project = cv2.fisheye.projectPoints if lens.fisheye else cv2.projectPoints
    moved_px = project(corner, np.zeros(3), np.zeros(3), K_wrong, lens.D)[0] - lens.project(corner)
    assert np.linalg.norm(moved_px) > MAX_ERROR_PX


@pytest.mark.parametrize("cameras, max_side", [(["top", "cam"], 4096), (["top", "top", "cam"], 900)],
                         ids=["second_in_a_row", "wrapped_to_a_second_row"])
def test_marker_lands_on_projection_from_any_cell_of_the_mosaic(model, cameras, max_side):
    """All cameras render into one buffer side by side: a camera in another cell (here to
    the right of one, or above two) must project exactly as one rendered alone."""
    lens = Lens(320, 240)
    _, data = _state(model)
    R, t = camera_pose_optical(model, data, "cam")
    with CameraRenderer(model, cameras, lens, mosaic_max_side_px=max_side) as renderer:
        assert renderer.mosaic_shape[:2] == ((1 if max_side > 1000 else 2) * lens.source_height_px,
                                             2 * lens.source_width_px)
        _assert_markers_land(model, renderer, lens, FISHEYE_POINTS, R, t)


def test_mosaic_cells_wrap_at_the_side_limit():
    from robogym_ros.camera.renderer import mosaic_cells
    assert mosaic_cells(3, 100, 50) == [(0, 0), (100, 0), (200, 0)]
    assert mosaic_cells(3, 100, 50, max_side_px=250) == [(0, 0), (100, 0), (0, 50)]
    assert mosaic_cells(2, 5000, 50) == [(0, 0), (0, 50)]  # wider than the limit: one a row


def test_each_camera_renders_alone_in_its_cell(model):
    """A camera's view in the mosaic equals that camera rendered by a renderer of its own:
    no cell clears, overdraws or bleeds into another."""
    lens = Lens(320, 240)
    state, _ = _state(model, block_world=CAM_POS + [0.1, 0.9, 0.2])
    with CameraRenderer(model, ["top", "cam", "top"], lens) as renderer:
        together = renderer.render(state)
        mosaic = renderer.new_mosaic()
        renderer.render_raw(state, mosaic)
        views = renderer.views(mosaic)
    for name in ("cam", "top"):
        with CameraRenderer(model, [name], lens) as alone:
            single = alone.render(state)[name]
        diff = np.abs(together[name].astype(int) - single.astype(int))
        assert diff.max() <= 2 and diff.mean() < 0.01, (name, diff.max(), diff.mean())
    assert np.array_equal(views[0], views[2])  # the same camera twice, the same pixels


def test_rgba_read_back_holds_what_mujoco_reads_as_rgb(model):
    """Without multisampling the mosaic is read as RGBA straight from the offscreen buffer;
    its colour channels must be exactly what mjr_readPixels returns for the same render."""
    import mujoco as mj
    state, _ = _state(model, block_world=CAM_POS + [0.1, 0.9, 0.2])
    with CameraRenderer(model, ["cam", "top"], Lens(320, 240), shadows_and_msaa=False) as renderer:
        mosaic = renderer.new_mosaic()
        assert mosaic.shape[2] == 4
        renderer.render_raw(state, mosaic)
        rgb = np.empty(mosaic.shape[:2] + (3,), np.uint8)
        mj.mjr_readPixels(rgb, None, renderer._mosaic_rect, renderer._con)
    np.testing.assert_array_equal(mosaic[..., :3], rgb)
    assert mosaic[..., :3].any()


def test_shapes_and_fresh_arrays(model):
    lens = Lens(320, 240)
    state, _ = _state(model, marker_world=CAM_POS + [0, 1, 0])
    with CameraRenderer(model, ["cam", "top"], lens) as renderer:
        first = renderer.render(state)
        second = renderer.render(state)
    assert set(first) == {"cam", "top"}
    images = list(first.values()) + list(second.values())
    for img in images:
        assert img.shape == (240, 320, 3) and img.dtype == np.uint8 and img.flags.c_contiguous
    for i, a in enumerate(images):
        for b in images[i + 1:]:
            assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(first["cam"], second["cam"])  # same state, same image


def test_image_follows_state(model):
    lens = Lens(320, 240)
    _, data = _state(model)
    R, t = camera_pose_optical(model, data, "cam")
    with CameraRenderer(model, ["cam"], lens) as renderer:
        hidden, _ = _state(model)  # block starts behind the camera
        in_view, _ = _state(model, block_world=t + R @ [0.1, 0.05, 0.8])
        before = renderer.render(hidden)["cam"]
        after = renderer.render(in_view)["cam"]
        again = renderer.render(hidden)["cam"]
    def green(img):
        return ((img[..., 1] > 2 * img[..., 0].astype(int)) & (img[..., 1] > 60)).sum()
    assert green(before) == 0 and green(after) > 500
    np.testing.assert_array_equal(before, again)  # nothing left over from the previous state


def test_sites_are_not_drawn(model):
    # The red "debug" site sits in front of "top"; the marker is moved far out of view.
    state, _ = _state(model, marker_world=[50, 50, -50])
    with CameraRenderer(model, ["top"], Lens(320, 240)) as renderer:
        img = renderer.render(state)["top"]
    assert (img[..., 0].astype(int) - img[..., 1] > 64).sum() == 0


def test_callers_model_untouched(model):
    fovy, offwidth = model.cam_fovy.copy(), model.vis.global_.offwidth
    with CameraRenderer(model, ["cam"], Lens(640, 480)) as renderer:
        assert renderer.model.cam_fovy[0] == pytest.approx(Lens(640, 480).source_fovy_deg)
    np.testing.assert_array_equal(model.cam_fovy, fovy)
    assert model.vis.global_.offwidth == offwidth


def test_missing_camera_is_named(model):
    with pytest.raises(ValueError, match=r"'left_wrist'.*\['cam', 'top'\]"):
        CameraRenderer(model, ["cam", "left_wrist"], Lens(320, 240))


def test_wrong_state_size(model):
    with CameraRenderer(model, ["cam"], Lens(320, 240)) as renderer:
        with pytest.raises(ValueError, match="mjSTATE_INTEGRATION"):
            renderer.render(np.zeros(3))
        renderer.close()
        with pytest.raises(RuntimeError):
            renderer.render(_state(model)[0])


def test_quality_follows_gl(model):
    with CameraRenderer(model, ["cam"], Lens(320, 240)) as renderer:
        assert renderer.shadows_and_msaa == (not is_software_gl(renderer.gl_renderer))
    # Forcing shadows on still renders (slow on a software GL, so keep it small and single).
    with CameraRenderer(model, ["cam"], Lens(320, 240), shadows_and_msaa=True) as renderer:
        assert renderer.render(_state(model)[0])["cam"].shape == (240, 320, 3)
