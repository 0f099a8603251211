"""LeRobot export: frames get the state and action of their own tick (exact, never nearest), and
a written dataset, loaded back with LeRobot's own ``LeRobotDataset``, holds the ground truth.

The alignment tests are pure numpy and always run. The dataset tests need the optional
``lerobot`` extra (Python >= 3.12 for lerobot 0.6) and skip with that reason without it.
The bag they export is written here from the sim's own physics, renderer and camera clock in
the layout ``robogym_recorder --record`` writes, plus the per-tick targets topic
(``ground_truth/joint_targets``) the export takes actions from.
"""
from __future__ import annotations

import numpy as np
import pytest

from robogym_ros.export.episodes import AlignmentError, align_episodes

DT = 10_000_000
PERIOD = 100_000_000


def _recording(n_ticks=300, resets=(1_000_000_000, 2_200_000_000), n_joints=3):
    """Ticks 1..n (stamp = k * dt) whose values name their stamp, so a wrong row shows."""
    stamps = np.arange(1, n_ticks + 1, dtype=np.int64) * DT
    q = stamps[:, None] / 1e9 + np.arange(n_joints) * 100.0
    targets = -q
    frames = stamps[stamps % PERIOD == 0]
    return stamps, q, targets, frames, list(resets)


def test_each_frame_takes_its_own_ticks_state_and_the_next_ticks_targets():
    stamps, q, targets, frames, resets = _recording()
    eps = align_episodes(stamps, q, stamps, targets, frames, reset_stamps_ns=resets, control_dt_ns=DT,
                         frame_period_ns=PERIOD, first_sim_tick_ns=DT)
    assert [e.index for e in eps] == [0, 1, 2]
    assert [e.complete_start for e in eps] == [True, True, True]
    for e in eps:
        assert np.array_equal(e.state[:, 0], e.frame_stamps_ns / 1e9)  # the frame's own tick, exactly
        assert np.array_equal(e.action[:, 0], -(e.frame_stamps_ns + DT) / 1e9)  # the tick after it
        assert np.all(np.diff(e.frame_stamps_ns) == PERIOD)
    # A reset stamped r is the new episode's first tick (the sim's reset tick, the new scene): the old
    # episode ends at r - dt, and the frame on r is the new episode's first.
    assert eps[0].frame_stamps_ns[0] == PERIOD and eps[0].frame_stamps_ns[-1] == resets[0] - PERIOD
    assert eps[0].last_tick_ns == resets[0] - DT
    assert eps[1].first_tick_ns == resets[0] and eps[1].frame_stamps_ns[0] == resets[0]
    assert eps[2].frame_stamps_ns[-1] == stamps[-1] - PERIOD  # the last tick's frame has no action
    # a recording that starts mid-episode: a (latched) reset from before it does not make its start seen
    late = stamps >= 500_000_000
    eps = align_episodes(stamps[late], q[late], stamps, targets, frames, reset_stamps_ns=[10 * DT, *resets],
                         control_dt_ns=DT, frame_period_ns=PERIOD, first_sim_tick_ns=DT)
    assert [(e.index, e.complete_start) for e in eps] == [(1, False), (2, True), (3, True)]


def test_a_frame_whose_tick_is_missing_is_an_error_never_the_nearest():
    stamps, q, targets, frames, resets = _recording()
    keep = stamps != 500_000_000  # the tick of a frame dropped; its neighbours are 10 ms away
    with pytest.raises(AlignmentError, match="no joint state at their own stamp .*500000000 ns"):
        align_episodes(stamps[keep], q[keep], stamps, targets, frames, reset_stamps_ns=resets, control_dt_ns=DT,
                       frame_period_ns=PERIOD)
    with pytest.raises(AlignmentError, match="no targets on the tick after them .*510000000 ns"):
        align_episodes(stamps, q, stamps[stamps != 510_000_000], targets[stamps != 510_000_000], frames,
                       reset_stamps_ns=resets, control_dt_ns=DT, frame_period_ns=PERIOD)


