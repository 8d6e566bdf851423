"""A new serving process whose first calls arrive together answers each as it would
alone. The tools' pydantic models are built when a tool is first used
(``defer_build``), so the first calls of a threaded server (``metabundle mcp --http``,
Datasette) build them from several threads at once."""

from __future__ import annotations

from metabundle.search.examples import EXAMPLE_CALLS
from tests.support.build import Build
from tests.support.cli import run_python_json

THREADS = 4

FIRST_CALLS_TOGETHER = """
import json, sys, threading
from metabundle.search.examples import EXAMPLE_CALLS
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

THREADS = int(sys.argv[2])
release = Release.open(sys.argv[1])
start = threading.Barrier(THREADS)
together = [dict() for _ in range(THREADS)]

def first_calls(answers):
    start.wait()  # every thread begins with every tool's first use
    for name, arguments in sorted(EXAMPLE_CALLS.items()):
        answers[name] = call_tool(release, name, arguments)

threads = [threading.Thread(target=first_calls, args=(a,)) for a in together]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
alone = {name: call_tool(release, name, arguments) for name, arguments in EXAMPLE_CALLS.items()}
print(json.dumps({"together": together, "alone": alone}, sort_keys=True, default=str))
"""


def test_first_calls_from_threads_at_once_answer_as_one_call_alone(mirror_build: Build) -> None:
    report = run_python_json(FIRST_CALLS_TOGETHER, str(mirror_build.release), str(THREADS))
    alone = report["alone"]
    assert set(alone) == set(EXAMPLE_CALLS)
    for answers in report["together"]:
        different = sorted(name for name in alone if answers[name] != alone[name])
        assert not different, f"answered differently when called together: {different}"
