"""Scale: releases of one and ten million search documents built by the production
``metabundle build`` on this machine, then opened and served.

Each size is the complete upstream mirror (every source, about 245k documents apart
from OMOP) plus a generated Athena-format vocabulary export making up the rest as OMOP
concepts, one search document each (``benchmarks.omop_ingest.generate``: concept names
of 2-7 and synonyms of 1-4 words drawn with their observed frequencies from the
mirror's UK Biobank titles and notes and dbGaP descriptions, ``benchmarks.corpus``;
vocabulary, domain and class triples and relationship ids from the mirror's real
subsets). The vocabulary's graph is kept at one relationship and one ancestor row per
concept, a seventh of a real export's density: the graph at Athena's size is
``benchmarks.omop_athena``'s subject, the documents are this one's. The build embeds
with ``wordllama`` (a static model, about 10k texts/s on two cores) into a fresh
embedding cache, in a child process whose own resource usage gives its peak memory;
the run's sizes share one build cache, so the smallest is a cold build and the larger
ones parse and embed only the generated vocabulary anew.

For every size, in one run, smallest first:

* build wall time and peak memory, and each step's time and peak memory (the build
  report);
* release size per file kind;
* a new process's first keyword and first hybrid ``search_all`` answer (wall time,
  of which open and first query);
* a serving child's RSS after opening and after 250 mixed tool calls, with p50/p95
  per tool and method of those calls;
* ``search_all`` p50/p95 per method in this process;
* ANN recall@10 of the release's semantic path against brute force, and the ANN step's
  build time;
* at the smallest size only, the keyword index against SQLite FTS5 on a generated
  corpus of the same size (``benchmarks.keyword.compare``).

    python -m benchmarks.scale --docs 1000000 --docs 10000000 --json scale.json
    python -m benchmarks.scale --docs 300000 --cache build/cache   # a quick look

Data is written under ``--workdir`` (default: a temporary folder) and removed
afterwards unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from benchmarks.ann import release_path as ann_release_path
from benchmarks.common import child_env, machine, print_and_save
from benchmarks.corpus import upstream_dir, vocabulary
from benchmarks.keyword import compare as keyword_compare
from benchmarks.omop_athena import metabundle_command
from benchmarks.omop_ingest import generate
from benchmarks.serving import first_answer, mixed_queries, search_latency, serving_memory
from metabundle.search.release import Release

#: Search documents of the complete mirror without its OMOP concepts (2026-12-02).
MIRROR_DOCS = 245_307
#: All of Us documents per generated concept: All of Us describes the vocabulary's
#: standard concepts of its EHR domains, so generated concepts give it documents too
#: (393,601 from 754,693 concepts, 2026-12-02).
AOU_DOCS_PER_CONCEPT = 0.52
SERVING_CALLS = 250
LATENCY_QUERIES = 120
ANN_QUERIES = 200
KEYWORD_QUERIES = 300


def export_rows(docs: int) -> dict[str, int]:
    """Rows of the generated export that bring the release to about ``docs`` documents
    (its concepts and the All of Us documents they give)."""
    concepts = max(1_000, round((docs - MIRROR_DOCS) / (1 + AOU_DOCS_PER_CONCEPT)))
    return {
        "concepts": concepts,
        "synonyms": int(concepts * 0.6),
        "relationships": concepts,
        "ancestors": concepts,
    }


def make_export(folder: Path, docs: int) -> dict[str, Any]:
    """Write the export for ``docs`` documents; its rows, seconds and size."""
    rows = export_rows(docs)
    words, weights, real = vocabulary()
    started = time.perf_counter()
    generate(folder, **rows, words=(pl.Series("word", words, dtype=pl.String), weights))
    return {
        "rows": rows,
        "words_from_mirror": real,
        "generate_s": round(time.perf_counter() - started, 1),
        "export_mib": sum(p.stat().st_size for p in folder.iterdir()) >> 20,
    }


def build(export: Path, work: Path, cache: Path | None) -> dict[str, Any]:
    """``metabundle build`` of the mirror and the export in a child process, with the
    run's own cache unless ``cache`` is given (so the smallest size is a cold build and
    larger ones reuse the mirror's parses and vectors)."""
    log = work / "build.log"
    command = [
        *metabundle_command(),
        "build",
        "--upstream",
        str(upstream_dir()),
        "--omop-vocab",
        str(export),
        "--embeddings",
        "wordllama",
        "--out",
        str(work / "out"),
        "--cache",
        str(cache or work.parent / "cache"),
    ]
    started = time.perf_counter()
    with log.open("w") as handle:
        child = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=child_env())
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    text = log.read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the build failed; its log ends: {text[-2000:]}")
    release = (work / "out" / "current").resolve()
    # the build report's own timings: steps run side by side, so the log's lines
    # cannot tell where one ends
    steps = json.loads((work / "out" / "work" / "build_report.json").read_text())["steps"]
    return {
        "wall_s": round(wall, 1),
        "peak_rss_mib": usage.ru_maxrss >> 10,
        "steps": {
            name: {"s": round(step["seconds"], 1), "peak_rss_mib": step.get("peak_rss_mib")}
            for name, step in steps.items()
            if step.get("peak_rss_mib") is not None
        },
        "release": release,
    }


