"""Where each source is fetched from: its public URLs, or a mirror of them.

A mirror (``--upstream BASE``) is an http(s) URL or a local folder laid out as
documented in ``shared/upstream/README.md``: every upstream file has a *mirror path*
relative to the base (``ukb/scdown/1.txt`` for Showcase schema 1). Source modules
name both forms of every file and let :class:`Upstream` choose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from metabundle.errors import ConfigError


@dataclass(frozen=True)
class Upstream:
    """The upstream base: ``None`` for the real public URLs, else a mirror base URL."""

    base: str | None = None

    @classmethod
    def parse(cls, value: str | None) -> Upstream:
        """Accept an http(s) URL or an existing local folder; anything else is an error."""
        if value is None or value == "":
            return cls(None)
        scheme = urlsplit(value).scheme
        if scheme in ("http", "https"):
            return cls(value.rstrip("/"))
        if scheme == "file":
            return cls(value.rstrip("/"))
        folder = Path(value).expanduser()
        if not folder.is_dir():
            raise ConfigError(
                f"--upstream {value} is neither an http(s) URL nor an existing folder"
            )
        return cls(folder.resolve().as_uri())

    @property
    def is_mirror(self) -> bool:
        return self.base is not None

    def url(self, mirror_path: str, public_url: str) -> str:
        """The URL to fetch: the public URL, or ``mirror_path`` under the mirror base."""
        if self.base is None:
            return public_url
        return f"{self.base}/{quote(mirror_path.lstrip('/'))}"

    def directory(self, mirror_path: str, public_url: str) -> str:
        """Like :meth:`url` for a directory listing (always ends with ``/``)."""
        return self.url(mirror_path, public_url).rstrip("/") + "/"

    def describe(self) -> str:
        """The base for manifests and messages, without any credentials in it."""
        if self.base is None:
            return "public upstream URLs"
        parts = urlsplit(self.base)
        if parts.username or parts.password:
            host = parts.hostname or ""
            netloc = f"{host}:{parts.port}" if parts.port else host
            return urlunsplit(parts._replace(netloc=netloc))
        return self.base
