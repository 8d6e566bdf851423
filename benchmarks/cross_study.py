"""``find_variables_across_studies`` against asking every study on its own.

``python -m benchmarks.cross_study [--release DIR] [--json OUT]``

For each concept, the baseline calls ``search_dbgap_catalog`` once per study (the
preferred version of every study with variables, as the tool searches them) and keeps
each study's first hit; the tool answers in one call (``limit`` 50, ``per_study`` 1).
A study *holds* the concept when its baseline first hit's description matches the
concept's pattern. Reported per concept: the studies that hold it, how many of them
the tool returns (coverage), the share of the tool's first groups, as many as the
studies that hold it, whose first variable matches the pattern (R-precision), and
the time of one tool call as a ratio to the per-study loop, both in the same run.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from benchmarks.common import ratio, release_main, timed
from metabundle.search.release import Release
from metabundle.search.services.dbgap.studies import study_index
from metabundle.search.tools import call_tool

CONCEPTS = {
    "systolic blood pressure": r"systolic",
    "diastolic blood pressure": r"diastolic",
    "body mass index": r"body[ -]mass index|\bbmi\b",
    "current cigarette smoking": r"smok|cigarette",
    "HDL cholesterol": r"\bhdl\b|high[ -]density lipoprotein",
    "fasting glucose": r"glucose",
}
MAX_STUDIES = 50


def described(variable: dict[str, Any]) -> str:
    """A variable's description (a hit leaves it out where it repeats the title)."""
    return variable.get("description") or variable.get("title") or ""


def per_study(release: Release, query: str, studies: list[str]) -> dict[str, str]:
    """Each study's first variable description for ``query`` (one call per study)."""
    first = {}
    for study_id in studies:
        payload = call_tool(
            release, "search_dbgap_catalog", {"study_id": study_id, "query": query, "limit": 1}
        )
        if payload.get("results"):
            first[study_id] = described(payload["results"][0])
    return first


def measure(release: Release) -> dict[str, Any]:
    studies = [v[0].study_id for v in study_index(release).by_base.values() if v[0].has_variables]
    call_tool(release, "find_variables_across_studies", {"query": "warm up"})
    report: dict[str, Any] = {"release": str(release.path), "studies": len(studies), "concepts": {}}
    for concept, pattern in CONCEPTS.items():
        matches = re.compile(pattern, re.I)
        loop_s, first = timed(lambda c=concept: per_study(release, c, studies))
        tool_s, payload = timed(
            lambda c=concept: call_tool(
                release,
                "find_variables_across_studies",
                {"query": c, "per_study": 1, "limit": MAX_STUDIES},
            )
        )
        holding = {s for s, description in first.items() if matches.search(description)}
        groups = payload["results"]
        returned = {g["study"]["study_id"] for g in groups}
        top = groups[: len(holding)]
        relevant = [g for g in top if matches.search(described(g["variables"][0]))]
        report["concepts"][concept] = {
            "studies_holding": len(holding),
            "covered": len(holding & returned),
            "coverage": ratio(len(holding & returned), len(holding), 3),
            "groups": len(groups),
            "r_precision": ratio(len(relevant), len(top), 3),
            "tool_s": round(tool_s, 3),
            "per_study_loop_s": round(loop_s, 3),
            "time_ratio": ratio(tool_s, loop_s, 3),
        }
    return report


def shown(value: float | None) -> str:
    """A ratio, or a dash where it has no denominator (no study holds the concept)."""
    return "-" if value is None else str(value)


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['studies']} studies with variables",
        "concept                     holding  covered  coverage  r-prec  tool s  loop s  ratio",
    ]
    for concept, row in report["concepts"].items():
        lines.append(
            f"{concept:<27} {row['studies_holding']:>7}  {row['covered']:>7}  "
            f"{shown(row['coverage']):>8}  {shown(row['r_precision']):>6}  {row['tool_s']:>6}  "
            f"{row['per_study_loop_s']:>6}  {shown(row['time_ratio'])}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return release_main("python -m benchmarks.cross_study", __doc__, measure, render, argv)


if __name__ == "__main__":
    sys.exit(main())