def release_sizes(release: Path) -> dict[str, int]:
    """MiB on disk per kind of release file."""
    sizes: dict[str, int] = {}
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        relative = path.relative_to(release)
        if relative.parts[0] in ("parquet", "fts"):
            kind = relative.parts[0] + "/"
        elif relative.parts[0] == "ann":
            kind = "ann/" + ("vectors.npy" if path.name == "vectors.npy" else f"*{path.suffix}")
        else:
            kind = relative.name if path.stat().st_size > 1 << 20 else "other"
        sizes[kind] = sizes.get(kind, 0) + path.stat().st_size
    return {kind: size >> 20 for kind, size in sorted(sizes.items())} | {
        "total": sum(sizes.values()) >> 20
    }


@contextmanager
def pages_kept() -> Iterator[None]:
    """Serving with ``METABUNDLE_MAPPED_PAGES_MB=0``: mapped pages are never let go."""
    before = os.environ.get("METABUNDLE_MAPPED_PAGES_MB")
    os.environ["METABUNDLE_MAPPED_PAGES_MB"] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["METABUNDLE_MAPPED_PAGES_MB"]
        else:
            os.environ["METABUNDLE_MAPPED_PAGES_MB"] = before


def serve(release_path: Path) -> dict[str, Any]:
    """What serving the release costs, measured in child processes and in this one."""
    with Release.open(release_path) as release:
        per_source = dict(
            release.query("SELECT source, count(*) FROM search_doc GROUP BY source ORDER BY 1")
        )
        documents = sum(per_source.values())
        latencies = search_latency(release, LATENCY_QUERIES)
        with pages_kept():
            kept = search_latency(release, LATENCY_QUERIES)
        ann = ann_release_path(release, mixed_queries(ANN_QUERIES))
    return {
        "documents": documents,
        "documents_per_source": per_source,
        "first_answer": first_answer(release_path, repeats=3, profile=False),
        "serving": serving_memory(release_path, SERVING_CALLS),
        "search_all": latencies["latency"],
        "search_all_pages_kept": kept["latency"],
        "ann": {
            "backend": ann["backend"],
            "recall_at_10": ann["recall_at_10"],
            "latency": ann["latency"],
        },
    }


def run_size(
    docs: int, workdir: Path, compare_keyword: bool, cache: Path | None = None
) -> dict[str, Any]:
    """Generate, build and serve one size; its report."""
    work = workdir / f"docs-{docs}"
    work.mkdir(parents=True)
    report: dict[str, Any] = {"target_docs": docs, "export": make_export(work / "export", docs)}
    built = build(work / "export", work, cache)
    release = built.pop("release")
    report["build"] = built
    report["release_mib"] = release_sizes(release)
    report |= serve(release)
    if compare_keyword:
        report["keyword_vs_fts5"] = keyword_compare(docs, KEYWORD_QUERIES, repeats=3)
    return report


def run(
    sizes: list[int],
    workdir: Path | None = None,
    keep: bool = False,
    cache: Path | None = None,
    save: Path | None = None,
) -> dict[str, Any]:
    """Every size, smallest first, in one run; the report so far is written to ``save``
    after each size (a long run that is stopped keeps what it measured)."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="metabundle-scale-"))
    report: dict[str, Any] = {"machine": machine(), "sizes": []}
    try:
        for index, docs in enumerate(sorted(sizes)):
            report["sizes"].append(run_size(docs, workdir, index == 0, cache))
            if save is not None:
                save.write_text(json.dumps(report, indent=1, default=str) + "\n")
            if not keep:
                shutil.rmtree(workdir / f"docs-{docs}", ignore_errors=True)
        report["growth"] = growth(report["sizes"])
        return report
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def growth(sizes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest size's figures as ratios to the smallest's."""
    if len(sizes) < 2:
        return None
    small, large = sizes[0], sizes[-1]

    def ratio(get: Any) -> float:
        return round(get(large) / max(get(small), 1e-9), 2)

    return {
        "documents": ratio(lambda s: s["documents"]),
        "build_wall": ratio(lambda s: s["build"]["wall_s"]),
        "build_peak_rss": ratio(lambda s: s["build"]["peak_rss_mib"]),
        "release_size": ratio(lambda s: s["release_mib"]["total"]),
        "serving_rss": ratio(lambda s: s["serving"]["rss_mb"]),
        "first_hybrid_answer": ratio(lambda s: s["first_answer"]["hybrid"]["wall_s"]),
        "search_all_hybrid_p50": ratio(lambda s: s["search_all"]["hybrid"]["p50_ms"]),
    }


