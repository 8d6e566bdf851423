"""Read a published release site over HTTP, within bounds (``metabundle download``).

Every request of a download goes through :class:`SiteClient`:

* **Redirects stay on the site.** They are followed by hand, and only within the
  origin (scheme, host and port) of the ``--from`` URL; a redirect to another origin,
  or more than :data:`MAX_REDIRECTS` in a row, is refused in one sentence naming the
  URLs.
* **Small files are capped.** ``latest`` and ``files.json`` are read streamed and
  refused past :data:`LATEST_MAX_BYTES` and :data:`FILES_LIST_MAX_BYTES`, so a huge or
  endless answer costs at most that much memory.
* **Every file has a total deadline** (:class:`Deadline`): its listed size at
  ``METABUNDLE_DOWNLOAD_MIN_RATE_KB_S`` plus ``METABUNDLE_DOWNLOAD_GRACE_S``
  (:class:`DownloadSettings`), over all its attempts and retry pauses. It is checked
  whenever bytes arrive, and each request's reads wait at most the time left when it
  starts (or the read timeout, when that is shorter), so a server that drips bytes,
  or sends none, is given up in one sentence naming the file at most one read
  timeout after the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

import httpx
from pydantic import Field

from metabundle.errors import ReleaseError
from metabundle.http_client import RETRY_STATUSES, RetryPolicy
from metabundle.settings import Settings

MAX_REDIRECTS = 10
LATEST_MAX_BYTES = 256
"""``latest`` holds one version (at most 17 characters) and a newline."""
FILES_LIST_MAX_BYTES = 4 << 20
"""``files.json`` takes about 300 bytes a file: 4 MiB lists some 14,000 files."""
CONNECT_TIMEOUT_S = 15.0


class DownloadSettings(Settings):
    """How slowly a file may arrive before ``metabundle download`` gives it up."""

    download_min_rate_kb_s: float = Field(
        default=64.0,
        gt=0,
        description="The slowest average rate, in kB/s, at which a file may arrive: each "
        "file's deadline is its listed size at this rate plus download_grace_s.",
    )
    download_grace_s: float = Field(
        default=60.0, gt=0, description="Seconds every file's deadline adds to its size."
    )

    def deadline(self, name: str, size: int) -> Deadline:
        """The deadline of ``name``, ``size`` bytes, starting now."""
        seconds = self.download_grace_s + size / (self.download_min_rate_kb_s * 1000)
        return Deadline(name, seconds, time.monotonic() + seconds)


@dataclass(frozen=True)
class Deadline:
    """The moment (``time.monotonic``) by which ``name`` must have arrived whole."""

    name: str
    seconds: float
    ends: float

    def left(self) -> float:
        """Seconds left (negative once it has passed)."""
        return self.ends - time.monotonic()

    def check(self) -> None:
        """A :class:`ReleaseError` naming the file once the deadline has passed."""
        if self.left() <= 0:
            raise ReleaseError(
                f"{self.name} did not arrive within its deadline of {self.seconds:,.1f} s "
                "(its size at METABUNDLE_DOWNLOAD_MIN_RATE_KB_S plus "
                "METABUNDLE_DOWNLOAD_GRACE_S; raise them for a slow link, and run the command "
                "again to resume; current is unchanged)"
            )

    def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or until the deadline when that comes first."""
        time.sleep(max(0.0, min(seconds, self.left())))

    def timeout(self, read_timeout_s: float) -> httpx.Timeout:
        """Request timeouts that wait for no read past the deadline."""
        left = max(self.left(), 0.001)
        return httpx.Timeout(min(read_timeout_s, left), connect=min(CONNECT_TIMEOUT_S, left))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


@dataclass
class SiteClient:
    """The published site at ``base`` and the HTTP client that reads it."""

    base: str
    client: httpx.Client
    retry: RetryPolicy
    limits: DownloadSettings
    read_timeout_s: float

    def url(self, relative: str) -> str:
        """The URL of ``relative`` (a path inside the site)."""
        return f"{self.base}/{quote(relative)}"

    @contextmanager
    def get(
        self, url: str, deadline: Deadline, headers: dict[str, str] | None = None
    ) -> Iterator[httpx.Response]:
        """A streamed GET of ``url``, redirects followed within the site's origin."""
        request = self.client.build_request(
            "GET", url, headers=headers, timeout=deadline.timeout(self.read_timeout_s)
        )
        for _ in range(MAX_REDIRECTS + 1):
            response = self.client.send(request, stream=True, follow_redirects=False)
            following = response.next_request
            if following is None:
                break
            response.close()
            if _origin(following.url) != _origin(httpx.URL(self.base)):
                raise ReleaseError(
                    f"{request.url} redirects to {following.url}, outside the site {self.base}; "
                    "download follows redirects within the site only (give the other site as "
                    "--from if you trust it)"
                )
            request = following
        else:
            raise ReleaseError(
                f"{url} redirects more than {MAX_REDIRECTS} times in a row (a redirect loop?); "
                "nothing was installed"
            )
        try:
            yield response
        finally:
            response.close()

    def read_small(self, relative: str, limit: int, missing: str) -> bytes:
        """The whole of a small file of the site, at most ``limit`` bytes; ``missing``
        is the error when it is not there."""
        url = self.url(relative)
        deadline = self.limits.deadline(url, limit)
        for attempt in range(self.retry.attempts):
            deadline.check()
            try:
                with self.get(url, deadline) as response:
                    status = response.status_code
                    if status == 404:
                        raise ReleaseError(missing)
                    if status < 400:
                        return _capped_body(response, url, limit, deadline)
                reason = f"HTTP {status}"
                if status not in RETRY_STATUSES:
                    break
            except httpx.RequestError as error:
                reason = type(error).__name__
            if attempt < self.retry.attempts - 1:
                deadline.pause(self.retry.delay(attempt))
        raise ReleaseError(f"Could not read {url} ({reason})")


def _capped_body(response: httpx.Response, url: str, limit: int, deadline: Deadline) -> bytes:
    """The body of ``response``, read until ``limit`` bytes at most."""
    body = bytearray()
    for chunk in response.iter_raw():  # as sent: a compressed body is no bomb here
        body += chunk
        if len(body) > limit:
            raise ReleaseError(
                f"{url} holds more than the {limit:,} bytes such a file may have; "
                "is --from a metabundle release site?"
            )
        deadline.check()
    return bytes(body)
