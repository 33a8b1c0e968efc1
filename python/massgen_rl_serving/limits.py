"""What `serve` accepts over HTTP before a request reaches the app: connections in all and per client address, the
size of the request line and headers, and how long a client may take to send its request or to read the response.

A connection past a limit is answered 503 on the accepting thread (no handler thread is started for it). The request
line, headers and body must arrive within --request-timeout-s of their first byte (the wait for a keep-alive
connection's next request has the same bound); the reader below sets the socket's timeout to what is left before each
receive, so a client that trickles a byte at a time is cut off as surely as one that sends nothing.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

# The kernel's send buffer of a connection (it doubles the figure): a client that stops reading a response has
# this much queued for it, not the megabytes Linux would otherwise grow it to, before --write-timeout-s runs.
SEND_BUFFER_BYTES = 256 * 1024


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 32 * 1024 * 1024
    max_header_bytes: int = 64 * 1024  # the request line and every header line together
    max_headers: int = 100  # http.client refuses more than 100 in any case
    max_connections: int = 1024
    max_connections_per_client: int = 512
    request_timeout_s: float = 60.0
    write_timeout_s: float = 60.0


class HeadersTooLarge(Exception):
    """The request line and headers went past --max-header-bytes or --max-headers."""


class Slots:
    """Open connections, in all and per client address."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._per_client: Counter[str] = Counter()
        self.total = 0

    def take(self, client: str) -> str | None:
        """None when the connection may go on (release it later), else why not."""
        with self._lock:
            if self.total >= self.limits.max_connections:
                return f"the server has {self.limits.max_connections} connections open (--max-connections)"
            if self._per_client[client] >= self.limits.max_connections_per_client:
                return (
                    f"{client} has {self.limits.max_connections_per_client} connections open "
                    "(--max-connections-per-client)"
                )
            self.total += 1
            self._per_client[client] += 1
            return None

    def release(self, client: str) -> None:
        with self._lock:
            self.total -= 1
            self._per_client[client] -= 1
            if not self._per_client[client]:
                del self._per_client[client]


def refuse(sock: socket.socket, error: dict[str, Any]) -> None:
    """A 503 written without blocking: a fresh connection's send buffer is empty, so it fits."""
    body = json.dumps(error).encode("utf-8")
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("ascii")
    try:
        sock.setblocking(False)
        sock.send(head + body)
        sock.recv(65536)  # what already came: closing on unread bytes resets the connection
    except OSError:
        pass


class Reader:
    """The handler's rfile: readline() for the request line and headers within their byte and line budget, read()
    for the body, each before a deadline (none: plain reads)."""

    def __init__(self, raw: Any, sock: socket.socket, limits: Limits) -> None:
        self.raw = raw
        self.sock = sock
        self.limits = limits
        self.deadline: float | None = None
        self._bytes = self._lines = 0

    def begin(self) -> None:
        """A new request: the wait for its first line starts now."""
        self.deadline = time.monotonic() + self.limits.request_timeout_s
        self._bytes, self._lines = self.limits.max_header_bytes, 0

    def end(self) -> None:
        """The request is in: writing the response has its own timeout."""
        self.deadline = None
        self.sock.settimeout(self.limits.write_timeout_s)

    def _wait(self) -> None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time (--request-timeout-s)")
            self.sock.settimeout(left)

    def readline(self, size: int = -1) -> bytes:
        if self.deadline is None:
            return self.raw.readline(size)
        cap = self._bytes + 1 if size < 0 else min(size, self._bytes + 1)
        line = bytearray()
        while len(line) < cap:
            self._wait()
            data = self.raw.peek(1)[: cap - len(line)]  # one receive at most, and only when nothing is buffered
            if not data:
                break
            end = data.find(b"\n")
            line += self.raw.read(end + 1 if end >= 0 else len(data))
            if end >= 0:
                break
        if self._lines == 0 and line:  # the first line came: the rest of the request has the full timeout
            self.deadline = time.monotonic() + self.limits.request_timeout_s
        self._bytes -= len(line)
        self._lines += 1
        if self._bytes < 0 or self._lines > self.limits.max_headers + 2:  # + the request line and the blank line
            raise HeadersTooLarge()
        return bytes(line)

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (fewer only when the client closed)."""
        if self.deadline is None or size < 0:
            return self.raw.read(size)
        out = bytearray()
        while len(out) < size:
            self._wait()
            data = self.raw.read1(min(size - len(out), 1 << 20))
            if not data:
                break
            out += data
        return bytes(out)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
