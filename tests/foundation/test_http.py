"""The download layer against real loopback servers: caching, revalidation, retries,
clear errors and directory listings."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from metabundle.errors import FetchError
from metabundle.http_client import Fetcher, RetryPolicy, parse_directory_listing
from tests.support.servers import faulty_handler, serve_directory

FAST = RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("alpha\n")
    (root / "data" / "sub").mkdir()
    (root / "data" / "sub" / "b.txt").write_text("beta\n")
    return root


def test_download_then_revalidate_from_cache(site: Path, tmp_path: Path) -> None:
    with serve_directory(site) as base, Fetcher(tmp_path / "cache", retry=FAST) as fetcher:
        first = fetcher.fetch(f"{base}/data/a.txt")
        second = fetcher.fetch(f"{base}/data/a.txt")
    assert first.path.read_text() == "alpha\n"
    assert not first.reused and second.reused
    assert first.sha256 == second.sha256
    assert fetcher.stats["downloaded"] == 1 and fetcher.stats["revalidated"] == 1


def test_changed_file_is_downloaded_again(site: Path, tmp_path: Path) -> None:
    import os

    with serve_directory(site) as base, Fetcher(tmp_path / "cache", retry=FAST) as fetcher:
        fetcher.fetch(f"{base}/data/a.txt")
        target = site / "data" / "a.txt"
        target.write_text("alpha, revised\n")
        os.utime(target, (target.stat().st_atime + 10, target.stat().st_mtime + 10))
        again = fetcher.fetch(f"{base}/data/a.txt")
    assert not again.reused
    assert again.path.read_text() == "alpha, revised\n"


def test_transient_errors_are_retried(site: Path, tmp_path: Path) -> None:
    failures = {"left": 2}
    retries: list[str] = []

    def flaky(handler) -> bool:
        if failures["left"] > 0:
            failures["left"] -= 1
            handler.send_error(503, "Service Unavailable")
            return True
        return False

    with (
        serve_directory(site, faulty_handler(flaky)) as base,
        Fetcher(
            tmp_path / "cache", retry=FAST, on_retry=lambda url, n, why: retries.append(why)
        ) as fetcher,
    ):
        fetched = fetcher.fetch(f"{base}/data/a.txt")
    assert fetched.path.read_text() == "alpha\n"
    assert retries == ["HTTP 503", "HTTP 503"]


def test_truncated_body_is_retried(site: Path, tmp_path: Path) -> None:
    cuts = {"left": 1}

    def cut_short(handler) -> bool:
        if cuts["left"] > 0:
            cuts["left"] -= 1
            handler.send_response(200)
            handler.send_header("Content-Length", "100")
            handler.end_headers()
            handler.wfile.write(b"alp")
            handler.wfile.flush()
            handler.close_connection = True
            return True
        return False

    handler = faulty_handler(cut_short)
    with serve_directory(site, handler) as base, Fetcher(tmp_path / "cache", retry=FAST) as f:
        fetched = f.fetch(f"{base}/data/a.txt")
    assert fetched.path.read_text() == "alpha\n"


def test_missing_file_fails_naming_the_url(site: Path, tmp_path: Path) -> None:
    with (
        serve_directory(site) as base,
        Fetcher(tmp_path / "cache", retry=FAST) as fetcher,
        pytest.raises(FetchError) as caught,
    ):
        fetcher.fetch(f"{base}/data/nope.txt")
    message = str(caught.value)
    assert f"{base}/data/nope.txt" in message and "404" in message
    assert message.count(".") >= 1 and "\n" not in message


def test_unreachable_host_fails_after_retries(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.txt"
    with Fetcher(tmp_path / "cache", retry=FAST) as fetcher, pytest.raises(FetchError) as caught:
        fetcher.fetch(url)
    assert url in str(caught.value) and "after 4 attempts" in str(caught.value)


def test_directory_listing_over_http_and_on_disk(site: Path, tmp_path: Path) -> None:
    with serve_directory(site) as base, Fetcher(tmp_path / "cache", retry=FAST) as fetcher:
        over_http = fetcher.list_directory(f"{base}/data/")
        on_disk = fetcher.list_directory((site / "data").as_uri() + "/")
    assert over_http == on_disk == ["a.txt", "sub/"]


def test_listing_parser_ignores_navigation_links() -> None:
    html = """<html><body><a href="/dbgap/studies/">Parent Directory</a>
    <a href="?C=M;O=A">Last modified</a><a href="phs000007.v31.p12/">phs000007.v31.p12/</a>
    <a href="https://elsewhere.example/">x</a><a href="GapExchange.xml">GapExchange.xml</a>"""
    names = parse_directory_listing(html, "https://host/dbgap/studies/phs000007/")
    assert names == ["GapExchange.xml", "phs000007.v31.p12/"]


def test_local_file_urls_are_read_in_place(site: Path, tmp_path: Path) -> None:
    with Fetcher(tmp_path / "cache", retry=FAST) as fetcher:
        fetched = fetcher.fetch((site / "data" / "a.txt").as_uri())
        with pytest.raises(FetchError):
            fetcher.fetch((site / "missing.txt").as_uri())
    assert fetched.path == site / "data" / "a.txt"
