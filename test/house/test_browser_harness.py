"""The browser harness never waits longer than its timeout: a Chromium that never answers (one that
hangs at start, as a broken install does) is a TimeoutError, and is not left running."""
from __future__ import annotations

import os
import time

import pytest
from browser import Browser


def test_a_chromium_that_never_answers_is_a_timeout_and_is_killed(tmp_path, monkeypatch):
    fake = tmp_path / "chromium"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'pid'}\nexec sleep 1000\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="no answer from chromium within 2 s"):
        Browser(timeout_s=2.0)
    assert time.monotonic() - t0 < 2 * 2.0 + 3.0  # its timeout, close()'s, and a margin
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
