"""The download layer under every fault a flaky network produces, against a real
loopback server: transient faults are retried with backoff and the file arrives whole;
a permanent failure is one sentence naming the URL; nothing partial is cached."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from metabundle.errors import FetchError
from metabundle.http_client import Fetcher, RetryPolicy
from tests.support.faults import FaultPlan
from tests.support.servers import faulty_handler, serve_directory

FAST = RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05)
BODY = "alpha\tbeta\n" * 5000
PATH = "/data/file.tsv"


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "data").mkdir(parents=True)
    (root / "data" / "file.tsv").write_text(BODY)
    return root


def fetch_through(site: Path, tmp_path: Path, plan: FaultPlan, **fetcher: object) -> tuple:
    """Fetch ``PATH`` through a server following ``plan``; (file, retry reasons)."""
    reasons: list[str] = []
    with (
        serve_directory(site, faulty_handler(plan)) as base,
        Fetcher(
            tmp_path / "cache",
            retry=FAST,
            on_retry=lambda url, n, why: reasons.append(why),
            **fetcher,  # type: ignore[arg-type]
        ) as client,
    ):
        return client.fetch(f"{base}{PATH}"), reasons


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("500", "HTTP 500"),
        ("502", "HTTP 502"),
        ("503", "HTTP 503"),
        ("504", "HTTP 504"),
        ("429", "HTTP 429"),
        ("reset", "Error"),
        ("truncate", "RemoteProtocolError"),
        ("gzip-garbage", "DecodingError"),
    ],
)
def test_a_transient_fault_is_retried_and_the_file_arrives_whole(
    site: Path, tmp_path: Path, fault: str, reason: str
) -> None:
    plan = FaultPlan({PATH: [fault, fault]})
    fetched, reasons = fetch_through(site, tmp_path, plan)
    assert fetched.path.read_text() == BODY
    assert plan.requests(PATH) == [fault, fault, "served"]
    assert len(reasons) == 2 and all(reason in r for r in reasons), reasons
    assert not list((tmp_path / "cache").rglob("*.part")), "a partial download was left"


def test_a_stalled_response_times_out_and_is_retried(site: Path, tmp_path: Path) -> None:
    plan = FaultPlan({PATH: ["stall"]}, stall_s=1.5)
    started = time.monotonic()
    fetched, reasons = fetch_through(site, tmp_path, plan, timeout_s=0.5)
    assert fetched.path.read_text() == BODY
    assert reasons and "Timeout" in reasons[0]
    assert time.monotonic() - started < 10


def test_mixed_faults_up_to_the_attempt_limit_still_succeed(site: Path, tmp_path: Path) -> None:
    plan = FaultPlan({PATH: ["429", "reset", "503"]})  # attempts=4: three faults, then ok
    fetched, reasons = fetch_through(site, tmp_path, plan)
    assert fetched.path.read_text() == BODY and len(reasons) == 3


@pytest.mark.parametrize("fault", ["503", "reset"])
def test_a_fault_that_never_clears_fails_once_naming_the_url(
    site: Path, tmp_path: Path, fault: str
) -> None:
    plan = FaultPlan({PATH: [fault] * 10})
    with pytest.raises(FetchError) as caught:
        fetch_through(site, tmp_path, plan)
    message = str(caught.value)
    assert PATH in message and message.startswith("Could not download http://127.0.0.1:")
    assert "\n" not in message and message.endswith(".")
    assert len(plan.requests(PATH)) == FAST.attempts
    assert not list((tmp_path / "cache").rglob("*.body")), "a failed download was cached"


def test_a_permanent_404_is_not_retried(site: Path, tmp_path: Path) -> None:
    plan = FaultPlan({PATH: ["always:404"]})
    with pytest.raises(FetchError, match=r"file\.tsv: HTTP 404") as caught:
        fetch_through(site, tmp_path, plan)
    assert plan.requests(PATH) == ["always:404"]
    assert "\n" not in str(caught.value)


def test_a_directory_listing_is_retried_too(site: Path, tmp_path: Path) -> None:
    plan = FaultPlan({"/data/": ["503", "reset"]})
    with (
        serve_directory(site, faulty_handler(plan)) as base,
        Fetcher(tmp_path / "cache", retry=FAST) as client,
    ):
        names = client.list_directory(f"{base}/data/")
    assert names == ["file.tsv"]
    assert plan.requests("/data/") == ["503", "reset", "served"]


def test_a_fault_on_revalidation_keeps_the_cached_copy_intact(site: Path, tmp_path: Path) -> None:
    plan = FaultPlan({})
    with (
        serve_directory(site, faulty_handler(plan)) as base,
        Fetcher(tmp_path / "cache", retry=FAST) as client,
    ):
        first = client.fetch(f"{base}{PATH}")
        plan.add(PATH, "truncate", "reset")
        second = client.fetch(f"{base}{PATH}")
    assert second.reused and second.sha256 == first.sha256
    assert second.path.read_text() == BODY
