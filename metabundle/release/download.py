"""Download a published release and install it under a data folder.

``download_release`` reads ``latest`` (or takes a version), then
``releases/<version>/files.json``, and fetches every stored file with httpx,
streaming into ``DEST/releases/.download-<version>/parts/<stored>.part``. An
interrupted transfer continues where it stopped: the next attempt (a retry, or the
next run of the command) asks for the rest with an HTTP ``Range`` request and
appends. Each stored file is checked against its published sha256, decompressed
(zstd) while hashing, and checked again; then the whole folder is verified like
``metabundle verify`` does. Only then is it renamed to ``DEST/releases/<version>``
and ``DEST/current`` moved. Any failure leaves ``current`` where it was and names
the file that failed.

A hostile or broken site is held to bounds (:mod:`metabundle.release.site_client`:
redirects within the site, capped small files, a deadline per file): the file list's
every path and size is checked before anything is written, the listed sizes must fit
the free disk space, a transfer stops at its file's listed size and a decompression
at its listed uncompressed size.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

import httpx
import zstandard

from metabundle import __version__
from metabundle.digest import sha256_file
from metabundle.errors import ConfigError, ReleaseError
from metabundle.http_client import RETRY_STATUSES, RetryPolicy
from metabundle.release.checksums import SUMS_FILE
from metabundle.release.digest_record import record_digests
from metabundle.release.paths import check_release_version
from metabundle.release.pointer import point_current
from metabundle.release.publish import FILES_FILE, LATEST_FILE, RELEASES_DIR, check_files_list
from metabundle.release.site_client import (
    FILES_LIST_MAX_BYTES,
    LATEST_MAX_BYTES,
    Deadline,
    DownloadSettings,
    SiteClient,
)
from metabundle.release.verify import verify_release
from metabundle.release.version import check_version

CHUNK_BYTES = 1 << 20
STAGING_PREFIX = ".download-"
CURRENT = "current"


class DownloadProgress(Protocol):
    """Where a download reports its bytes (the CLI draws a progress bar)."""

    def start(self, version: str, total_bytes: int, files: int) -> None: ...

    def file(self, name: str, size: int) -> None: ...

    def advance(self, count: int) -> None: ...

    def finish(self) -> None: ...


class SilentProgress:
    """A :class:`DownloadProgress` that shows nothing."""

    def start(self, version: str, total_bytes: int, files: int) -> None:
        pass

    def file(self, name: str, size: int) -> None:
        pass

    def advance(self, count: int) -> None:
        pass

    def finish(self) -> None:
        pass


class LineProgress:
    """One line per file on a text stream (for logs and pipes)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def start(self, version: str, total_bytes: int, files: int) -> None:
        print(f"downloading {version}: {files} files, {total_bytes:,} bytes", file=self.stream)

    def file(self, name: str, size: int) -> None:
        print(f"  {name} ({size:,} bytes)", file=self.stream)

    def advance(self, count: int) -> None:
        pass

    def finish(self) -> None:
        pass


