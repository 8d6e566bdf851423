"""``metabundle dagster`` started by its absolute path with a plain ``PATH`` (as pipx,
uvx or a service manager start it) opens the Dagster UI from this interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx

from tests.support.cli import metabundle_command
from tests.support.processes import free_port, wait_for_port


def test_the_dagster_ui_starts_without_the_environment_on_path(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "dagster.log"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    command = [*metabundle_command(), "dagster", "--out", str(tmp_path / "out"), "--port"]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, str(port)],
            stdout=output,
            stderr=output,
            env=env,
            cwd=tmp_path,
            start_new_session=True,  # dagster dev starts children: stop them together
        )
        try:
            wait_for_port(process, port, log)
            answer = httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=60)
            assert answer.status_code == 200, answer.text
            assert "dagster_webserver_version" in answer.json()
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
    assert (tmp_path / "out" / ".dagster" / "dagster.yaml").is_file()
