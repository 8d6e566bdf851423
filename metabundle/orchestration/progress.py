"""Build progress: what each step is doing, how long it took and what it reused.

The pipeline reports through a :class:`Progress` object (a Dagster resource). The
CLI passes one that prints to the terminal; under ``dagster dev`` the default logs.
Either way the timings, peak memory and reuse facts are collected into the build
report that ``metabundle build`` writes to ``<out>/work/build_report.json``. Every op
that does work is a step, each embedding shard too (:func:`shard_step`), so that the
build's summary accounts for its time.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metabundle.meter import LiveFactory, MeteredReporter

logger = logging.getLogger("metabundle.build")


@dataclass
class StepRecord:
    """One step of a build: its duration and what it reused from earlier builds."""

    step: str
    seconds: float = 0.0
    status: str = "running"
    reused: dict[str, Any] = field(default_factory=dict)
    peak_rss_mib: int | None = None


#: How often a running step's resident memory is read.
MEMORY_SAMPLE_S = 0.2

SHARD_STEP_PREFIX = "embed "
"""Each embedding shard is a step of its own, named ``embed <shard>`` (``embed ukb_0``);
the build summary adds the shards up in one line."""


def shard_step(shard: str) -> str:
    """The step name of embedding shard ``shard`` (``ukb_0`` → ``embed ukb_0``)."""
    return SHARD_STEP_PREFIX + shard


def _resident_bytes() -> int | None:
    """This process's resident memory now (None where ``/proc`` is not available)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _high_water_bytes() -> int:
    """The process's peak resident memory so far (``ru_maxrss`` is in bytes on macOS,
    KiB elsewhere)."""
    mark = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return mark if sys.platform == "darwin" else mark * 1024


class PeakMemory:
    """The most memory this process held while a step ran: its high-water mark where
    the step raised it, otherwise the largest of readings every :data:`MEMORY_SAMPLE_S`
    (exact for the step that sets the build's peak, close for the others)."""

    def __init__(self) -> None:
        self._start_mark = _high_water_bytes()
        self._largest = _resident_bytes() or 0
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._done.wait(MEMORY_SAMPLE_S):
            self._largest = max(self._largest, _resident_bytes() or 0)

    def stop(self) -> int:
        """Stop sampling; the step's peak in MiB."""
        self._done.set()
        self._sampler.join()
        mark = _high_water_bytes()
        largest = max(self._largest, _resident_bytes() or 0)
        if mark > self._start_mark:
            largest = max(largest, mark)
        return largest >> 20


class Progress:
    """Collects step records and hands messages to a sink (a logger by default)."""

    def __init__(
        self, sink: Callable[[str, str], None] | None = None, live: LiveFactory | None = None
    ) -> None:
        self.sink = sink or (lambda step, text: logger.info("[%s] %s", step, text))
        self.live = live
        self.records: dict[str, StepRecord] = {}
        self._lock = threading.Lock()

    def message(self, step: str, text: str) -> None:
        self.sink(step, text)

    def reporter(self, step: str) -> MeteredReporter:
        """A one-argument callback that reports under ``step`` (and shows its meters
        live where this progress has a live display)."""
        return MeteredReporter(lambda text: self.message(step, text), self.live)

    @contextmanager
    def step(self, name: str) -> Iterator[StepRecord]:
        """Time a step; the body may fill ``record.reused``."""
        record = StepRecord(name)
        with self._lock:
            self.records[name] = record
        self.message(name, "started")
        started = time.perf_counter()
        memory = PeakMemory()
        try:
            yield record
        except BaseException:
            record.status = "failed"
            raise
        finally:
            record.seconds = round(time.perf_counter() - started, 3)
            record.peak_rss_mib = memory.stop()
        record.status = "done"
        self.message(name, f"done in {record.seconds:.1f}s")

    def report(self) -> dict[str, Any]:
        return {
            name: {
                "seconds": r.seconds,
                "status": r.status,
                "reused": r.reused,
                "peak_rss_mib": r.peak_rss_mib,
            }
            for name, r in self.records.items()
        }

    def write(self, path: Path, seconds: float, summary: list[str] | None = None) -> None:
        """Write the build report: every step's record, the build's wall time
        (``seconds``) and, for a build that succeeded, its ``summary`` lines."""
        report: dict[str, Any] = {"steps": self.report(), "seconds": round(seconds, 3)}
        if summary is not None:
            report["summary"] = summary
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, sort_keys=True))
