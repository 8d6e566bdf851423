"""Proof that code under test neither writes files nor reaches the network.

:class:`Canary` is a loopback TCP listener that counts every connection made to it:
point hostile URLs at it, and a native reader (DuckDB's httpfs, which Python hooks
cannot see) that reached out shows up as a connection. :class:`SocketGuard` records
every Python-level socket connect/lookup through an audit hook. :class:`Sentinel` is
a folder whose listing and contents must not change, with a secret that must never
appear in any output.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Canary:
    """A loopback listener that accepts and counts connections until closed."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port: int = self._server.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._server.close()


_GUARDS: list[SocketGuard] = []
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _GUARDS and event in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
        for guard in _GUARDS:
            guard.events.append((event, repr(args)[:200]))


@dataclass
class SocketGuard:
    """Records Python socket connects and name lookups while active (audit hooks
    cannot be removed, so one hook serves every guard)."""

    events: list[tuple[str, str]] = field(default_factory=list)

    @contextlib.contextmanager
    def watching(self) -> Iterator[SocketGuard]:
        global _HOOKED
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True
        _GUARDS.append(self)
        try:
            yield self
        finally:
            _GUARDS.remove(self)


@dataclass
class Sentinel:
    """A folder of bait files (readable paths for hostile SQL) that must stay as it is."""

    root: Path
    secret: str = field(default_factory=lambda: f"SENTINEL-{secrets.token_hex(8)}")

    def plant(self) -> Sentinel:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "secret.csv").write_text(f"secret\n{self.secret}\n")
        (self.root / "secret.txt").write_text(self.secret)
        (self.root / "secret.json").write_text(f'{{"secret": "{self.secret}"}}')
        return self

    def state(self) -> dict[str, str]:
        """Every path under the folder with the sha256 of its content."""
        return {
            str(path.relative_to(self.root)): hashlib.sha256(path.read_bytes()).hexdigest()
            if path.is_file()
            else "dir"
            for path in sorted(self.root.rglob("*"))
        }
