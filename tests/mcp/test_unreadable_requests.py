"""Every request line gets an answer: over stdio a line the SDK cannot read (too deeply
nested, a 5,000-digit integer, a lone surrogate, malformed JSON, a line over the cap) is
answered with a JSON-RPC error carrying the request's id, as streamable HTTP answers it,
and the server goes on answering."""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from metabundle.mcp.stdio import MAX_LINE_BYTES
from tests.mcp.test_transports import http_server
from tests.support.cli import clean_env, metabundle_command

ANSWER_TIMEOUT_S = 30
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def _nested(depth: int) -> dict:
    value: dict = {"query": "bmi"}
    for _ in range(depth):
        value = {"a": value}
    return value


def _call(request_id: int, arguments_json: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"search_all","arguments":{arguments_json}}}}}'
    )


UNREADABLE = {
    "nested 250 levels": _call(11, json.dumps(_nested(250))),
    "5,000-digit integer": _call(12, '{"query":"bmi","limit":' + "9" * 5000 + "}"),
    "lone surrogate": _call(13, '{"query":"\\ud800"}'),
    "malformed JSON": '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":',
}


class RawStdio:
    """A client that writes JSON-RPC lines to ``metabundle mcp``'s stdin as they are."""

    def __init__(self, release: Path) -> None:
        self.process = subprocess.Popen(
            [*metabundle_command(), "mcp", "--release", str(release)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
        )

    def send(self, line: str | bytes) -> None:
        data = line.encode() if isinstance(line, str) else line
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_TIMEOUT_S)
        assert ready, f"no answer in {ANSWER_TIMEOUT_S} s"
        return json.loads(self.process.stdout.readline())


@pytest.fixture
def raw(release_path: Path) -> Iterator[RawStdio]:
    client = RawStdio(release_path)
    client.send(json.dumps(INITIALIZE))
    assert client.answer()["id"] == 0
    client.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield client
    client.process.kill()
    client.process.wait()


@pytest.mark.parametrize("line", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_stdio_answers_an_unreadable_line_with_its_id(raw: RawStdio, line: str) -> None:
    raw.send(line)
    answer = raw.answer()
    expected_id = json.loads(line.split('"id":', 1)[1].split(",", 1)[0])
    assert answer["id"] == expected_id
    assert answer["error"]["code"] == -32700
    assert answer["error"]["message"].startswith("Parse error")
    raw.send(_call(99, '{"query":"body mass index"}'))
    assert raw.answer()["id"] == 99  # and the server goes on


def test_stdio_answers_a_line_over_the_cap_and_goes_on(raw: RawStdio) -> None:
    raw.send(_call(21, json.dumps({"query": "x" * (MAX_LINE_BYTES + 10)})))
    answer = raw.answer()
    assert answer["id"] == 21
    assert answer["error"]["code"] == -32600
    assert f"{MAX_LINE_BYTES:,} bytes" in answer["error"]["message"]
    raw.send(_call(22, '{"query":"body mass index"}'))
    assert raw.answer()["id"] == 22


def test_streamable_http_answers_the_same_lines(release_path: Path) -> None:
    headers = {"accept": "application/json, text/event-stream"}
    with http_server(release_path) as url, httpx.Client(timeout=ANSWER_TIMEOUT_S) as client:
        opened = client.post(url, json=INITIALIZE, headers=headers)
        session = {"mcp-session-id": opened.headers.get("mcp-session-id", "")}
        for name, line in UNREADABLE.items():
            answer = client.post(
                url,
                content=line,
                headers={**headers, **session, "content-type": "application/json"},
            )
            assert answer.status_code in {200, 400}, (name, answer.text)
            assert "error" in answer.text, (name, answer.text)