def test_a_missing_frame_is_an_error_not_a_silent_jump():
    stamps, q, targets, frames, resets = _recording()
    with pytest.raises(AlignmentError, match="episode 0: frames at 300000000 and 500000000 ns .* a frame is missing"):
        align_episodes(stamps, q, stamps, targets, frames[frames != 400_000_000], reset_stamps_ns=resets,
                       control_dt_ns=DT, frame_period_ns=PERIOD)
    gaps = []  # or that episode is left out, saying why
    eps = align_episodes(stamps, q, stamps, targets, frames[frames != 400_000_000], reset_stamps_ns=resets,
                         control_dt_ns=DT, frame_period_ns=PERIOD, gaps=gaps)
    assert [e.index for e in eps] == [1, 2] and len(gaps) == 1 and gaps[0].startswith("episode 0: frames at 3")


def test_streams_that_end_at_different_ticks_keep_every_frame_they_all_cover():
    """The recorder's subscriptions stop one by one: here the joint stream ends on a frame's tick,
    the targets (and the ground truth) a tick later. That last frame has its state and the next
    tick's targets, so it is exported; the span every stream covers is what both the export and
    its verifier cut to."""
    from robogym_ros.export.bag import recording_span
    stamps, q, targets, frames, _ = _recording(n_ticks=250)
    js = stamps[stamps <= 2_000_000_000]  # ends on the frame at 2.0 s
    eps = align_episodes(js, q[:len(js)], stamps, targets, frames, reset_stamps_ns=[], control_dt_ns=DT,
                         frame_period_ns=PERIOD)
    assert eps[0].frame_stamps_ns[-1] == 2_000_000_000  # its action is the targets of 2.01 s, recorded
    np.testing.assert_array_equal(eps[0].action[-1], targets[stamps == 2_010_000_000][0])
    assert recording_span(DT, js, stamps, [frames], truth_stamps_ns=stamps) == (100_000_000, 2_000_000_000)
    # the ground truth ends first: the span ends with it; the targets first: a tick before their end
    assert recording_span(DT, stamps, stamps, [frames], truth_stamps_ns=stamps[:150])[1] == 1_500_000_000
    assert recording_span(DT, stamps, stamps[:150], [frames], truth_stamps_ns=stamps)[1] == 1_490_000_000
    # but a frame before a reset never takes the next episode's targets
    eps = align_episodes(js, q[:len(js)], stamps, targets, frames, reset_stamps_ns=[2_010_000_000],
                         control_dt_ns=DT, frame_period_ns=PERIOD)
    assert eps[0].frame_stamps_ns[-1] == 1_900_000_000


def test_bad_arguments_say_what_is_wrong():
    stamps, q, targets, frames, resets = _recording()
    with pytest.raises(AlignmentError, match="not a whole number of control ticks"):
        align_episodes(stamps, q, stamps, targets, frames, reset_stamps_ns=resets, control_dt_ns=DT,
                       frame_period_ns=PERIOD + 1)
    with pytest.raises(ValueError, match="targets: 300 stamps but values of shape"):
        align_episodes(stamps, q, stamps, targets[:, 0], frames, reset_stamps_ns=resets, control_dt_ns=DT,
                       frame_period_ns=PERIOD)
    dup_q = q.copy()
    with pytest.raises(AlignmentError, match="two messages stamped 100000000 ns disagree"):
        align_episodes(np.r_[stamps, PERIOD], np.r_[dup_q, dup_q[:1] + 1], stamps, targets, frames,
                       reset_stamps_ns=resets, control_dt_ns=DT, frame_period_ns=PERIOD)