def render(report: dict[str, Any]) -> str:
    """The figures as a Markdown table, one column per size."""
    sizes = report["sizes"]
    rows: list[tuple[str, Any]] = [
        ("documents asked for", lambda s: f"{s['target_docs']:,}"),
        ("build wall s", lambda s: s["build"]["wall_s"]),
        ("build peak RSS MiB", lambda s: s["build"]["peak_rss_mib"]),
        *(
            (
                f"step {step} s / peak MiB",
                lambda s, step=step: "{s} / {peak_rss_mib}".format(
                    **s["build"]["steps"].get(step, {"s": None, "peak_rss_mib": None})
                ),
            )
            for step in sizes[-1]["build"]["steps"]
        ),
        *(
            (f"release {kind} MiB", lambda s, kind=kind: s["release_mib"].get(kind))
            for kind in sizes[-1]["release_mib"]
        ),
        *(
            (
                f"new process, first {method} answer s (open / query)",
                lambda s, m=method: "{wall_s} ({open_s} / {first_query_s})".format(
                    **s["first_answer"][m]
                ),
            )
            for method in ("keyword", "hybrid")
        ),
        ("serving RSS after open MB", lambda s: s["serving"]["rss_after_open_mb"]),
        (f"serving RSS after {SERVING_CALLS} calls MB", lambda s: s["serving"]["rss_mb"]),
        (
            "of which anonymous / mapped files MB",
            lambda s: f"{s['serving'].get('rss_anon_mb')} / {s['serving'].get('rss_file_mb')}",
        ),
        (
            "of which DuckDB's index nodes / table blocks MB",
            lambda s: "{} / {}".format(
                *(s["serving"].get("duckdb_mb", {}).get(t) for t in ("ART_INDEX", "BASE_TABLE"))
            ),
        ),
        *(
            (
                f"this process, search_all {method} p50 / p95 ms",
                lambda s, m=method: "{p50_ms} / {p95_ms}".format(**s["search_all"][m]),
            )
            for method in ("keyword", "semantic", "hybrid")
        ),
        (
            "this process, search_all hybrid p50 / p95 ms, mapped pages kept",
            lambda s: (
                "{p50_ms} / {p95_ms}".format(**s["search_all_pages_kept"]["hybrid"])
                if "search_all_pages_kept" in s
                else ""
            ),
        ),
        *(
            (
                f"serving child, {name} p50 / p95 ms",
                lambda s, name=name: (
                    "{p50_ms} / {p95_ms}".format(**s["serving"]["tools"][name])
                    if name in s["serving"]["tools"]
                    else ""
                ),
            )
            for name in sizes[-1]["serving"]["tools"]
        ),
        ("ANN recall@10 (tie-aware)", lambda s: s["ann"]["recall_at_10"]["tie_aware"]),
    ]
    header = "| figure | " + " | ".join(f"{s['documents']:,} documents" for s in sizes) + " |"
    lines = [header, "| --- |" + " --- |" * len(sizes)]
    lines += [f"| {name} | " + " | ".join(str(get(s)) for s in sizes) + " |" for name, get in rows]
    first = sizes[0]
    if "keyword_vs_fts5" in first:
        kw = first["keyword_vs_fts5"]
        lines.append(
            f"\nkeyword index vs SQLite FTS5 at {kw['docs']:,} documents: p50 "
            f"{kw['ours']['p50_ms']} vs {kw['fts5']['p50_ms']} ms "
            f"(ratio {kw['p50_ratio_vs_fts5']})"
        )
    if report.get("growth"):
        lines.append("\ngrowth, largest / smallest: " + json.dumps(report["growth"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--docs", type=int, action="append", help="search documents of a release (repeatable)"
    )
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the exports and releases")
    parser.add_argument(
        "--cache", type=Path, help="a build cache to reuse (default: a fresh one, a cold build)"
    )
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    sizes = args.docs or [1_000_000, 10_000_000]
    report = run(sizes, args.workdir, args.keep, args.cache, args.json)
    return print_and_save(render(report), report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
