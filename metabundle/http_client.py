"""The download layer: httpx with timeouts, retries with backoff, streaming to disk,
a content cache keyed by URL with ETag/Last-Modified revalidation and sha256.

``file://`` URLs (a mirror in a local folder) are read in place. Directory listings
are parsed from the HTML index pages that web servers and the NCBI FTP tree serve.
A download that still fails after every retry raises :class:`FetchError` naming the
URL.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urljoin, urlsplit

import httpx

from metabundle import __version__
from metabundle.digest import sha256_file
from metabundle.errors import FetchError

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
CHUNK_BYTES = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry transient failures."""

    attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential backoff with full jitter; ``Retry-After`` wins when given."""
        if retry_after is not None:
            return min(retry_after, self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


@dataclass(frozen=True)
class FetchedFile:
    """A downloaded (or cached, or local) file and what we know about it."""

    url: str
    path: Path
    sha256: str
    size: int
    fetched_at: str
    etag: str | None = None
    last_modified: str | None = None
    reused: bool = False

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["path"] = str(self.path)
        return data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


class _TruncatedBody(Exception):
    """The server closed the body before Content-Length bytes arrived."""


def _describe_transport_error(error: Exception) -> str:
    text = str(error)
    return f"{type(error).__name__} ({text})" if text else type(error).__name__


class _LinkParser(HTMLParser):
    """Collects ``href`` targets of ``<a>`` tags."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag.lower() == "a":
            for name, value in attrs:
                if name.lower() == "href" and value:
                    self.links.append(value)


def parse_directory_listing(html: str, directory_url: str) -> list[str]:
    """Entry names of an HTML directory index (Apache, nginx, NCBI FTP, http.server).

    Sub-directories keep a trailing ``/``. Links that leave the directory (parent,
    sort links, absolute links elsewhere) are dropped.
    """
    parser = _LinkParser()
    parser.feed(html)
    base = directory_url if directory_url.endswith("/") else directory_url + "/"
    base_path = urlsplit(base).path
    names: set[str] = set()
    for href in parser.links:
        if href.startswith(("?", "#", "mailto:")):
            continue
        target = urlsplit(urljoin(base, href))
        if not target.path.startswith(base_path) or target.query:
            continue
        rest = unquote(target.path[len(base_path) :])
        if not rest or rest.count("/") > 1 or (rest.count("/") == 1 and not rest.endswith("/")):
            continue
        names.add(rest)
    return sorted(names)