def test_a_bag_without_targets_is_refused_naming_the_topic(tmp_path):
    from robogym_ros.export.bag import plan_bag
    from robogym_ros.recorder.bag.format import BagError
    bag = _write_bag(tmp_path / "bag", n_episodes=1, episode_ticks=30, cameras=("overhead",), targets=False)[0]
    with pytest.raises(BagError, match="no per-tick targets .ground_truth/joint_targets"):
        plan_bag(bag)


def test_command_line_refuses_an_existing_out_and_says_what_to_install(tmp_path, capsys):
    from robogym_ros.export.lerobot import EXIT_USAGE, main
    (tmp_path / "taken").mkdir()
    assert main(["--rollouts", "1", "--out", str(tmp_path / "taken"), "--task", "t"]) == EXIT_USAGE
    assert "exists already" in capsys.readouterr().err
    try:
        import lerobot  # noqa: F401
    except ImportError:
        assert main(["--rollouts", "1", "--out", str(tmp_path / "new"), "--task", "t"]) == EXIT_USAGE
        assert "pip install -e '.[lerobot]'" in capsys.readouterr().err and not (tmp_path / "new").exists()


# ----------------------------------------------------------------------------- a bag from the sim's parts

W, H = 160, 120
CAMERAS = ("overhead", "left_wrist")


def _write_bag(path, *, n_episodes, episode_ticks, cameras=CAMERAS, targets=True, seed=0, poses=None):
    """The sim's physics stepped tick by tick, published as the sim would and recorded as the
    recorder would: joint_states, ground truth, per-tick targets (the servos' ctrl), run states
    at each reset, and frames of the sim's camera clock rendered by its renderer and lens.
    Returns (path, truth, images, episodes): truth = {stamp: (positions, targets)}, images =
    {(camera, stamp): image}, episodes = [(first tick stamp, last tick stamp)]."""
    from robogym_ros import contract
    from robogym_ros.camera.clock import CameraClock
    from robogym_ros.camera.lens import Lens
    from robogym_ros.contract import CameraSpec, JointSpec, RunState, Spec
    from robogym_ros.envs.pixels import FrameRenderer
    from robogym_ros.recorder.bag.writer import BagWriter
    from robogym_ros.sim.physics import Physics
    from robogym_ros.task.scene import default_model_path

    physics = Physics(default_model_path(), 0.002, 5, seed)
    dt = physics.control_dt_ns
    names = physics.joint_names
    lower = np.array([j.lower for j in physics.joints])
    upper = np.array([j.upper for j in physics.joints])
    spec = Spec(joints=tuple(JointSpec(j.name, lower=j.lower, upper=j.upper) for j in physics.joints),
                control_dt_ns=dt, physics_dt_ns=2_000_000, decimation=5, camera_frames="every_frame",
                cameras=tuple(CameraSpec(c, f"/cameras/{c}/image_raw", f"/cameras/{c}/camera_info", W, H,
                                         period_s=PERIOD / 1e9) for c in cameras))
    renderer = FrameRenderer(default_model_path(), cameras, Lens(W, H))
    clock = CameraClock(PERIOD)
    truth, images, episodes = {}, {}, []
    with BagWriter(path) as bag:
        bag.write_spec("/" + contract.SPEC_TOPIC, spec)

        def publish(tick):
            s = tick.stamp_ns
            ctrl = physics.data.ctrl[physics._actuators].copy()  # what the servos were driven to in this tick
            truth[s] = (tick.position.copy(), ctrl)
            bag.write_joint_state("/joint_states", s, names, tick.position, tick.velocity, tick.effort)
            bag.write_joint_state("/ground_truth/joint_states", s, names, tick.position, tick.velocity, tick.effort)
            if targets:
                bag.write_joint_state("/ground_truth/joint_targets", s, names, ctrl)
            bag.write_pose_array("/ground_truth/object_poses", s, tick.object_poses)
            if poses is not None:
                poses[s] = tick.object_poses.copy()
            if clock.due(s):
                for cam, img in renderer.render(tick).items():
                    images[(cam, s)] = img
                    bag.write_image(f"/cameras/{cam}/image_raw", s, W, H, img, frame_id=cam)

        state_topic = "/" + contract.STATE_TOPIC
        bag.write_string(state_topic, RunState(False, 0, "start").to_json(), latched=True)
        last = 0
        for e in range(n_episodes):
            if e:  # as the sim does: the reset tick published, then the run state stamped with it
                physics.reset_tick()
                publish(physics.snapshot())
                bag.write_string(state_topic, RunState(True, last + DT, "reset").to_json(), log_time_ns=last + DT,
                                 latched=True)
            centre = physics.snapshot().position
            first = last + DT  # the reset tick (episode 0: the sim's first tick)
            for k in range(episode_ticks):
                if k % 4 == 0:  # an agent at 25 Hz: a sweep around where the reset left the arms
                    t = k * dt / 1e9
                    goal = np.clip(centre + 0.3 * np.sin(2 * np.pi * (t / 1.5 + np.arange(len(names)) / 12)),
                                   lower, upper)
                    physics.set_targets(dict(zip(names, goal.tolist())))
                assert not physics.step_tick()
                tick = physics.snapshot()
                publish(tick)
                last = tick.stamp_ns
            episodes.append((first, last))
    renderer.close()
    return path, truth, images, episodes


