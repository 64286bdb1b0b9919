"""Headless Chromium for page tests: the rendered DOM, a screenshot, and every request the page made.

Chromium starts with the flags FACTS.md lists, plus two that keep anything
from leaving the machine whatever the browser itself tries (its component
updater and account check still start requests): every host name resolves to
nothing, and every HTTP(S) request goes to a local port where nobody listens.
The net log then tells the page's own requests (initiator ``null`` for a
``file://`` page) from the browser's (initiator "not an origin").
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .local_net import free_port

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def executable() -> str:
    """The chromium binary; a test that needs it FAILS (never skips) without it."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("headless Chromium is needed and not installed: apt-get install -y chromium "
                    "(./install.sh --test installs it when missing)")
    return exe


@dataclass
class Rendered:
    dom: str
    screenshot: Path
    page_requests: list[str]  # URLs the page itself asked for, beyond file: and data:


def page_requests(netlog: Path) -> list[str]:
    """URLs requested by the page (not by the browser's own services), from a Chromium net log."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        if event["type"] == start and params.get("url") and params.get("initiator") != "not an origin":
            if not params["url"].startswith(("file:", "data:")):
                urls.append(params["url"])
    return urls


def render(page: Path, tmp: Path, size: tuple[int, int] = (1200, 2400)) -> Rendered:
    """Open ``page`` in headless Chromium: its rendered DOM, a screenshot, the requests it made."""
    base = [executable(), *FLAGS, "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--proxy-server=127.0.0.1:{free_port()}", f"--window-size={size[0]},{size[1]}"]
    url = page.resolve().as_uri()
    netlog, shot = tmp / "netlog.json", tmp / "screenshot.png"
    dom = subprocess.run([*base, f"--user-data-dir={tmp / 'profile-dom'}", f"--log-net-log={netlog}",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True).stdout
    subprocess.run([*base, f"--user-data-dir={tmp / 'profile-shot'}", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    return Rendered(dom=dom, screenshot=shot, page_requests=page_requests(netlog))


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
