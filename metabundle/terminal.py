"""How ``metabundle build`` shows its progress: one line per message on standard
error, and in a terminal a live rich progress bar (done of total, rate, time left)
for each long step's :class:`~metabundle.meter.Meter`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import click

from metabundle.meter import LiveFactory

Sink = Callable[[str, str], None]


class RichBar:
    """A live bar for one meter, drawn under the message lines of ``console``:
    description, bar, done/total, percent, rate and time left."""

    def __init__(self, console: object, what: str, total: int, unit: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task: object) -> Text:
                speed = getattr(task, "speed", None)
                return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s")

        self.bar = Progress(
            TextColumn(what),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            RateColumn(),
            TimeRemainingColumn(),
            console=console,  # type: ignore[arg-type]
        )
        self.task = self.bar.add_task(what, total=total)
        self.bar.start()

    def update(self, done: int) -> None:
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        self.bar.stop()


def build_output() -> tuple[Sink, LiveFactory | None]:
    """The message sink and, when standard error is a terminal, the live bars."""
    started = time.perf_counter()

    def line(step: str, text: str) -> str:
        return f"[{time.perf_counter() - started:7.1f}s] {step:<16} {text}"

    if not sys.stderr.isatty():
        return (lambda step, text: click.echo(line(step, text), err=True)), None
    from rich.console import Console

    console = Console(stderr=True, highlight=False, soft_wrap=True)

    def sink(step: str, text: str) -> None:
        console.print(line(step, text), markup=False)

    return sink, lambda what, total, unit: RichBar(console, what, total, unit)