lerobot_reason = "needs the optional lerobot extra (pip install -e '.[lerobot]'; lerobot 0.6 needs Python >= 3.12)"


@pytest.fixture(scope="module")
def exported_bag(tmp_path_factory):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import main
    root = tmp_path_factory.mktemp("lerobot")
    bag, truth, images, episodes = _write_bag(root / "bag", n_episodes=5, episode_ticks=120)
    out = root / "dataset"
    assert main(["--bag", str(bag), "--out", str(out), "--task", "hand the block over"]) == 0
    return truth, images, episodes, out


def _rows(out):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset("robogym_ros/dataset", root=out, video_backend="pyav")
    table = ds.hf_dataset.with_format("numpy")[:]
    return ds, {k: np.asarray(v) for k, v in table.items()}


def test_bag_export_loads_with_lerobot_and_holds_the_ground_truth(exported_bag):
    from robogym_ros.checks import frame_due_stamps
    truth, _, episodes, out = exported_bag
    ds, rows = _rows(out)
    assert ds.fps == 10 and ds.num_episodes == 5 and ds.meta.robot_type == "bi_so_follower"
    assert ds.features["observation.state"]["names"][0] == "left_shoulder_pan.pos"
    assert set(ds.meta.video_keys) == {f"observation.images.{c}" for c in CAMERAS}
    stamps = rows["sim_stamp_ns"].reshape(-1)
    state, action = rows["observation.state"], rows["action"]
    true_q = np.array([truth[s][0] for s in stamps])
    true_targets = np.array([truth[s + DT][1] for s in stamps])  # the targets of the tick after the frame
    # 0 error at the dataset's precision (float32, as LeRobot stores state and action)
    assert np.array_equal(state, true_q.astype(np.float32))
    assert np.array_equal(action, true_targets.astype(np.float32))
    rounding = float(np.abs(state - true_q).max())
    print(f"{len(stamps)} frames: state and action == ground truth at float32; float32 rounding {rounding:.2g} rad")
    assert rounding < 5e-7  # float32 rounding of angles below 4 rad
    # every episode's frame count as the camera schedule predicts: the frames due in its ticks, less the
    # one on its last tick (no next tick in the episode: no action)
    for e, (lo, hi) in enumerate(episodes):
        sel = rows["episode_index"] == e
        due = frame_due_stamps(lo, hi, PERIOD, DT)
        assert np.array_equal(stamps[sel], due[due < hi]), f"episode {e}: {stamps[sel]} vs {due}"
        assert np.array_equal(rows["frame_index"][sel], np.arange(sel.sum()))
        assert np.allclose(rows["timestamp"][sel], np.arange(sel.sum()) / ds.fps)
    print("frames per episode:", [int((rows["episode_index"] == e).sum()) for e in range(len(episodes))])


