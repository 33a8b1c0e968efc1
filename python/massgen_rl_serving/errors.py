"""The server's refusals: `ApiError`, raised wherever a request is found wrong (the wire format, the tool fields,
the tool-call parser, the HTTP layer, the engines) and sent as an OpenAI-style error body.

A leaf module, so any module of the server can import it at top level.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request the server refuses: becomes an OpenAI-style error body with `status`."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None, kind: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code
        self.kind = kind or (
            "service_unavailable"
            if status == 503
            else "invalid_request_error"
            if 400 <= status < 500
            else "server_error"
        )

    def body(self) -> dict[str, Any]:
        return error_body(str(self), self.kind, self.param, self.code)


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
