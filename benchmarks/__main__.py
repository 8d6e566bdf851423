"""``python -m benchmarks [--quick] [--json OUT] [--release DIR] [--only a,b] [--skip a,b]``.

Runs the measurements of :mod:`benchmarks.harness` (full mode unless ``--quick``),
prints the table and writes the whole report as JSON to ``--json`` (default: none).
Exits 1 when a section failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from benchmarks.common import MODES
from benchmarks.harness import SECTIONS, render, run


def _sections(text: str | None, parser: argparse.ArgumentParser) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a few minutes")
    parser.add_argument(
        "--mode", choices=sorted(MODES), help="explicit mode (full, quick, tiny); overrides --quick"
    )
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument(
        "--release", type=Path, default=Path("build/current"), help="release to measure"
    )
    parser.add_argument(
        "--complete-release",
        type=Path,
        help='a build of the complete mirror for quality queries marked "corpus": "complete"',
    )
    parser.add_argument("--only", help=f"comma-separated sections of {', '.join(SECTIONS)}")
    parser.add_argument("--skip", help="comma-separated sections to leave out")
    args = parser.parse_args(argv)
    config = MODES[args.mode or ("quick" if args.quick else "full")]
    skip = _sections(args.skip, parser)
    if skip:
        config = dataclasses.replace(config, skip=skip)
    only = _sections(args.only, parser) or SECTIONS
    report = run(config, args.release, only, args.complete_release)
    print(render(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
        print(f"\nreport written to {args.json}", file=sys.stderr)
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