def test_decoded_video_frames_match_the_recorded_images_within_codec_error(exported_bag):
    _, images, _, out = exported_bag
    ds, rows = _rows(out)
    stamps = rows["sim_stamp_ns"].reshape(-1)
    episode = rows["episode_index"]
    errors, wrong = [], []
    for i in range(len(ds)):
        item = ds[i]  # LeRobot decodes the frame at this row's timestamp from the episode's mp4
        for cam in CAMERAS:
            decoded = (item[f"observation.images.{cam}"].numpy().transpose(1, 2, 0) * 255).round()
            errors.append(np.abs(decoded - images[(cam, int(stamps[i]))]))
            # the decoded frame is nearer its own recorded image than any other frame of its episode
            others = {int(s): np.abs(decoded - images[(cam, int(s))]).mean() for s in stamps[episode == episode[i]]}
            if min(others, key=others.get) != int(stamps[i]):
                wrong.append((cam, int(stamps[i]), min(others, key=others.get)))
    err = np.stack(errors)
    mean, p99 = float(err.mean()), float(np.percentile(err, 99))
    print(f"codec error over {len(errors)} decoded frames: mean {mean:.2f}, p99 {p99:.0f}, max {err.max():.0f} "
          f"(of 255)")
    # LeRobot's default encoder (libsvtav1, crf 30, yuv420p): about 2 levels on average, edges worst
    assert mean < 4.0 and p99 < 40
    assert not wrong, f"decoded frames nearer another frame than their own: {wrong[:5]}"


def test_slot_checks_pass_on_what_the_dataset_returns_and_catch_aliasing(exported_bag):
    from robogym_ros import checks
    truth, _, _, out = exported_bag
    ds, rows = _rows(out)
    stamps = rows["sim_stamp_ns"].reshape(-1)
    true_stamps = np.array(sorted(truth))
    true_q32 = np.array([truth[s][0] for s in true_stamps]).astype(np.float32).astype(np.float64)
    # what a training loop gets: one item per index, through LeRobot's __getitem__
    states = [ds.hf_dataset[i]["observation.state"] for i in range(len(ds))]
    states = [np.asarray(s, np.float64) for s in states]
    # the dataset's stream steps by one frame (1/fps): its FD velocity divides by that, not the tick
    results = checks.audit_observations(stamps, states, true_stamps, true_q32, control_dt_ns=PERIOD)
    print("slot checks on the dataset:", [(r.name, r.status, r.summary) for r in results])
    failed = [(r.name, r.summary) for r in results if r.status == "fail"]
    assert not failed, failed
    by_name = {r.name: r for r in results}
    assert by_name["slot_error"].figures["oldest_error"] == 0.0 and by_name["slot_error"].figures["max_error"] == 0.0
    # positive control: the same buffer holding references to the newest state is caught
    aliased = [states[-1]] * len(states)
    bad = {r.name: r.status for r in checks.audit_observations(stamps, aliased, true_stamps, true_q32,
                                                                control_dt_ns=PERIOD)}
    assert bad["aliasing"] == "fail" and bad["slot_error"] == "fail"


def test_a_failed_export_exits_1_and_leaves_nothing(tmp_path, capsys):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.lerobot import EXIT_FAILED, main
    bag = _write_bag(tmp_path / "bag", n_episodes=1, episode_ticks=30, cameras=("overhead",), targets=False)[0]
    assert main(["--bag", str(bag), "--out", str(tmp_path / "ds"), "--task", "t"]) == EXIT_FAILED
    assert "ground_truth/joint_targets" in capsys.readouterr().err and not (tmp_path / "ds").exists()
    assert main(["--bag", str(tmp_path / "nothing"), "--out", str(tmp_path / "ds"), "--task", "t"]) == EXIT_FAILED
    assert "bag not found" in capsys.readouterr().err and not (tmp_path / "ds").exists()


