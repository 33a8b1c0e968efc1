"""The HTTP/1.1 mechanics of `serve`'s request handler, under the limits of limits.py: the request read within its
byte budget and timeout, a body's length checked before it is read, refusals (ours and http.server's own) in OpenAI's
error shape, and JSON answers written within --write-timeout-s."""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from .errors import ApiError
from .limits import SEND_BUFFER_BYTES, HeadersTooLarge, Reader


class Transport(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "massgen-rl-serve"
    rfile: Any  # limits.Reader
    server: Any  # http_server._HttpServer: its limits

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        self.rfile = Reader(self.rfile, self.connection, self.server.limits)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # requests are logged by do_POST; health polls would only be noise

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass  # (the base class's reads the request line, which a refused request may not have)

    def handle_one_request(self) -> None:
        self.rfile.begin()
        try:
            super().handle_one_request()
        except HeadersTooLarge:
            limits = self.server.limits
            self.request_version, self.command = "HTTP/1.1", ""
            self.send_error(
                431,
                f"the request line and headers are over {limits.max_header_bytes} bytes or "
                f"{limits.max_headers} header lines (--max-header-bytes, --max-headers)",
            )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line or header, an unknown method, another HTTP version)
        in OpenAI's shape, as client errors."""
        if self.request_version == "HTTP/0.9":  # a one-word request line: still answered with a status line
            self.request_version = "HTTP/1.1"
        text = message or self.responses.get(code, ("refused",))[0]
        if code == 501:
            code, text = 405, f"the method {self.command!r} is not supported here (GET and POST are)"
        self._error(ApiError(400 if code == 505 else code, text), close=True)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, close: bool = False) -> None:
        self.rfile.end()
        # backslashreplace: a lone surrogate (from a file name, say) is written as its JSON escape
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8", "backslashreplace")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client went away, or did not read within --write-timeout-s
            self.close_connection = True

    def _error(self, exc: ApiError, close: bool = False) -> None:
        self._send(exc.status, exc.body(), {"Retry-After": "1"} if exc.status == 503 else None, close=close)

    def _path(self) -> str:
        try:
            return urlsplit(self.path).path.rstrip("/")
        except ValueError:  # not a URL (an unclosed IPv6 bracket): no route has it
            return self.path

    def _skip_body(self) -> bool:
        """Reads past a GET's body, so that the next request on the connection starts where it should; False when
        it cannot (the connection is then closed after the answer)."""
        if self.headers.get("Content-Length") is None and self.headers.get("Transfer-Encoding") is None:
            return True
        try:
            length = self._body_length()
            return len(self.rfile.read(length)) == length
        except (ApiError, TimeoutError):
            return False

    def _body_length(self) -> int:
        if self.headers.get("Transfer-Encoding") is not None:  # never beside a Content-Length it would contradict
            raise ApiError(411, "chunked request bodies are not supported: send a Content-Length header")
        length = self.headers.get("Content-Length")
        if length is None:
            raise ApiError(411, "a Content-Length header is required")
        length = length.strip()
        if not (length.isascii() and length.isdigit()):
            raise ApiError(400, "the Content-Length header must be a whole number of bytes")
        limit = self.server.limits.max_body_bytes
        if int(length) > limit:
            raise ApiError(413, f"the request body is larger than {limit} bytes (--max-body-bytes)")
        return int(length)

    def handle_expect_100(self) -> bool:
        """A body that would be refused is refused before the client sends it."""
        if self.command == "POST":
            try:
                self._body_length()
            except ApiError as exc:
                self._error(exc, close=True)
                return False
        return super().handle_expect_100()
