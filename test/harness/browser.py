"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no WebDriver, no websocket library, only Debian's ``chromium`` package.

The browser reads commands on fd 3 and writes replies and events on fd 4, each a JSON
object ended by a NUL byte.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, width_px: int = 1200, height_px: int = 900, timeout_s: float = 60.0):
        path = chromium_path()
        if path is None:
            raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
        self.timeout_s = timeout_s
        self._profile = tempfile.mkdtemp(prefix="robogym_chromium_")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def as_fds_3_and_4():  # the child must see the pipes as fds 3 and 4 exactly
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width_px},{height_px}",
             "about:blank"],
            pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=as_fds_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Page.enable", session=True)
            self.call("Emulation.setDeviceMetricsOverride", session=True, width=width_px, height=height_px,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()  # a browser that never answered is not left running
            raise

    def _send(self, message: dict) -> None:
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            # A read with nothing to read blocks for good: wait for bytes only until the deadline.
            left_s = deadline - time.monotonic()
            if left_s <= 0 or not select.select([self._from_browser], [], [], left_s)[0]:
                raise TimeoutError(f"no answer from chromium within {self.timeout_s:g} s")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while True:
            for k, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(k)
            self.events.append(self._receive(deadline))

    def open(self, path: Path) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=Path(path).resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def fit_page(self) -> None:
        """Make the viewport as tall as the page: nothing scrolls, so element positions measured in
        the page are the pixels of a screenshot (a scrollbar would narrow the layout and move them)."""
        width = self.evaluate("innerWidth")
        height = self.evaluate("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def screenshot(self, png: Path) -> Path:
        """The whole page, its pixels where fit_page's layout puts the elements."""
        self.fit_page()
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=False)["data"]
        Path(png).write_bytes(base64.b64decode(data))
        return Path(png)

    def close(self) -> None:
        self.timeout_s = min(self.timeout_s, 5.0)
        answered = False
        try:
            self.call("Browser.close")
            answered = True
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(10 if answered else 0)  # one that does not answer is killed at once
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
