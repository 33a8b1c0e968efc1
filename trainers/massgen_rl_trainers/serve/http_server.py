"""The HTTP plumbing of `serve`: the threaded server and its handler, which turns requests into App calls (app.py)
and their results into JSON responses or server-sent events."""

from __future__ import annotations

import json
import socket
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ..protocol import ScriptError, log
from .app import POST_PATHS, App
from .openai_api import ApiError, error_body

MAX_BODY_BYTES = 32 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "massgen-rl-serve"
    server: "_HttpServer"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # requests are logged by do_POST; health polls would only be noise

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None, close: bool = False) -> None:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
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
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_events(self, chunks: Any) -> None:
        """Server-sent events, one HTTP chunk each, then `data: [DONE]`. An error after the first chunk is sent
        as an error event; a client that goes away stops the generation (the iterator is closed)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for chunk in chunks:
                    self._event(json.dumps(chunk, ensure_ascii=False, allow_nan=False))
            except ApiError as exc:
                self._event(json.dumps(exc.body()))
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception as exc:  # a generation failure mid-stream: the client gets it as an error event
                traceback.print_exc()
                self._event(json.dumps(error_body(f"generation failed: {type(exc).__name__}: {exc}", "server_error")))
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
            self.close_connection = True
        finally:
            chunks.close()

    def _event(self, data: str) -> None:
        payload = f"data: {data}\n\n".encode("utf-8")
        self.wfile.write(f"{len(payload):x}\r\n".encode("ascii") + payload + b"\r\n")
        self.wfile.flush()

    def _error(self, exc: ApiError, close: bool = False) -> None:
        self._send(exc.status, exc.body(), close=close)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        app = self.server.app
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/health":
            self._send(*app.health())
        elif path == "/v1/models":
            self._send(200, app.models())
        elif path == "/stats":
            self._send(200, app.stats())
        else:
            self._error(ApiError(404, f"no route GET {path or '/'}", code="not_found"))

    def do_POST(self) -> None:  # noqa: N802
        started = time.monotonic()
        app = self.server.app
        path = urlsplit(self.path).path.rstrip("/")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._error(ApiError(411, "a Content-Length header is required"), close=True)
            return
        if int(length) > MAX_BODY_BYTES:
            self._error(ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes"), close=True)
            return
        raw = self.rfile.read(int(length))
        if path not in POST_PATHS:
            self._error(ApiError(404, f"no route POST {path or '/'}", code="not_found"))
            return
        status = 200
        app.track(+1)
        try:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
            response, headers = app.post(path, body)
            if isinstance(response, dict):
                self._send(200, response, headers)
            else:
                self._send_events(response)
        except ApiError as exc:
            status = exc.status
            self._error(exc)
        except Exception as exc:  # a bug or a generation failure: 500, traceback on stderr
            status = 500
            traceback.print_exc()
            self._send(500, error_body(f"generation failed: {type(exc).__name__}: {exc}", "server_error"))
        finally:
            app.track(-1)
        if app.log_requests:
            log(f"POST {path} {status} {time.monotonic() - started:.2f}s")


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 resets clients when 16 or more connect at once
    app: App


class _HttpServer6(_HttpServer):
    address_family = socket.AF_INET6


def make_http_server(host: str, port: int, app: App) -> _HttpServer:
    cls = _HttpServer6 if ":" in host else _HttpServer
    try:
        server = cls((host, port), _Handler)
    except OSError as exc:
        raise ScriptError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.app = app
    return server
