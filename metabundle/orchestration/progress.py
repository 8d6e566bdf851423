"""Build progress: what each step is doing, how long it took and what it reused.

The pipeline reports through a :class:`Progress` object (a Dagster resource). The
CLI passes one that prints to the terminal; under ``dagster dev`` the default logs.
Either way the timings and reuse facts are collected into the build report that
``metabundle build`` writes to ``<out>/work/build_report.json``.
"""

from __future__ import annotations

import json
import logging
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
        try:
            yield record
        except BaseException:
            record.status = "failed"
            raise
        finally:
            record.seconds = round(time.perf_counter() - started, 3)
        record.status = "done"
        self.message(name, f"done in {record.seconds:.1f}s")

    def report(self) -> dict[str, Any]:
        return {
            name: {"seconds": r.seconds, "status": r.status, "reused": r.reused}
            for name, r in self.records.items()
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"steps": self.report()}, indent=2, sort_keys=True))
