"""Long-running ``metabundle`` server processes on loopback for tests, and latency
summaries for load tests."""

from __future__ import annotations

import contextlib
import socket
import statistics
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.support.cli import clean_env, metabundle_command

START_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(
    args: Sequence[str], port: int, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``metabundle ARGS`` running until the block ends, once ``port`` accepts
    connections; its output goes to ``log`` (quoted when it fails to start). ``env``
    defaults to :func:`~tests.support.cli.clean_env`."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*metabundle_command(), *args],
            stdout=output,
            stderr=output,
            env=clean_env() if env is None else env,
        )
        try:
            wait_for_port(process, port, log)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def wait_for_port(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise AssertionError(f"the server did not listen on {port} in {START_TIMEOUT_S} s")


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return ordered[index]


def latency_summary(name: str, latencies: Sequence[float], errors: int, seconds: float) -> dict:
    """Calls, errors, throughput and p50/p95/max latency (ms) of a load run."""
    return {
        "target": name,
        "calls": len(latencies),
        "errors": errors,
        "seconds": round(seconds, 2),
        "calls_per_s": round(len(latencies) / seconds, 1) if seconds else None,
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p95_ms": round(1000 * percentile(latencies, 0.95), 1) if latencies else None,
        "max_ms": round(1000 * max(latencies), 1) if latencies else None,
    }
