"""``python -m benchmarks.install [--work DIR] [--repeats N] [--json OUT]``: what a user's
install weighs and how soon its serving process has imported what it needs.

Builds this checkout's wheel and installs it as users do, with the locked versions
(``requirements.lock``), into two fresh virtual environments: the base install (no
extras: serving, downloading, verifying) and ``metabundle[build]``. For each it reports
site-packages' size and file count and the import time of the serving path (everything
``metabundle mcp`` and ``metabundle datasette`` import before the first request), beside
two baselines taken in the same run and the same environment: ``python -c pass`` and
the MCP SDK's server import alone. Needs the package index (pip); nothing else.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO

SERVING_IMPORTS = (
    "import metabundle.cli, metabundle.mcp.server, metabundle.search.tools, "
    "metabundle.datasette_plugin"
)
BASELINES = {"python -c pass": "pass", "MCP SDK server": "import mcp.server.mcpserver"}
INSTALLS = {"base": "", "build": "[build]"}


def _run(*args: str | Path) -> str:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=True).stdout


def folder_size(folder: Path) -> tuple[int, int]:
    """Bytes and files under ``folder`` (links not followed)."""
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files), len(files)


def import_seconds(python: Path, code: str, repeats: int) -> float:
    """Median wall time of a fresh interpreter running ``code``."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(work: Path, repeats: int) -> dict[str, Any]:
    wheels = work / "wheel"
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, REPO)
    wheel = next(wheels.glob("metabundle-*.whl"))
    report: dict[str, Any] = {}
    for name, extras in INSTALLS.items():
        venv = work / name
        _run(sys.executable, "-m", "venv", "--clear", venv)
        python = venv / "bin" / "python"
        _run(
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "-c",
            REPO / "requirements.lock",
            f"metabundle{extras} @ {wheel.as_uri()}",
        )
        site = Path(
            _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip()
        )
        size, files = folder_size(site)
        timings = {
            label: import_seconds(python, code, repeats)
            for label, code in {**BASELINES, "serving path": SERVING_IMPORTS}.items()
        }
        report[name] = {
            "site_packages_bytes": size,
            "files": files,
            "distributions": len(_run(python, "-m", "pip", "list", "--format=freeze").split()),
            "import_s": timings,
            "serving_over_sdk": timings["serving path"] / timings["MCP SDK server"],
        }
    report["base_over_build_size"] = (
        report["base"]["site_packages_bytes"] / report["build"]["site_packages_bytes"]
    )
    return report


def render(report: dict[str, Any]) -> str:
    lines = [
        "| install | site-packages | files | distributions | `python -c pass` | "
        "MCP SDK import | serving path import | serving / SDK |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in INSTALLS:
        row = report[name]
        t = row["import_s"]
        lines.append(
            f"| {name} | {row['site_packages_bytes'] / 1e6:,.0f} MB | {row['files']:,} | "
            f"{row['distributions']} | {t['python -c pass']:.3f} s | {t['MCP SDK server']:.3f} s"
            f" | {t['serving path']:.3f} s | {row['serving_over_sdk']:.2f} |"
        )
    lines.append(f"\nbase / build size: {report['base_over_build_size']:.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.install", description=__doc__)
    parser.add_argument("--work", type=Path, help="folder for the wheel and environments")
    parser.add_argument("--repeats", type=int, default=7, help="interpreters per import time")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metabundle-install-") as scratch:
        report = measure(args.work or Path(scratch), args.repeats)
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
