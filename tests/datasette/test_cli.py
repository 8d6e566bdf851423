"""``metabundle datasette``: serving a release read-only over loopback HTTP, and
writing a deployment folder with --publish-dir."""

from __future__ import annotations

from pathlib import Path

import httpx

from metabundle import __version__
from metabundle.release.manifest import read_manifest
from metabundle.release.verify import verify_release
from tests.support.cli import run_cli


def test_the_server_serves_the_release_read_only(served_url: str, release_path: Path) -> None:
    version = read_manifest(release_path)["version"]
    databases = httpx.get(f"{served_url}/-/databases.json").json()
    assert [(d["name"], d["is_mutable"]) for d in databases] == [("metabundle", False)]
    assert httpx.get(f"{served_url}/-/settings.json").json()["sql_time_limit_ms"] == 3000
    info = httpx.get(f"{served_url}/-/api/get_release_info").json()
    assert info["version"] == version
    refused = httpx.post(f"{served_url}/-/api/search_all", json={"query": " "})
    assert refused.status_code == 400
    assert httpx.get(f"{served_url}/").text.count(f"metabundle {version}") >= 1


def served_plugin_pins(served_url: str) -> set[str]:
    """``name==version`` of every plugin the running instance loaded, metabundle's aside."""
    plugins = httpx.get(f"{served_url}/-/plugins.json").json()
    versions = httpx.get(f"{served_url}/-/versions.json").json()
    pins = {f"datasette=={versions['datasette']['version']}"}
    for plugin in plugins:
        if plugin["name"] != "metabundle":
            pins.add(f"{plugin['name'].replace('_', '-')}=={plugin['version']}")
    return pins


def test_publish_dir_holds_a_deployment(
    release_path: Path, tmp_path: Path, served_url: str
) -> None:
    out = tmp_path / "deploy"
    result = run_cli("datasette", "--release", str(release_path), "--publish-dir", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out)
    copy = out / "release"
    assert verify_release(copy).version == read_manifest(release_path)["version"]
    assert (copy / "datasette" / "metadata.json").is_file()
    dockerfile = (out / "Dockerfile").read_text()
    assert "RUN pip install -r requirements.txt" in dockerfile
    assert "COPY release/ /app/release/" in dockerfile
    assert "metabundle datasette --release /app/release --host 0.0.0.0" in dockerfile
    install, *pins = (out / "requirements.txt").read_text().splitlines()
    assert install == f"metabundle=={__version__}"
    served = served_plugin_pins(served_url)
    assert {"datasette-mcp==0.3", "datasette-dashboards==0.8.0"} <= served
    assert served <= set(pins), "Datasette and every plugin it serves with are pinned"
    assert all("==" in pin for pin in pins)
    publish = (out / "publish.sh").read_text()
    assert "release/metabundle.sqlite" in publish
    assert "--metadata release/datasette/metadata.json" in publish
    assert "--template-dir release/datasette/templates" in publish
    assert "--setting sql_time_limit_ms 3000" in publish
    assert "--install 'metabundle==" in publish
    assert all(f"--install '{pin}'" in publish for pin in pins)

    again = run_cli("datasette", "--release", str(release_path), "--publish-dir", str(out))
    assert again.returncode == 1
    assert "is not empty" in again.stderr


def test_publish_dir_copies_a_local_wheel(release_path: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "metabundle-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    out = tmp_path / "deploy"
    result = run_cli(
        "datasette",
        "--release",
        str(release_path),
        "--publish-dir",
        str(out),
        "--install",
        str(wheel),
    )
    assert result.returncode == 0, result.stderr
    assert (out / wheel.name).read_bytes() == wheel.read_bytes()
    assert (out / "requirements.txt").read_text().splitlines()[0] == f"./{wheel.name}"
    assert f"COPY {wheel.name} ./" in (out / "Dockerfile").read_text()


def test_a_missing_release_is_one_sentence(tmp_path: Path) -> None:
    result = run_cli("datasette", "--release", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert result.stderr.startswith("metabundle: No release at")
    assert "Traceback" not in result.stderr
