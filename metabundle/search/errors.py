"""Typed errors of the search core: a stable ``code`` and one sentence.

Adapters turn a :class:`ToolError` into their own shape (an MCP error result, an
HTTP status) from :meth:`ToolError.payload`; the code never changes meaning.
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = "invalid_request"
NOT_FOUND = "not_found"
NOT_IN_RELEASE = "not_in_release"
EMBEDDINGS_UNAVAILABLE = "embeddings_unavailable"
QUERY_TIMEOUT = "query_timeout"
RESULT_TOO_LARGE = "result_too_large"
SQL_ERROR = "sql_error"
RESOURCE_EXHAUSTED = "resource_exhausted"
RELEASE_DAMAGED = "release_damaged"
INTERNAL_ERROR = "internal_error"

HTTP_STATUS = {
    INVALID_REQUEST: 400,
    NOT_FOUND: 404,
    NOT_IN_RELEASE: 404,
    EMBEDDINGS_UNAVAILABLE: 503,
    QUERY_TIMEOUT: 504,
    RESULT_TOO_LARGE: 413,
    SQL_ERROR: 400,
    RESOURCE_EXHAUSTED: 422,
    RELEASE_DAMAGED: 500,
    INTERNAL_ERROR: 500,
}


class ToolError(Exception):
    """A request the core refuses or cannot answer."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in HTTP_STATUS:
            raise ValueError(f"unknown error code {code}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        """The error as returned to clients: ``{"error": {code, message, details}}``."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]


def invalid(message: str, **details: Any) -> ToolError:
    return ToolError(INVALID_REQUEST, message, **details)


def not_found(message: str, **details: Any) -> ToolError:
    return ToolError(NOT_FOUND, message, **details)
