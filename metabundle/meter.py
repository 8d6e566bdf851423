"""Progress of one long piece of work: done of total, rate and time left.

A :class:`Meter` is advanced by the work as it goes. It writes a line through the
step's reporter at most every :data:`LINE_INTERVAL_S` seconds and once at the end
("embedding: 25,024 of 78,512 texts (31.9 %), 103 texts/s, about 8 min 40 s left"),
so logs and the Dagster UI show where a step is; a :class:`MeteredReporter` can also
carry a live display (the CLI's progress bar in a terminal), which then gets every
update instead of the periodic lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

LINE_INTERVAL_S = 10.0


class LiveDisplay(Protocol):
    """What a live progress display does with a meter's numbers."""

    def update(self, done: int) -> None: ...

    def close(self) -> None: ...


LiveFactory = Callable[[str, int, str], LiveDisplay]
"""Makes a live display for (description, total, unit)."""


@dataclass(frozen=True)
class MeteredReporter:
    """A step's reporter (call it with a line of text) that may also show meters live."""

    report: Callable[[str], None]
    live: LiveFactory | None = None

    def __call__(self, text: str) -> None:
        self.report(text)


def duration_text(seconds: float) -> str:
    """``523`` → ``8 min 43 s``; ``4000`` → ``1 h 6 min``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


class Meter:
    """Counts ``done`` towards ``total`` (``unit`` names what is counted)."""

    def __init__(
        self,
        report: Callable[[str], None],
        what: str,
        total: int,
        unit: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.report = report
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0
        self.clock = clock
        self.started = clock()
        self.last_line = self.started
        live = report.live if isinstance(report, MeteredReporter) else None
        self.display = live(what, total, unit) if live and total else None

    def status(self) -> str:
        """``what: done of total unit (percent), rate, time left``."""
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = self.done / elapsed
        share = 100.0 * self.done / self.total if self.total else 100.0
        text = f"{self.what}: {self.done:,} of {self.total:,} {self.unit} ({share:.1f} %)"
        if self.done:
            text += f", {rate:,.1f} {self.unit}/s" if rate < 10 else f", {rate:,.0f} {self.unit}/s"
        if 0 < self.done < self.total:
            text += f", about {duration_text((self.total - self.done) / rate)} left"
        return text

    def advance(self, count: int) -> None:
        self.done = min(self.total, self.done + count)
        if self.display is not None:
            self.display.update(self.done)
            return
        now = self.clock()
        if now - self.last_line >= LINE_INTERVAL_S:
            self.last_line = now
            self.report(self.status())

    def close(self) -> None:
        """End the display (if any) and report the final line."""
        if self.display is not None:
            self.display.close()
        elapsed = self.clock() - self.started
        self.report(f"{self.status()} in {duration_text(elapsed)}")