def test_rollouts_export_matches_a_replay_of_the_same_actions(tmp_path):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.rollouts import SweepPolicy, make_env, write_rollouts
    episodes = []
    write_rollouts(tmp_path / "ds", "hand the block over", 2, SweepPolicy, seed=3, max_steps=12, width_px=W,
                   height_px=H, on_episode=episodes.append)
    ds, rows = _rows(tmp_path / "ds")
    assert ds.fps == 25 and ds.num_episodes == 2 and len(ds) == 24
    env = make_env(width_px=W, height_px=H)
    try:
        for e, episode in enumerate(episodes):
            sel = rows["episode_index"] == e
            obs, info = env.reset(seed=3 + e)
            for k, f in enumerate(episode.frames):  # replayed: the state of each frame is the env's at that tick
                assert int(rows["sim_stamp_ns"].reshape(-1)[sel][k]) == info["stamp_ns"]
                assert np.array_equal(rows["observation.state"][sel][k], obs["observation"][:12].astype(np.float32))
                assert np.array_equal(rows["action"][sel][k], f.action.astype(np.float32))
                obs, *_, info = env.step(f.action)
    finally:
        env.close()


def test_environment_state_is_the_block_then_the_tray_pose_of_each_frames_tick(tmp_path):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.dataset import ENVIRONMENT_STATE, environment_state_names
    from robogym_ros.export.lerobot import main
    poses = {}
    bag = _write_bag(tmp_path / "bag", n_episodes=1, episode_ticks=60, cameras=("overhead",), poses=poses)[0]
    assert main(["--bag", str(bag), "--out", str(tmp_path / "ds"), "--task", "t", "--environment-state"]) == 0
    ds, rows = _rows(tmp_path / "ds")
    assert ds.features[ENVIRONMENT_STATE]["names"] == environment_state_names()
    assert environment_state_names()[:8] == ["block.x", "block.y", "block.z", "block.qw", "block.qx", "block.qy",
                                             "block.qz", "tray.x"] and environment_state_names()[-1] == "tray.qz"
    want = np.array([poses[int(s)][:2].reshape(-1) for s in rows["sim_stamp_ns"].reshape(-1)], np.float32)
    assert len(want) > 3 and np.array_equal(rows[ENVIRONMENT_STATE], want)


def test_a_rollout_episode_ends_once_success_has_held_the_arm_having_let_go():
    """The episode goes on past the first success until it has held for 1 s: its last frames show
    the placing gripper open and, in the physics, the block lying in the tray, touching no arm."""
    from robogym_ros.expert.runner import EnvExpert
    from robogym_ros.export.rollouts import hold_steps, make_env, rollouts
    from robogym_ros.task.placement import TRAY_INNER_HALF_M, quat_rotate_inverse
    env = make_env(cameras=())
    try:
        (episode,) = rollouts(env, 1, EnvExpert, seed=2)
        hold = hold_steps(env, 1.0)
        assert episode.outcome == "success" and hold == 25
        assert len(episode.frames) >= episode.first_success_step + hold - 1, (len(episode.frames), episode)
        placing = "left" if env._goal[1] > 0 else "right"
        for f in episode.frames[-3:]:  # the jaws open (0.55 rad released; shut is 0, holding ~0.35)
            assert f.state[env.joint_names.index(f"{placing}_gripper")] > 0.45, f.state
        block, tray = episode.frames[-1].environment_state.reshape(2, 7)
        rel = quat_rotate_inverse(tray[3:], block[:3] - tray[:3])
        assert (np.abs(rel[:2]) < TRAY_INNER_HALF_M).all() and rel[2] < 0.03, rel
        p = env._backend._physics  # the physics after the last action: no arm touches the block
        import mujoco
        mujoco.mj_forward(p.model, p.data)
        b = p.model.body("block").id
        others = {int(p.model.body_rootid[p.model.geom_bodyid[g]]) for c in p.data.contact[:p.data.ncon]
                  for g in c.geom if p.model.geom_bodyid[c.geom[0]] == b or p.model.geom_bodyid[c.geom[1]] == b}
        assert {p.model.body(r).name for r in others} <= {"world", "block", "tray"}, others
    finally:
        env.close()


