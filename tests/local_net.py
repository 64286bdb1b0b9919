"""What the tests serve or refuse on 127.0.0.1: a free port, and an HTTP server in a thread.

A port from :func:`free_port` has nothing listening on it once returned: a test
uses it for a server it starts later, or as an endpoint that is down (requests
to it are refused on this machine).
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    """A local port nothing listens on (the system's choice of a free one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalHTTPServer:
    """``handler`` served on 127.0.0.1 by a thread, from ``with`` until its end; ``port`` is where."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # shutdown() waits up to one poll
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.httpd.server_address[1])

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
