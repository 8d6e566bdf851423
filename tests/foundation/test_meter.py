"""Progress meters: done of total, rate and time left, in lines or on a live display."""

from __future__ import annotations

from metabundle.meter import LINE_INTERVAL_S, Meter, MeteredReporter, duration_text


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Display:
    def __init__(self) -> None:
        self.seen: list[int] = []
        self.closed = False

    def update(self, done: int) -> None:
        self.seen.append(done)

    def close(self) -> None:
        self.closed = True


def test_lines_give_done_total_rate_and_time_left_at_most_every_interval() -> None:
    lines: list[str] = []
    clock = Clock()
    meter = Meter(lines.append, "embedding", 1000, "texts", clock=clock)
    clock.now = 1.0
    meter.advance(100)
    assert lines == []  # not before the interval
    clock.now = LINE_INTERVAL_S
    meter.advance(100)
    assert lines == [
        "embedding: 200 of 1,000 texts (20.0 %), 20 texts/s, about 40 s left",
    ]
    clock.now = 2 * LINE_INTERVAL_S
    meter.advance(800)
    meter.close()
    assert lines[-1] == "embedding: 1,000 of 1,000 texts (100.0 %), 50 texts/s in 20 s"


def test_a_live_display_gets_every_update_instead_of_lines() -> None:
    displays: list[Display] = []

    def live(what: str, total: int, unit: str) -> Display:
        displays.append(Display())
        return displays[-1]

    lines: list[str] = []
    clock = Clock()
    meter = Meter(MeteredReporter(lines.append, live), "fetch", 3, "files", clock=clock)
    for step in range(3):
        clock.now = (step + 1) * LINE_INTERVAL_S
        meter.advance(1)
    meter.close()
    (display,) = displays
    assert display.seen == [1, 2, 3] and display.closed
    assert lines == ["fetch: 3 of 3 files (100.0 %), 0.1 files/s in 30 s"]


def test_durations_read_as_a_person_would_say_them() -> None:
    assert [duration_text(s) for s in (4, 523, 4000)] == ["4 s", "8 min 43 s", "1 h 6 min"]
