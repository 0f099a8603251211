"""The viewer's HTTP server (standard library only): the page, the frames, the run state, and
buttons that call the sim's own services.

- ``GET /``: the page (robogym_ros.live.viewer_page).
- ``GET /frames``: ``multipart/x-mixed-replace`` JPEG (MJPEG, what browsers and video tools
  read), one part per encoded frame with its tick's stamp in ``X-Stamp-Ns``. Each connection
  sends the newest frame the hub has, then waits for a newer one: a slow viewer skips
  frames, never queues them (the socket's send buffer is kept small for that). A part is
  followed at once by the next boundary, so a reader never waits for the next frame to know
  this one is whole (a paused sim may send no next frame for a long time).
- ``GET /events``: Server-Sent Events, one ``data:`` JSON line per change of the run state.
- ``GET /state``: the run state and the viewer's own figures, as JSON.
- ``POST /control/<pause|resume|step|reset>``: calls the sim's service, answers its result.

Beyond localhost every request must carry the token; on localhost a request must name a loopback
``Host``; a foreign ``Origin`` is refused, and a POST must say ``Content-Type: application/json``
(robogym_ros.live.guard: the same rules as robogym_mcp's HTTP transport).
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit

from robogym_ros.live.guard import bearer_matches, query_token_matches, request_refusal
from robogym_ros.live.hub import FrameHub
from robogym_ros.live.latest import Latest

CONTROLS = ("pause", "resume", "step", "reset")
BOUNDARY = "frame"
# A few frames in flight (the kernel doubles it: 32 KiB; a frame of three 320x240 cameras is
# ~12-40 KB): a slow viewer's next frame is the newest, not one of many queued in the socket.
SEND_BUFFER_BYTES = 16 * 1024
KEEPALIVE_S = 15.0  # an event-stream comment this often, so proxies keep the stream open


class ViewerServer:
    """Serves one sim's view on ``host:port`` (port 0: any free port; see ``port``)."""

    def __init__(self, host: str, port: int, *, hub: FrameHub, state: Latest[dict], page: str,
                 control: Callable[[str], dict], token: str | None = None):
        self.bind_host = host
        self.hub, self.state, self.page, self.control, self.token = hub, state, page.encode(), control, token
        self._lock = threading.Lock()
        self.viewers = 0  # open frame streams
        self.frames_sent = 0
        self.refused = 0
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="viewer_http", daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def host(self) -> str:
        return self._httpd.server_address[0]

    def start(self) -> "ViewerServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self.hub.frames.close()
        self.state.close()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(2.0)

    def figures(self) -> dict:
        with self._lock:
            return {"viewers": self.viewers, "frames_offered": self.hub.offered, "frames_encoded": self.hub.encoded,
                    "frames_sent": self.frames_sent, "encode_errors": self.hub.errors, "refused": self.refused}

    def _count(self, name: str, delta: int) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + delta)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "robogym_viewer"

            def log_message(self, *_args) -> None:  # no line per request on the node's console
                pass

            def _allowed(self) -> bool:
                headers = {key.lower(): value for key, value in self.headers.items()}
                refusal = request_refusal(self.command, headers, server.bind_host)
                if refusal is not None:
                    server._count("refused", 1)
                    self._send(refusal[0], refusal[1].encode(), "text/plain; charset=utf-8")
                    return False
                if server.token is None:
                    return True
                url = urlsplit(self.path)
                if bearer_matches(self.headers.get("Authorization"), server.token) or \
                        query_token_matches(url.query, server.token):
                    return True
                server._count("refused", 1)
                self._send(401, b"401 Unauthorized: add ?token=<token> to the address\n", "text/plain; charset=utf-8",
                           extra=[("WWW-Authenticate", 'Bearer realm="robogym"')])
                return False

            def _send(self, status: int, body: bytes, mime: str, extra=()) -> None:
                self.send_response(status)
                self.send_header("Content-Type", mime)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for key, value in extra:
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, value) -> None:
                self._send(status, json.dumps(value).encode(), "application/json")

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if not self._allowed():
                    return
                path = urlsplit(self.path).path
                if path == "/":
                    self._send(200, server.page, "text/html; charset=utf-8")
                elif path == "/frames":
                    self._frames()
                elif path == "/events":
                    self._events()
                elif path == "/state":
                    self._json(200, {"state": server.state.get()[1], "viewer": server.figures()})
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def do_POST(self) -> None:  # noqa: N802
                if not self._allowed():
                    return
                path = urlsplit(self.path).path
                name = path.removeprefix("/control/")
                if not path.startswith("/control/") or name not in CONTROLS:
                    self._json(404, {"ok": False, "message": f"no control {path!r}; controls: {', '.join(CONTROLS)}"})
                    return
                self._json(200, server.control(name))

            def _stream_headers(self, mime: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", mime)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()

            def _frames(self) -> None:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
                self._stream_headers(f"multipart/x-mixed-replace; boundary={BOUNDARY}")
                server._count("viewers", 1)
                try:
                    self.wfile.write(f"--{BOUNDARY}\r\n".encode())
                    seq, frame = server.hub.frames.get()
                    while not server.hub.frames.closed:
                        if frame is not None:
                            head = (f"Content-Type: {frame.mime}\r\nContent-Length: {len(frame.data)}\r\n"
                                    f"X-Stamp-Ns: {frame.stamp_ns}\r\n\r\n").encode()
                            self.wfile.write(head + frame.data + f"\r\n--{BOUNDARY}\r\n".encode())
                            self.wfile.flush()
                            server._count("frames_sent", 1)
                        seq, frame = server.hub.frames.wait_newer(seq, 1.0)  # the newest, however many passed
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass  # the viewer went away
                finally:
                    server._count("viewers", -1)

            def _events(self) -> None:
                self._stream_headers("text/event-stream")
                try:
                    seq, state = server.state.get()
                    while not server.state.closed:
                        if state is not None:
                            self.wfile.write(f"data: {json.dumps(state, sort_keys=True)}\n\n".encode())
                        else:
                            self.wfile.write(b": keepalive\n\n")
                        self.wfile.flush()
                        seq, state = server.state.wait_newer(seq, KEEPALIVE_S)
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass

        return Handler