class BarProgress:
    """A rich progress bar (bytes, speed, time left) for a terminal."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=True,
        )
        self.task = self.bar.add_task("", total=0)

    def start(self, version: str, total_bytes: int, files: int) -> None:
        self.bar.update(self.task, total=total_bytes, description=version)
        self.bar.start()

    def file(self, name: str, size: int) -> None:
        self.bar.update(self.task, description=name)

    def advance(self, count: int) -> None:
        self.bar.advance(self.task, count)

    def finish(self) -> None:
        self.bar.stop()


def terminal_progress(stream: TextIO) -> DownloadProgress:
    """A progress bar when ``stream`` is a terminal, else one line per file."""
    return BarProgress(stream) if stream.isatty() else LineProgress(stream)


@dataclass(frozen=True)
class DownloadResult:
    """An installed release: where it is and what the download cost."""

    version: str
    path: Path
    downloaded_bytes: int
    resumed_files: int
    already_installed: bool


class _Interrupted(Exception):
    """The connection ended before the whole file arrived."""


class _Oversized(Exception):
    """A compressed file unpacks to more than its listed size."""


def download_release(
    base_url: str,
    version: str = "latest",
    dest: Path | None = None,
    *,
    progress: DownloadProgress | None = None,
    retry: RetryPolicy | None = None,
    timeout_s: float = 60.0,
) -> DownloadResult:
    """Install ``version`` (or the newest) from the site at ``base_url`` into ``dest``;
    a read waits at most ``timeout_s``, and a file is given up once its deadline
    (:class:`~metabundle.release.site_client.DownloadSettings`) has passed."""
    from metabundle.release.location import data_dir

    base = _check_base(base_url)
    dest = (dest or data_dir()).expanduser().resolve()
    limits = DownloadSettings.load()
    progress = progress or SilentProgress()
    client = httpx.Client(
        follow_redirects=False,  # SiteClient follows them, within the site only
        headers={"User-Agent": f"metabundle/{__version__}", "Accept-Encoding": "identity"},
        trust_env=True,
    )
    with client:
        site = SiteClient(base, client, retry or RetryPolicy(), limits, timeout_s)
        version = _resolve_version(site, version)
        listing = _read_listing(site, version)
        return _install(site, listing, version, dest, progress)


def _check_base(base_url: str) -> str:
    try:
        url: httpx.URL | None = httpx.URL(base_url)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"--from {base_url} is not an http(s) URL of a published release site")
    return base_url.rstrip("/")


def _resolve_version(site: SiteClient, version: str) -> str:
    if version != "latest":
        return check_version(version)
    missing = f"{site.base} has no `{LATEST_FILE}` file; is it a site?"
    latest = site.read_small(LATEST_FILE, LATEST_MAX_BYTES, missing).decode("utf-8", "replace")
    return check_release_version(latest.strip(), site.url(LATEST_FILE))


def _read_listing(site: SiteClient, version: str) -> dict[str, Any]:
    relative = f"{RELEASES_DIR}/{version}/{FILES_FILE}"
    missing = f"Release {version} is not published at {site.base}"
    text = site.read_small(relative, FILES_LIST_MAX_BYTES, missing)
    try:
        listing = json.loads(text)
    except (ValueError, RecursionError):
        raise ReleaseError(f"{site.url(relative)} is not valid JSON") from None
    return check_files_list(listing, site.url(relative), version)


def _install(
    site: SiteClient, listing: dict[str, Any], version: str, dest: Path, progress: DownloadProgress
) -> DownloadResult:
    releases = dest / RELEASES_DIR
    final = releases / version
    if final.exists():
        _check_installed(final, listing, version)
        point_current(dest / CURRENT, final)
        return DownloadResult(version, final, 0, 0, already_installed=True)
    staging = releases / f"{STAGING_PREFIX}{version}"
    files = listing["files"]
    _check_space(dest, staging, files, version)
    tree = staging / "release"
    parts = staging / "parts"
    tree.mkdir(parents=True, exist_ok=True)
    parts.mkdir(parents=True, exist_ok=True)
    progress.start(version, sum(f["stored_size"] for f in files), len(files))
    downloaded = resumed = 0
    try:
        for entry in sorted(files, key=lambda f: f["path"]):
            got, was_resumed = _install_file(site, version, entry, tree, parts, progress)
            downloaded += got
            resumed += was_resumed
    finally:
        progress.finish()
    try:
        verified = verify_release(tree, record=False)
    except ReleaseError as error:
        raise ReleaseError(f"Downloaded release {version} failed verification: {error}") from None
    if verified.version != version:
        raise ReleaseError(
            f"Downloaded release {version} holds the manifest of release {verified.version}; "
            "nothing was installed and current is unchanged"
        )
    tree.rename(final)
    record_digests(final, verified.digests)
    shutil.rmtree(staging, ignore_errors=True)
    point_current(dest / CURRENT, final)
    return DownloadResult(version, final, downloaded, resumed, already_installed=False)


def _check_space(dest: Path, staging: Path, files: list[dict[str, Any]], version: str) -> None:
    """The release must fit the free space under ``dest`` (what an interrupted run left
    in ``staging`` counting as written): every file unpacked, plus the largest
    compressed file, which waits beside its unpacked copy."""
    needed = sum(f["size"] for f in files) + max(
        (f["stored_size"] for f in files if f["compression"] == "zstd"), default=0
    )
    written = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
    existing = next(folder for folder in (dest, *dest.parents) if folder.exists())
    free = shutil.disk_usage(existing).free
    if needed - written > free:
        raise ReleaseError(
            f"Release {version} needs {needed - written:,} more bytes but {existing} has "
            f"{free:,} free; nothing was written and current is unchanged"
        )


def _check_installed(folder: Path, listing: dict[str, Any], version: str) -> None:
    """An installed copy of a version must be the published one."""
    published = next(f for f in listing["files"] if f["path"] == SUMS_FILE)
    sums = folder / SUMS_FILE
    if not sums.exists() or sha256_file(sums) != published["sha256"]:
        raise ReleaseError(
            f"{folder} holds a release {version} that differs from the published one; "
            "remove it and download again"
        )


def _install_file(
    site: SiteClient,
    version: str,
    entry: dict[str, Any],
    tree: Path,
    parts: Path,
    progress: DownloadProgress,
) -> tuple[int, bool]:
    """Download, check and unpack one file into ``tree``; (bytes fetched, resumed)."""
    destination = tree / entry["path"]
    progress.file(entry["stored"], entry["stored_size"])
    if destination.exists() and destination.stat().st_size == entry["size"]:
        progress.advance(entry["stored_size"])
        return 0, False  # finished by an earlier, interrupted run; verified at the end
    part = parts / f"{entry['stored']}.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    url = site.url(f"{RELEASES_DIR}/{version}/{entry['stored']}")
    deadline = site.limits.deadline(entry["stored"], entry["stored_size"])
    fetched, resumed = _fetch_resumable(site, url, part, entry, progress, deadline)
    if sha256_file(part) != entry["stored_sha256"]:
        part.unlink()
        raise ReleaseError(
            f"{entry['stored']} of release {version} does not match its published sha256 "
            "(damaged or changed on the server); nothing was installed and current is unchanged"
        )
    destination.parent.mkdir(parents=True, exist_ok=True)
    if entry["compression"] == "zstd":
        _unpack(part, destination, entry, version)
        part.unlink()
    elif entry["compression"] == "none":
        part.replace(destination)
    else:
        raise ReleaseError(f"{entry['stored']} uses unknown compression {entry['compression']!r}")
    return fetched, resumed


def _unpack(part: Path, destination: Path, entry: dict[str, Any], version: str) -> None:
    """Decompress ``part`` into ``destination``, hashing as it goes."""
    digest = hashlib.sha256()
    temp = destination.with_name(destination.name + ".unpacking")
    try:
        with part.open("rb") as source, temp.open("wb") as sink:
            reader = zstandard.ZstdDecompressor().stream_reader(source)
            written = 0
            for chunk in iter(lambda: reader.read(CHUNK_BYTES), b""):
                written += len(chunk)
                if written > entry["size"]:
                    raise _Oversized
                digest.update(chunk)
                sink.write(chunk)
    except _Oversized:
        temp.unlink(missing_ok=True)
        raise ReleaseError(
            f"{entry['stored']} of release {version} unpacks to more than the "
            f"{entry['size']:,} bytes its file list gives; nothing was installed"
        ) from None
    except zstandard.ZstdError as error:
        temp.unlink(missing_ok=True)
        raise ReleaseError(
            f"{entry['stored']} of release {version} is not valid zstd ({error})"
        ) from None
    if digest.hexdigest() != entry["sha256"]:
        temp.unlink()
        raise ReleaseError(
            f"{entry['path']} of release {version} does not match its published sha256 after "
            "decompression; nothing was installed and current is unchanged"
        )
    temp.replace(destination)


def _fetch_resumable(
    site: SiteClient,
    url: str,
    part: Path,
    entry: dict[str, Any],
    progress: DownloadProgress,
    deadline: Deadline,
) -> tuple[int, bool]:
    """Fill ``part`` with the whole stored file, resuming with ``Range`` after a cut,
    by ``deadline``; (bytes fetched by this call, whether a Range request was used)."""
    total = entry["stored_size"]
    have = part.stat().st_size if part.exists() else 0
    if have > total:
        part.unlink()
        have = 0
    progress.advance(have)
    already = have
    resumed = False
    attempts = site.retry.attempts
    for attempt in range(attempts):
        if have == total:
            break
        deadline.check()
        try:
            have, ranged = _fetch_from(site, url, part, have, total, progress, deadline)
            resumed = resumed or ranged
        except (_Interrupted, httpx.RequestError) as error:
            have = part.stat().st_size if part.exists() else 0
            if attempt == attempts - 1:
                deadline.check()
                reason = str(error) or type(error).__name__
                raise ReleaseError(
                    f"Download of {entry['stored']} from {url} was interrupted ({reason}) "
                    f"after {attempts} attempts; run the command again to resume it "
                    "(current is unchanged)"
                ) from None
            deadline.pause(site.retry.delay(attempt))
    return max(0, have - already), resumed


def _fetch_from(
    site: SiteClient,
    url: str,
    part: Path,
    offset: int,
    total: int,
    progress: DownloadProgress,
    deadline: Deadline,
) -> tuple[int, bool]:
    """One GET of ``url`` from byte ``offset``: (bytes now in ``part``, whether the
    server continued a range)."""
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with site.get(url, deadline, headers) as response:
        status = response.status_code
        if status == 416:  # the part is stale (the file was replaced): start over
            part.unlink(missing_ok=True)
            raise _Interrupted("the server refused the range; starting over")
        if status in RETRY_STATUSES:
            raise _Interrupted(f"HTTP {status}")
        if status >= 400:
            raise ReleaseError(f"Could not download {url}: HTTP {status}")
        ranged = bool(offset) and status == 206
        if ranged:
            _check_content_range(response, url, offset)
        elif offset:  # the server ignored Range: take the whole file again
            progress.advance(-offset)
            offset = 0
        mode = "ab" if offset else "wb"
        received = 0
        with part.open(mode) as handle:
            for chunk in response.iter_raw():  # unbuffered: a cut keeps every byte received
                if offset + received + len(chunk) > total:
                    handle.close()
                    part.unlink()
                    raise ReleaseError(
                        f"{url} sent more than the {total:,} bytes its file list gives; "
                        "nothing was installed and current is unchanged"
                    )
                handle.write(chunk)
                received += len(chunk)
                progress.advance(len(chunk))
                deadline.check()
    now = offset + received
    if now < total:
        raise _Interrupted(f"connection closed at {now:,} of {total:,} bytes")
    return now, ranged


def _check_content_range(response: httpx.Response, url: str, offset: int) -> None:
    value = response.headers.get("content-range", "")
    if not value.startswith(f"bytes {offset}-"):
        raise ReleaseError(f"{url} answered a range request with Content-Range {value!r}")
