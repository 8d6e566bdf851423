"""``python -m benchmarks.cross_study`` runs on the shared build and reports, for every
concept, which studies hold it and how many of them the cross-study tool returned."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.cross_study import CONCEPTS, main
from tests.support.build import Build


def test_the_cross_study_benchmark_reports_every_concept(
    mirror_build: Build, tmp_path: Path
) -> None:
    out = tmp_path / "cross.json"
    assert main(["--release", str(mirror_build.release), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["concepts"]) == set(CONCEPTS)
    systolic = report["concepts"]["systolic blood pressure"]
    assert systolic["studies_holding"] >= 2  # JHS and ECLIPSE in the shared build
    for row in report["concepts"].values():
        assert 0 <= row["covered"] <= row["studies_holding"]
        assert row["time_ratio"] is not None and row["time_ratio"] > 0
