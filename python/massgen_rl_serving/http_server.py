"""The HTTP side of `serve`: the threaded server, one handler thread per connection within the connection limits,
and the routes, which turn requests into App calls (app.py) and their results into JSON or server-sent events (the
HTTP mechanics under the limits: http_transport.py)."""

from __future__ import annotations

import json
import socket
import sys
import time
import traceback
from http.server import ThreadingHTTPServer
from typing import Any

from massgen_rl_common.protocol import ScriptError, log

from .app import POST_PATHS, App
from .batching import ShuttingDown
from .errors import ApiError, error_body
from .http_transport import Transport
from .json_body import decode_body
from .limits import Limits, Slots, refuse


class _Handler(Transport):
    server: _HttpServer

    def _send_events(self, chunks: Any) -> None:
        """Server-sent events, one HTTP chunk each, then `data: [DONE]`. An error after the first chunk is sent
        as an error event; a client that goes away, or does not read for --write-timeout-s, stops the generation
        (the iterator is closed, which frees its rows)."""
        self.rfile.end()
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
            except ShuttingDown as exc:
                self._event(json.dumps(ApiError(503, str(exc)).body()))
            except OSError:
                raise
            except Exception as exc:  # a generation failure mid-stream: the client gets it as an error event
                traceback.print_exc()
                self._event(json.dumps(error_body(f"generation failed: {type(exc).__name__}: {exc}", "server_error")))
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            chunks.close()

    def _event(self, data: str) -> None:
        payload = f"data: {data}\n\n".encode("utf-8", "backslashreplace")
        self.wfile.write(f"{len(payload):x}\r\n".encode("ascii") + payload + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        close = not self._skip_body()
        app = self.server.app
        path = self._path()
        if path == "/health":
            status, payload = app.health()
        elif path == "/v1/models":
            status, payload = 200, app.models()
        elif path == "/stats":
            status, payload = 200, app.stats()
        else:
            status, payload = 404, ApiError(404, f"no route GET {path or '/'}", code="not_found").body()
        self._send(status, payload, close=close)

    def do_POST(self) -> None:  # noqa: N802
        started = time.monotonic()
        app = self.server.app
        path = self._path()
        try:
            length = self._body_length()
            raw = self.rfile.read(length)
        except ApiError as exc:
            self._error(exc, close=True)
            return
        except TimeoutError:
            self._error(
                ApiError(
                    408,
                    f"the request body did not arrive within {self.server.limits.request_timeout_s} "
                    "seconds (--request-timeout-s)",
                    code="request_timeout",
                ),
                close=True,
            )
            return
        if len(raw) < length:  # the client closed before sending all of it
            self.close_connection = True
            return
        if path not in POST_PATHS:
            self._error(ApiError(404, f"no route POST {path or '/'}", code="not_found"))
            return
        status = 200
        app.track(+1)
        try:
            response, headers = app.post(path, decode_body(raw))
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
    """One handler thread per connection, up to the connection limits; past them a 503 from the accepting thread."""

    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 resets clients when 16 or more connect at once
    app: App
    limits: Limits
    slots: Slots

    def process_request(self, request: Any, client_address: Any) -> None:
        refused = self.slots.take(client_address[0])
        if refused is not None:
            refuse(
                request,
                ApiError(503, f"too many connections: {refused}; retry later", code="too_many_connections").body(),
            )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread for it
            self.slots.release(client_address[0])
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release(client_address[0])

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # the client went away or timed out: nothing to report
            return
        super().handle_error(request, client_address)


class _HttpServer6(_HttpServer):
    address_family = socket.AF_INET6


def make_http_server(host: str, port: int, app: App, limits: Limits = Limits()) -> _HttpServer:
    cls = _HttpServer6 if ":" in host else _HttpServer
    try:
        server = cls((host, port), _Handler)
    except OSError as exc:
        raise ScriptError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.app, server.limits, server.slots = app, limits, Slots(limits)
    return server