class Fetcher:
    """Downloads URLs into a content cache, revalidating cached copies.

    One instance is shared by a build. ``on_retry`` is told about every retry so the
    build can show it; nothing is printed here.
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        revalidate: bool = True,
        on_retry: Callable[[str, int, str], None] | None = None,
    ) -> None:
        self.cache_dir = cache_dir / "http"
        self.retry = retry or RetryPolicy()
        self.revalidate = revalidate
        self.on_retry = on_retry
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0)),
            follow_redirects=True,
            headers={"User-Agent": f"metabundle/{__version__}"},
            trust_env=True,
        )
        self.stats = {"downloaded": 0, "revalidated": 0, "local": 0, "bytes": 0}

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API -------------------------------------------------------------------

    def fetch(self, url: str) -> FetchedFile:
        """The file at ``url``, from the cache when the server says it is unchanged."""
        if url.startswith("file:"):
            return self._local(url)
        body, meta_path = self._cache_paths(url)
        cached = self._read_meta(meta_path) if body.exists() else None
        if cached is not None and not self.revalidate:
            return FetchedFile(**{**cached, "path": body, "reused": True})
        headers = {}
        if cached is not None:
            if cached.get("etag"):
                headers["If-None-Match"] = str(cached["etag"])
            if cached.get("last_modified"):
                headers["If-Modified-Since"] = str(cached["last_modified"])

        def receive(response: httpx.Response) -> FetchedFile:
            if response.status_code == 304 and cached is not None:
                self.stats["revalidated"] += 1
                return FetchedFile(**{**cached, "path": body, "reused": True})
            return self._store(url, response, body)

        fetched = self._with_retries(url, headers, receive)
        if not fetched.reused:
            self._write_meta(meta_path, fetched)
        return fetched

    def fetch_text(self, url: str) -> str:
        """The file at ``url`` decoded as UTF-8 (replacing undecodable bytes)."""
        return self.fetch(url).path.read_text(encoding="utf-8", errors="replace")

    def list_directory(self, url: str) -> list[str]:
        """Entry names of a directory; sub-directories end with ``/``."""
        if url.startswith("file:"):
            folder = _file_url_path(url)
            if not folder.is_dir():
                raise FetchError(url, "no such folder")
            return sorted(p.name + "/" if p.is_dir() else p.name for p in folder.iterdir())

        def receive(response: httpx.Response) -> list[str]:
            response.read()
            return parse_directory_listing(response.text, str(response.url))

        return self._with_retries(url, {}, receive)

    # -- internals --------------------------------------------------------------------

    def _with_retries(
        self, url: str, headers: dict[str, str], receive: Callable[[httpx.Response], T]
    ) -> T:
        """GET ``url`` and hand the response to ``receive``, retrying transient failures
        (429/5xx, connection errors, bodies cut short or not decompressing) with backoff."""
        attempts = self.retry.attempts
        for attempt in range(attempts):
            last = attempt == attempts - 1
            retry_after = None
            try:
                with self._client.stream("GET", url, headers=headers) as response:
                    status = response.status_code
                    if status in RETRY_STATUSES and not last:
                        reason = f"HTTP {status}"
                        retry_after = _retry_after_seconds(response)
                    elif status >= 400:
                        phrase = response.reason_phrase or ""
                        raise FetchError(url, f"HTTP {status} {phrase}".strip())
                    else:
                        return receive(response)
            except (httpx.TransportError, httpx.DecodingError, _TruncatedBody) as error:
                # DecodingError: a compressed body that does not decompress (cut or garbled)
                reason = _describe_transport_error(error)
                if last:
                    raise FetchError(url, f"{reason} after {attempts} attempts") from None
            except httpx.TooManyRedirects:
                raise FetchError(url, "too many redirects") from None
            if self.on_retry is not None:
                self.on_retry(url, attempt + 1, reason)
            time.sleep(self.retry.delay(attempt, retry_after))
        raise AssertionError("unreachable")

    def _store(self, url: str, response: httpx.Response, body: Path) -> FetchedFile:
        body.parent.mkdir(parents=True, exist_ok=True)
        temp = body.with_name(f"{body.name}.{os.getpid()}.part")
        digest = hashlib.sha256()
        size = 0
        identity = _is_identity(response)
        expected = response.headers.get("content-length") if identity else None
        chunks = response.iter_raw(CHUNK_BYTES) if identity else response.iter_bytes(CHUNK_BYTES)
        try:
            with temp.open("wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
            if expected is not None and int(expected) != size:
                raise _TruncatedBody(f"body cut short at {size} of {expected} bytes")
            temp.replace(body)
        finally:
            temp.unlink(missing_ok=True)
        self.stats["downloaded"] += 1
        self.stats["bytes"] += size
        return FetchedFile(
            url=url,
            path=body,
            sha256=digest.hexdigest(),
            size=size,
            fetched_at=_now(),
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
        )

    def _local(self, url: str) -> FetchedFile:
        path = _file_url_path(url)
        if not path.is_file():
            raise FetchError(url, "no such file")
        self.stats["local"] += 1
        stat = path.stat()
        return FetchedFile(
            url=url,
            path=path,
            sha256=sha256_file(path),
            size=stat.st_size,
            fetched_at=datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds"),
            reused=True,
        )

    def _cache_paths(self, url: str) -> tuple[Path, Path]:
        key = hashlib.sha256(url.encode()).hexdigest()
        folder = self.cache_dir / key[:2]
        return folder / f"{key}.body", folder / f"{key}.json"

    @staticmethod
    def _read_meta(meta_path: Path) -> dict[str, object] | None:
        try:
            data = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return None
        data.pop("path", None)
        data.pop("reused", None)
        return data

    @staticmethod
    def _write_meta(meta_path: Path, fetched: FetchedFile) -> None:
        temp = meta_path.with_name(meta_path.name + ".tmp")
        temp.write_text(json.dumps(fetched.to_json(), sort_keys=True))
        temp.replace(meta_path)


def _is_identity(response: httpx.Response) -> bool:
    return response.headers.get("content-encoding", "identity") in ("", "identity")


def _file_url_path(url: str) -> Path:
    return Path(unquote(urlsplit(url).path))