def test_a_rollouts_dataset_replays_exactly_and_ends_with_the_block_released_in_the_tray(tmp_path, capsys):
    pytest.importorskip("lerobot", reason=lerobot_reason)
    import importlib.util
    from pathlib import Path

    from robogym_ros.expert.runner import EnvExpert
    from robogym_ros.export.dataset import ENVIRONMENT_STATE, SEED
    from robogym_ros.export.rollouts import write_rollouts
    write_rollouts(tmp_path / "ds", "hand the block over", 1, EnvExpert, seed=1, width_px=64, height_px=48,
                   environment_state=True)
    ds, rows = _rows(tmp_path / "ds")
    assert ds.num_episodes == 1 and (rows[SEED] == 1).all()
    last = rows[ENVIRONMENT_STATE][-1].reshape(2, 7)
    assert np.linalg.norm(last[0, :2] - last[1, :2]) < 0.04 and last[0, 2] < 0.03  # the block in the tray
    placing = "left_gripper.pos" if last[1, 1] > 0 else "right_gripper.pos"
    assert rows["observation.state"][-1][ds.features["observation.state"]["names"].index(placing)] > 0.45
    spec = importlib.util.spec_from_file_location("verify_rollouts", Path(__file__).parents[2] / "recipes" /
                                                  "verify_rollouts.py")
    verify = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verify)
    assert verify.main(["--dataset", str(tmp_path / "ds"), "--require-success"]) == 0, capsys.readouterr().out
    assert "OK: every episode replays" in capsys.readouterr().out
    # positive control: a hold the episode never had is named
    assert verify.main(["--dataset", str(tmp_path / "ds"), "--require-success", "--hold-s", "3"]) == 1
    assert "success held 1.00 s at the end, not 3 s" in capsys.readouterr().out


def test_a_state_only_rollouts_dataset_has_no_video_and_the_same_state_and_action(tmp_path, capsys):
    """--no-cameras: nothing rendered, no image feature, no video; the frames' state, action and
    environment state are those of the same seed's export with a camera (the camera changes nothing)."""
    pytest.importorskip("lerobot", reason=lerobot_reason)
    from robogym_ros.export.dataset import ENVIRONMENT_STATE, IMAGE_PREFIX
    from robogym_ros.export.lerobot import EXIT_USAGE, main
    common = ["--rollouts", "1", "--seed", "4", "--policy", "sweep", "--max-steps", "10", "--task", "t",
              "--environment-state"]
    assert main([*common, "--out", str(tmp_path / "state"), "--no-cameras"]) == 0
    assert "cameras none" in capsys.readouterr().out
    assert main([*common, "--out", str(tmp_path / "pixels")]) == 0
    state, state_rows = _rows(tmp_path / "state")
    pixels, pixels_rows = _rows(tmp_path / "pixels")
    assert not [k for k in state.features if k.startswith(IMAGE_PREFIX)] and not state.meta.video_keys
    assert not list((tmp_path / "state").rglob("*.mp4")) and list((tmp_path / "pixels").rglob("*.mp4"))
    assert len(state) == len(pixels) == 10
    for key in ("observation.state", "action", ENVIRONMENT_STATE, "sim_stamp_ns"):
        assert np.array_equal(state_rows[key], pixels_rows[key]), key
    # a bag's frames are its camera frames: --no-cameras is refused there, nothing written
    capsys.readouterr()
    assert main(["--bag", str(tmp_path / "any"), "--out", str(tmp_path / "b"), "--task", "t", "--no-cameras"]) \
        == EXIT_USAGE
    assert "--no-cameras is for --rollouts" in capsys.readouterr().err and not (tmp_path / "b").exists()
    # the layouts are the rollouts' (a bag has no expert targets to make relative), and the grasp
    # frames are part of the environment state: refused, nothing written
    for flag in ("--grasp-frames", "--symmetric-objects", "--relative-actions"):
        assert main(["--bag", str(tmp_path / "any"), "--out", str(tmp_path / "b"), "--task", "t", flag]) == EXIT_USAGE
        assert "are for --rollouts" in capsys.readouterr().err and not (tmp_path / "b").exists()
    for flag in ("--grasp-frames", "--symmetric-objects"):
        assert main([*common[:-1], "--out", str(tmp_path / "g"), flag]) == EXIT_USAGE
        assert f"{flag} needs --environment-state" in capsys.readouterr().err and not (tmp_path / "g").exists()
    assert main([*common, "--out", str(tmp_path / "g"), "--grasp-frames", "--symmetric-objects"]) == EXIT_USAGE
    assert "two layouts of the environment state" in capsys.readouterr().err and not (tmp_path / "g").exists()


