"""A fault plan for the loopback mirror: the first requests to chosen paths fail in
the ways real networks fail (5xx, 429 with ``Retry-After``, a reset connection, a body
cut short, a garbled compressed body, a stalled response), later ones are served.

Use with :func:`tests.support.servers.faulty_handler`::

    plan = FaultPlan({"/omop/x/CONCEPT.csv": ["503", "reset"]})
    with serve_directory(root, faulty_handler(plan)) as url: ...
    assert plan.requests("/omop/x/CONCEPT.csv") == ["503", "reset", "served"]

Every request is logged with what it got, so a test can prove the faults happened.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from tests.support.servers import FaultyHandler

FAULTS = ("500", "502", "503", "504", "429", "reset", "truncate", "gzip-garbage", "stall")
"""Every fault a plan can inject; ``stall`` sleeps :attr:`FaultPlan.stall_s` first."""


@dataclass
class FaultPlan:
    """Faults to inject per URL path, in order, one per request; then serve normally.

    A path listed with ``["always:404"]`` (or any ``always:<status>``) fails every
    request with that status: a permanent failure.
    """

    faults: Mapping[str, Iterable[str]]
    stall_s: float = 2.0
    log: list[tuple[str, str]] = field(default_factory=list)
    _pending: dict[str, list[str]] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._pending = {path: _checked(kinds) for path, kinds in self.faults.items()}

    def __call__(self, handler: FaultyHandler) -> bool:
        """The :class:`FaultyHandler` hook: True when this request was answered by a fault."""
        path = unquote(urlsplit(handler.path).path)
        with self._lock:
            queue = self._pending.get(path, [])
            fault = queue[0] if queue else None
            if fault is not None and not fault.startswith("always:"):
                queue.pop(0)
            self.log.append((path, fault or "served"))
        if fault is None:
            return False
        if fault == "stall":
            time.sleep(self.stall_s)
            return False
        _inject(handler, fault)
        return True

    def add(self, path: str, *faults: str) -> None:
        """Queue more faults for ``path`` (for the requests still to come)."""
        with self._lock:
            self._pending.setdefault(path, []).extend(_checked(faults))

    def requests(self, path: str) -> list[str]:
        """What each request for ``path`` got, in order (a fault name or ``served``)."""
        with self._lock:
            return [outcome for logged, outcome in self.log if logged == path]

    def served(self, path: str) -> int:
        """How many requests for ``path`` reached the file (after the faults)."""
        return self.requests(path).count("served")

    def pending(self) -> dict[str, list[str]]:
        """Faults not injected yet (a test expects none left)."""
        with self._lock:
            return {p: list(q) for p, q in self._pending.items() if q and not _permanent(q)}


def _checked(kinds: Iterable[str]) -> list[str]:
    kinds = list(kinds)
    unknown = [k for k in kinds if k not in FAULTS and not k.startswith("always:")]
    if unknown:
        raise ValueError(f"unknown fault {unknown[0]!r}; choose from {FAULTS}")
    return kinds


def _permanent(queue: list[str]) -> bool:
    return bool(queue) and queue[0].startswith("always:")


def _inject(handler: FaultyHandler, fault: str) -> None:
    if fault.startswith("always:"):
        handler.send_error(int(fault.split(":", 1)[1]))
    elif fault.isdigit():
        handler.send_response(int(fault))
        if fault == "429":
            handler.send_header("Retry-After", "0")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    elif fault == "reset":
        _reset(handler)
    elif fault == "truncate":
        _cut_short(handler, b"partial", declared=1000)
    elif fault == "gzip-garbage":
        _cut_short(handler, b"this is not gzip data", declared=None, encoding="gzip")


def _reset(handler: FaultyHandler) -> None:
    """Abort the connection with a TCP reset before any response."""
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
    handler.wfile = _Discard()


def _cut_short(
    handler: FaultyHandler, body: bytes, declared: int | None, encoding: str | None = None
) -> None:
    """A 200 whose body is not what its headers promise."""
    handler.send_response(200)
    if encoding:
        handler.send_header("Content-Encoding", encoding)
    handler.send_header("Content-Length", str(declared if declared is not None else len(body)))
    handler.end_headers()
    handler.wfile.write(body)
    handler.wfile.flush()
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)


class _Discard:
    """Stands in for the socket writer of an aborted connection."""

    closed = False

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
