"""A serving process lets its pages of the release's memory-mapped files go once they
pass the budget, and answers the same afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from metabundle.search import mapped_pages
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/smaps")


def resident_kb(folder: Path) -> int:
    """This process's resident kB of mappings of files under ``folder``."""
    prefix = str(folder.resolve()) + "/"
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            inside = len(head) >= 6 and head[5].startswith(prefix)
        elif inside and head[0] == "Rss:":
            total += int(head[1])
    return total


def test_pages_over_the_budget_are_let_go_after_a_call(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments = {"query": "blood pressure", "method": "hybrid"}
    monkeypatch.setenv("METABUNDLE_MAPPED_PAGES_MB", "0")  # never
    first = call_tool(release, "search_all", arguments)
    assert first["results"] and resident_kb(release.path) > 0
    assert not release.trim_mapped_pages()
    monkeypatch.setenv("METABUNDLE_MAPPED_PAGES_MB", "1")  # always over
    again = call_tool(release, "search_all", arguments)
    assert resident_kb(release.path) == 0  # the call ended by letting them go
    assert again == first
    monkeypatch.setenv("METABUNDLE_MAPPED_PAGES_MB", "100000")  # far under
    call_tool(release, "search_all", arguments)
    assert resident_kb(release.path) > 0 and not release.trim_mapped_pages()
    assert mapped_pages.mapped_mb() > 0
