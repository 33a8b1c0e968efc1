"""The client side of the serve fuzz suite (test_serve_fuzz.py): raw HTTP/1.1 over loopback sockets, so a case can
send anything (a broken request line, a trickled body, a stream it never reads), and the checks every answer must
pass: an OpenAI-shaped error or a clean close, never a 500 and never a traceback."""

from __future__ import annotations

import json
import socket
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"
ERROR_KEYS = {"message", "type", "param", "code"}


@dataclass
class Answer:
    status: int | None = None  # None: the server closed without answering
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    closed: bool = False  # the server closed (or reset) the connection after it, or instead of it

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[str]:
        """The `data:` payloads of a server-sent-events body."""
        return [line[6:] for line in self.body.decode("utf-8").split("\n") if line.startswith("data: ")]


def source(index: int) -> str:
    """A loopback address of its own for case `index`: per-client limits count one case's connections only."""
    index %= 250 * 250
    return f"127.1.{index // 250 + 1}.{index % 250 + 1}"


def connect(port: int, src: str = HOST, timeout: float = 60, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((src, 0))
    sock.settimeout(timeout)
    sock.connect((HOST, port))
    return sock


def request(method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: fuzz"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


class _Stream:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def fill(self) -> bool:
        try:
            data = self.sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        self.buf += data
        return bool(data)

    def line(self) -> bytes | None:
        while b"\r\n" not in self.buf:
            if not self.fill():
                return None
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def take(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self.fill():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


_streams: weakref.WeakKeyDictionary[socket.socket, _Stream] = weakref.WeakKeyDictionary()


def read_answer(sock: socket.socket) -> Answer:
    """The next response on `sock` (Content-Length or chunked body), or what a close left of it."""
    stream, answer = _streams.setdefault(sock, _Stream(sock)), Answer()
    status = stream.line()
    if not status:
        return Answer(closed=True)
    parts = status.split(b" ", 2)
    assert parts[0] == b"HTTP/1.1" and parts[1].isdigit(), f"not a status line: {status[:200]!r}"
    answer.status = int(parts[1])
    while line := stream.line():
        name, _, value = line.decode("latin-1").partition(":")
        answer.headers[name.strip().lower()] = value.strip()
    if line is None:
        return Answer(answer.status, answer.headers, closed=True)
    if answer.headers.get("transfer-encoding") == "chunked":
        answer.closed = True  # unless the last chunk comes
        while (size := stream.line()) is not None:
            if not int(size, 16):
                answer.closed = stream.line() is None  # the blank line after it
                break
            chunk = stream.take(int(size, 16) + 2)
            if chunk is None:
                break
            answer.body += chunk[:-2]
    else:
        body = stream.take(int(answer.headers.get("content-length", "0")))
        answer.body, answer.closed = body or stream.buf, body is None
    if answer.headers.get("connection") == "close":
        answer.closed = True
    return answer


def exchange(port: int, data: bytes, src: str = HOST, timeout: float = 60) -> Answer:
    """Sends `data` on a fresh connection and reads one answer; a server that refuses early may close before all of
    `data` is sent."""
    with connect(port, src, timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_answer(sock)


def check(answer: Any, *, params: tuple[Any, ...] | None = None, may_close: bool = False, ok: bool = True) -> str:
    """The promise every case keeps; returns a label of the outcome ("200", "400:temperature", "closed").
    params: the `param` a 4xx may name (None: any); may_close: a close without an answer is clean here."""
    if answer.status is None:
        assert may_close, "the server closed the connection without an answer"
        return "closed"
    assert b"Traceback" not in answer.body, answer.body[-2000:]
    assert answer.status < 500 or answer.status == 503, (answer.status, answer.body[:2000])
    if answer.status == 200:
        assert ok, f"accepted: {answer.body[:500]!r}"
        return "200"
    error = answer.json()["error"]
    assert set(error) == ERROR_KEYS and isinstance(error["message"], str) and error["message"], error
    assert error["type"] in ("invalid_request_error", "service_unavailable"), error
    if answer.status == 503:
        assert answer.headers.get("retry-after"), answer.headers
    if params is not None and answer.status in (400, 404):
        assert error["param"] in params, (params, error)
    return f"{answer.status}:{str(error['param'])[:40]}" if error["param"] else str(answer.status)


def check_stream(answer: Answer) -> None:
    """A streamed 200: every event is JSON (an error event is OpenAI-shaped), then `data: [DONE]`."""
    events = answer.events()
    assert events and events[-1] == "[DONE]", answer.body[-500:]
    for data in events[:-1]:
        event = json.loads(data)
        if "error" in event:
            assert set(event["error"]) == ERROR_KEYS, event


def vm(pid: int, key: str) -> int:
    """A /proc/PID/status figure: VmRSS (kB) or Threads."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def wait_for(predicate: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
