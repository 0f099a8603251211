"""The live/ tier without ROS: frames joined by tick, observations, the newest-value board, the
frame hub (encoded once whatever the number of viewers) and the viewer's HTTP server (a slow
viewer skips ahead; a paused sim sends nothing), with real sockets and real JPEG."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import cv2
import numpy as np
import pytest

from robogym_ros.live.frames import Frame, FrameSet, FrameSets
from robogym_ros.live.hub import FrameHub
from robogym_ros.live.images import jpeg, png, side_by_side
from robogym_ros.live.latest import Latest
from robogym_ros.live.observation import ObservationBuffer
from robogym_ros.live.viewer_page import page
from robogym_ros.live.viewer_server import ViewerServer

CAMERAS = ("left_wrist", "right_wrist", "overhead")
W, H = 32, 24


def frame(camera: str, stamp_ns: int, value: int | None = None) -> Frame:
    """A camera's image whose pixels say which camera and which tick it is."""
    pixels = np.full((H, W, 3), (stamp_ns // 10_000_000 + CAMERAS.index(camera) * 50) % 256 if value is None else value,
                     np.uint8)
    return Frame(camera, stamp_ns, W, H, "rgb8", 3 * W, pixels.nbytes, pixels.tobytes())


# --- frames of one tick ---------------------------------------------------------------------

def test_a_set_is_complete_only_with_every_camera_of_one_stamp_and_never_mixes_ticks():
    sets = FrameSets(CAMERAS)
    assert sets.add(frame("left_wrist", 10)) is None
    assert sets.add(frame("right_wrist", 10)) is None
    assert sets.add(frame("overhead", 20)) is None  # another tick: does not complete tick 10
    done = sets.add(frame("overhead", 10))
    assert done is not None and done.stamp_ns == 10
    assert [f.camera for f in done.frames] == list(CAMERAS) and {f.stamp_ns for f in done.frames} == {10}
    # tick 20 completes; tick 30's partial set, older than nothing, stays until 20 is whole
    sets.add(frame("left_wrist", 30))
    sets.add(frame("left_wrist", 20))
    assert sets.add(frame("right_wrist", 20)).stamp_ns == 20
    assert sets.newest.stamp_ns == 20 and sets.dropped == 0
    assert sets.add(frame("overhead", 20)) is None  # a duplicate of a complete set


def test_a_partial_set_older_than_a_complete_one_is_dropped_and_a_stamp_going_back_starts_over():
    sets = FrameSets(CAMERAS)
    sets.add(frame("left_wrist", 10))  # 10 never completes
    for cam in CAMERAS:
        sets.add(frame(cam, 20))
    assert sets.newest.stamp_ns == 20 and sets.dropped == 1
    assert sets.add(frame("right_wrist", 10)) is None  # before the newest set: a new sim's tick
    assert sets.newest is None  # started over
    for cam in CAMERAS:
        sets.add(frame(cam, 10))
    assert sets.newest.stamp_ns == 10


def test_the_observation_joins_the_newest_frame_set_with_the_joints_of_that_very_tick():
    names = ["a", "b", "c"]
    buf = ObservationBuffer(names, CAMERAS)
    for k in range(1, 26):  # joint ticks every 10 ms, frames every 100 ms, arriving late
        buf.add_joints(k * 10, ["c", "a", "b"], [k + 0.3, k + 0.1, k + 0.2], [0.0, 0.0, 0.0])  # another order
    for cam in CAMERAS:
        buf.add_frame(frame(cam, 100))
        buf.add_frame(frame(cam, 200))
    buf.add_frame(frame("left_wrist", 250))  # partial: not yet an observation
    obs = buf.newest(images=True)
    assert obs.stamp_ns == 200 and obs.frames.stamp_ns == 200 and obs.newest_stamp_ns == 250
    assert obs.joints.stamp_ns == 200 and obs.joints.position.tolist() == [20.1, 20.2, 20.3]  # realigned by name
    assert buf.newest(images=False).stamp_ns == 250
    # a frame set whose tick's joints never came is no observation: the older one stands
    for cam in CAMERAS:
        buf.add_frame(frame(cam, 300))
    assert buf.newest(images=True).stamp_ns == 200
    buf.add_joints(300, names, [1.0, 2.0, 3.0], [])
    assert buf.newest(images=True).stamp_ns == 300
    assert np.isnan(buf.newest(images=True).joints.velocity).all()  # none published: NaN, not zeros
    assert np.isnan(buf.newest(images=True).joints.effort).all()
    buf.add_joints(310, ["c", "a", "b"], [0.0, 0.0, 0.0], [], [3.5, 1.5, 2.5])
    assert buf.newest(images=False).joints.effort.tolist() == [1.5, 2.5, 3.5]  # realigned by name
    # the servo targets of a tick, on a topic of their own: joined by stamp, in the buffer's order
    assert buf.newest(images=False).targets is None and buf.targets_at(310, timeout_s=0.05) is None
    assert not buf.has_targets
    buf.add_targets(310, ["b", "c", "a"], [0.2, 0.3, 0.1])
    assert buf.has_targets
    assert buf.newest(images=False).targets.tolist() == [0.1, 0.2, 0.3]
    assert buf.targets_at(310).tolist() == [0.1, 0.2, 0.3]
    # a tick whose targets were overtaken by a later tick's: lost, said at once rather than waited for
    started = time.monotonic()
    assert buf.targets_at(300, timeout_s=5.0) is None
    assert time.monotonic() - started < 1.0


def test_waiting_for_a_ticks_targets_wakes_when_they_come():
    buf = ObservationBuffer(["a"], CAMERAS)
    buf.add_targets(100, ["a"], [0.5])
    threading.Timer(0.3, buf.add_targets, (200, ["a"], [0.7])).start()
    assert buf.targets_at(200, timeout_s=10.0).tolist() == [0.7]


def test_waiting_for_a_newer_observation_is_bounded_and_wakes_on_completion():
    buf = ObservationBuffer(["a"], CAMERAS)
    seq = buf.seq(images=True)
    started = time.monotonic()
    assert not buf.wait_newer(seq, images=True, timeout_s=0.2)
    assert 0.19 < time.monotonic() - started < 2.0
    buf.add_joints(10, ["a"], [1.0], [0.0])

    def complete():
        time.sleep(0.1)
        for cam in CAMERAS:
            buf.add_frame(frame(cam, 10))
    threading.Thread(target=complete).start()
    assert buf.wait_newer(seq, images=True, timeout_s=5.0)
    assert buf.newest(images=True).stamp_ns == 10


def test_latest_gives_a_slow_reader_the_newest_value_only():
    board: Latest[int] = Latest()
    seq, value = board.get()
    for v in range(10):
        board.publish(v)
    seq, value = board.wait_newer(seq, 1.0)
    assert value == 9 and seq == 10  # 0..8 skipped, not queued
    assert board.wait_newer(seq, 0.05) == (seq, None)
    assert not board.publish(9, only_if_changed=True) and board.get()[0] == 10  # no news: no wake-up


def test_png_is_lossless_and_the_row_shows_each_camera_in_order():
    fs = FrameSet(100, tuple(frame(c, 100) for c in CAMERAS))
    decoded = cv2.imdecode(np.frombuffer(png(fs.frames[0]), np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    assert np.array_equal(decoded, fs.frames[0].rgb())
    row = side_by_side(fs)
    assert row.shape == (H, 3 * W, 3)
    assert [int(row[0, k * W, 0]) for k in range(3)] == [int(f.rgb()[0, 0, 0]) for f in fs.frames]
    with pytest.raises(ValueError, match="overhead: encoding 'mono16'"):
        Frame("overhead", 0, W, H, "mono16", 2 * W, 2 * W * H, bytes(2 * W * H)).rgb()


# --- the hub and the server -------------------------------------------------------------------

class CountingEncoder:
    def __init__(self):
        self.calls = 0

    def __call__(self, frame_set: FrameSet) -> bytes:
        self.calls += 1
        return jpeg(side_by_side(frame_set))


def read_part(sock_file) -> tuple[int, bytes]:
    """One part of a /frames stream: (stamp_ns, jpeg bytes)."""
    headers = {}
    while True:
        line = sock_file.readline()
        if not line:
            raise EOFError("stream ended")
        line = line.strip()
        if not line or line == b"--frame":
            if headers:
                break
            continue
        key, _, value = line.decode().partition(":")
        headers[key.strip().lower()] = value.strip()
    data = sock_file.read(int(headers["content-length"]))
    return int(headers["x-stamp-ns"]), data


def open_stream(port: int, path: str = "/frames", rcvbuf: int | None = None):
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    f = sock.makefile("rb")
    status = f.readline()
    while f.readline() not in (b"\r\n", b""):
        pass
    return sock, f, status


@pytest.fixture
def served():
    encoder = CountingEncoder()
    hub = FrameHub(encoder)
    state: Latest[dict] = Latest()
    calls = []
    server = ViewerServer("127.0.0.1", 0, hub=hub, state=state, page=page("/t"),
                          control=lambda name: calls.append(name) or {"ok": True, "message": name}).start()
    yield server, hub, encoder, state, calls
    server.close()
    hub.close()


def offer_tick(hub: FrameHub, k: int) -> None:
    hub.offer(FrameSet(k * 10_000_000, tuple(frame(c, k * 10_000_000) for c in CAMERAS)))


def test_each_frame_is_encoded_once_for_every_viewer(served):
    server, hub, encoder, _state, _calls = served
    viewers = [open_stream(server.port) for _ in range(3)]
    time.sleep(0.2)
    stamps = {k: [] for k in range(3)}
    for k in range(1, 6):
        offer_tick(hub, k * 10)
        for i, (_s, f, _st) in enumerate(viewers):
            stamp, data = read_part(f)
            stamps[i].append(stamp)
            assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).shape == (H, 3 * W, 3)
    assert all(s == [k * 100_000_000 for k in range(1, 6)] for s in stamps.values())
    assert encoder.calls == 5 and hub.encoded == 5  # not 15
    assert server.figures()["viewers"] == 3
    for sock, f, _ in viewers:
        f.close()
        sock.close()


def test_a_slow_viewer_skips_to_the_newest_frame_and_a_quiet_hub_sends_nothing():
    """Frames of the size the sim's three cameras give (~12 KB); the viewer reads nothing while
    200 frames pass, then reads on: it gets a few frames (what the socket buffers held), then
    the newest, and then nothing, as nothing new comes."""
    hub = FrameHub(lambda fs: fs.stamp_ns.to_bytes(8, "big") * 1500)
    server = ViewerServer("127.0.0.1", 0, hub=hub, state=Latest(), page=page("/t"),
                          control=lambda name: {"ok": True, "message": name}).start()
    try:
        slow_viewer(server, hub)
    finally:
        server.close()
        hub.close()


def slow_viewer(server: ViewerServer, hub: FrameHub) -> None:
    offer_tick(hub, 1)
    time.sleep(0.2)
    sock, f, status = open_stream(server.port, rcvbuf=4096)
    assert b"200" in status
    assert read_part(f)[0] == 10_000_000  # a new viewer gets the newest frame at once
    for k in range(2, 202):  # 200 frames while the viewer reads nothing
        offer_tick(hub, k)
        time.sleep(0.002)
    time.sleep(0.3)
    got = []
    sock.settimeout(2.0)
    try:
        while True:
            got.append(read_part(f)[0])
    except (TimeoutError, socket.timeout):
        pass  # nothing new: the stream is quiet, as a paused sim's is
    assert got and got[-1] == 201 * 10_000_000, got[-3:]
    assert len(got) < 10, f"{len(got)} of 200 frames queued for a slow viewer: it fell behind instead of skipping"
    f.close()
    sock.close()


def test_the_page_events_and_controls(served):
    server, _hub, _encoder, state, calls = served
    base = f"http://127.0.0.1:{server.port}"
    assert b"robogym viewer: /t" in urllib.request.urlopen(base + "/").read()
    state.publish({"paused": True, "sim_time_s": 1.0})
    sock, f, _ = open_stream(server.port, "/events")
    assert json.loads(f.readline().decode().removeprefix("data: ")) == {"paused": True, "sim_time_s": 1.0}
    answer = json.load(urllib.request.urlopen(post(base + "/control/pause")))
    assert answer == {"ok": True, "message": "pause"} and calls == ["pause"]
    with pytest.raises(urllib.error.HTTPError, match="404"):
        urllib.request.urlopen(post(base + "/control/explode"))
    assert calls == ["pause"]
    f.close()
    sock.close()


def post(url: str, **headers: str) -> urllib.request.Request:
    """A POST as the viewer's page sends it (JSON), with ``headers`` on top (``_`` for ``-``)."""
    return urllib.request.Request(url, data=b"{}", method="POST", headers={
        "Content-Type": "application/json", **{k.replace("_", "-"): v for k, v in headers.items()}})


def status_of(request) -> int:
    try:
        return urllib.request.urlopen(request).status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_another_origin_a_foreign_host_or_a_simple_post_is_refused_and_changes_nothing(served):
    """What a web page can do to a viewer on localhost: a "simple" POST (text/plain, no
    preflight), a POST from its own origin, and reading the state through DNS rebinding (its
    name, resolved to 127.0.0.1, in the Host header). None reaches a control."""
    server, _hub, _encoder, state, calls = served
    base = f"http://127.0.0.1:{server.port}"
    state.publish({"paused": False})
    simple = urllib.request.Request(base + "/control/pause", data=b"x", method="POST",
                                    headers={"Content-Type": "text/plain", "Origin": f"http://127.0.0.1:{server.port}"})
    assert status_of(simple) == 400
    assert status_of(urllib.request.Request(base + "/control/reset", method="POST")) == 400  # no content type
    assert status_of(post(base + "/control/pause", Origin="http://evil.example")) == 403
    assert status_of(post(base + "/control/step", Origin=f"http://127.0.0.1.evil.example:{server.port}")) == 403
    for path in ("/state", "/", "/frames", "/events"):
        assert status_of(urllib.request.Request(base + path, headers={"Host": f"rebind.evil.example:{server.port}"})) \
            == 421, path
    assert status_of(post(base + "/control/pause", Host=f"evil.example:{server.port}")) == 421
    assert calls == [] and server.refused == 9
    # the page's own requests, as a browser sends them, still work
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}"):
        assert status_of(urllib.request.Request(base + "/state", headers={"Host": host})) == 200
        assert status_of(post(base + "/control/step", Host=host, Origin=f"http://{host}")) == 200
    assert calls == ["step", "step"]


def test_the_viewer_and_the_mcp_transport_apply_the_same_lists():
    """The MCP SDK checks the lists robogym_mcp gives it; the viewer checks the same lists."""
    from robogym_ros.live.guard import allowed_hosts, allowed_origins, request_refusal
    json_post = {"content-type": "application/json"}
    for host in ("127.0.0.1:8080", "localhost:1", "[::1]:65535"):
        assert request_refusal("POST", {**json_post, "host": host, "origin": f"http://{host}"}, "127.0.0.1") is None
    assert request_refusal("GET", {"host": "127.0.0.1:80x"}, "127.0.0.1")[0] == 421
    assert request_refusal("GET", {"host": "127.0.0.1"}, "127.0.0.1")[0] == 421  # no port: not what it serves
    assert allowed_hosts("0.0.0.0") is None and allowed_origins("0.0.0.0") is None  # beyond localhost: the token
    robot = {**json_post, "host": "robot:8080"}
    assert request_refusal("POST", {**robot, "origin": "http://robot:8080"}, "0.0.0.0") is None
    assert request_refusal("POST", {**json_post, "host": "robot:8080", "origin": "http://evil.example"},
                           "0.0.0.0")[0] == 403


def test_a_server_with_a_token_refuses_requests_without_it():
    hub = FrameHub(CountingEncoder())
    server = ViewerServer("127.0.0.1", 0, hub=hub, state=Latest(), page=page("/t"),
                          control=lambda name: {"ok": True, "message": name}, token="s3cret-token-0123456789").start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        for url in (base + "/", base + "/frames", base + "/?token=wrong"):
            with pytest.raises(urllib.error.HTTPError, match="401"):
                urllib.request.urlopen(url)
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(post(base + "/control/reset"))
        assert b"robogym viewer" in urllib.request.urlopen(base + "/?token=s3cret-token-0123456789").read()
        request = urllib.request.Request(base + "/state", headers={"Authorization": "Bearer s3cret-token-0123456789"})
        assert "viewer" in json.load(urllib.request.urlopen(request))
        assert server.refused == 4
    finally:
        server.close()
        hub.close()