# ----------------------------------------------------------------------------- a bag from the real recorder

def _ros_python() -> str | None:
    """A Python with rclpy for the sim and the recorder: this one, ROBOGYM_ROS_PYTHON, or ./dev's .venv
    (LeRobot's venv, Python >= 3.12, has no rclpy)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    for python in (sys.executable, os.environ.get("ROBOGYM_ROS_PYTHON"),
                   str(Path(__file__).parents[2] / ".venv" / "bin" / "python")):
        if python and subprocess.run([python, "-c", "import rclpy"], capture_output=True).returncode == 0:
            return python
    return None


def test_a_real_recorder_bag_exports_to_a_dataset_holding_what_the_sim_published(tmp_path):
    """A real sim recorded by the real recorder (test/realbag.py: 3 episodes, a command each, two
    resets), exported, and loaded with LeRobotDataset: state and action equal what the sim published
    live (at float32), episodes cut at the sim's reset ticks, frames as the camera schedule predicts."""
    pytest.importorskip("lerobot", reason=lerobot_reason)
    import subprocess
    from pathlib import Path

    from realbag import check_episodes, load_live

    from robogym_ros.export.lerobot import main
    python = _ros_python()
    if python is None:
        pytest.skip("needs a Python with rclpy for the sim and the recorder (./dev's .venv, or ROBOGYM_ROS_PYTHON)")
    realbag = Path(__file__).parents[1] / "harness" / "realbag.py"
    run = subprocess.run([python, str(realbag), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    live = load_live(tmp_path / "live.json")
    assert main(["--bag", str(tmp_path / "bag"), "--out", str(tmp_path / "ds"), "--task", "t"]) == 0
    ds, rows = _rows(tmp_path / "ds")
    assert ds.num_episodes == len(live["commands"]) and ds.fps == round(1e9 / live["period_ns"])
    stamps = rows["sim_stamp_ns"].reshape(-1)
    episodes = []
    for e in range(ds.num_episodes):
        sel = rows["episode_index"] == e
        # the dataset knows frames, not ticks: its first tick is the reset tick before its first frame
        first = live["resets"][e - 1] if e else live["control_dt_ns"]
        episodes.append((first, None, stamps[sel], rows["observation.state"][sel], rows["action"][sel]))
    # LeRobot stores float32: compare with the live values at that precision
    f32 = {**live, **{k: {s: v.astype(np.float32) for s, v in live[k].items()} for k in ("truth", "targets")}}
    check_episodes(episodes, f32)
    print(f"{len(stamps)} frames in {ds.num_episodes} episodes: state and action == what the sim published live "
          f"(float32)")
