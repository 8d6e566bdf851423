"""Errors a user may see: each carries one sentence that names what went wrong.

The CLI, the pipeline and the servers print ``str(error)`` for these and nothing
else; anything that is not a :class:`MetabundleError` is a bug.
"""

from __future__ import annotations


class MetabundleError(Exception):
    """Base class of every error whose message is meant for the user."""


class ConfigError(MetabundleError):
    """A setting, flag or environment variable has a value we cannot use."""


class FetchError(MetabundleError):
    """An upstream URL could not be downloaded after all retries."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"Could not download {url}: {reason}.")
        self.url = url
        self.reason = reason

    @property
    def absent(self) -> bool:
        """Whether the upstream does not have the file (HTTP 404 or 410, or no such file
        in a folder mirror): an expected absence for a file that may be missing."""
        return self.reason.startswith(("HTTP 404", "HTTP 410", "no such file"))


class ParseError(MetabundleError):
    """An upstream file is malformed; the message names the file and the place."""

    def __init__(self, source: str, file: str, reason: str, *, line: int | None = None) -> None:
        where = f"{file}, line {line}" if line is not None else file
        super().__init__(f"{source}: cannot parse {where}: {reason}.")
        self.source = source
        self.file = file
        self.line = line
        self.reason = reason


class SchemaError(MetabundleError):
    """Data does not match the table registry (missing column, wrong type, null key)."""


class ReleaseError(MetabundleError):
    """A release folder is missing, incomplete or fails verification."""
