"""Run every measurement of a mode and assemble one report (JSON) and its table.

:func:`run` returns the report: the headline keys at the top level
(``keyword_p50_ratio_vs_fts5``, ``ann_recall_at_10``, ``ann_p50_ms``,
``ann_p50_ratio_vs_raw``, ``semantic_path_recall_at_10``, ``semantic_path_p50_ms``,
``hybrid_p50_ms``, ``open_release_s``, ``open_check_s``, ``open_release_hybrid_s``,
``mcp_tools_list_s``, ``mcp_tools_list_ratio_vs_sdk_import``, ``serve_rss_mb``,
``embed_texts_per_s``, ``build_docs_per_s``, ``omop_ingest``, ``ndcg_at_10``,
``recall_at_10``, ``fusion_winner``, ``eval_id_problems``), the full detail of each
section under ``sections``, the machine, the configuration, a calibration at the start
and the end, and each section's wall time and load average. A section that fails is
recorded under ``errors`` (message) and ``tracebacks``, and the others still run.
:func:`render` prints the human-readable table.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import ann, build, embed, keyword, omop_ingest, quality, serving
from benchmarks.common import Config, calibration, loadavg, machine
from metabundle.search.release import Release

SECTIONS = ("keyword", "ann", "serving", "embed", "build", "omop", "quality")


def _section(report: dict[str, Any], name: str, work: Callable[[], dict[str, Any]]) -> None:
    """Run one section, recording its result, wall time, load average or error."""
    load_before = loadavg()[0]
    started = time.perf_counter()
    try:
        report["sections"][name] = work()
    except Exception as error:
        report["errors"][name] = f"{type(error).__name__}: {error}"
        report["tracebacks"][name] = traceback.format_exc(limit=8)
    report["section_wall_s"][name] = round(time.perf_counter() - started, 1)
    report["section_load1"][name] = [load_before, loadavg()[0]]


def _serving(release: Release, path: Path, config: Config) -> dict[str, Any]:
    return {
        "latency": serving.search_latency(release, config.serve_queries, config.profile_queries),
        "first_answer": serving.first_answer(
            path, config.open_repeats, profile=config.profile_queries > 0
        ),
        "mcp_start": serving.mcp_start(
            path, config.open_repeats, profile=config.profile_queries > 0
        ),
        "memory": serving.serving_memory(path, config.serve_queries),
        "open_check": serving.open_check(path, config.open_repeats),
    }


def _ann(release: Release, config: Config) -> dict[str, Any]:
    texts = ann.query_texts(release, config.ann_queries)
    result = ann.compare(release.vectors, release.embedder().embed(texts), config.ann_vectors)
    result["release_path"] = ann.release_path(release, texts, config.profile_queries)
    return result


def _omop(config: Config) -> dict[str, Any]:
    result = omop_ingest.run(config.omop_concepts, config.omop_relationships)
    full = config.omop_concepts >= 2_000_000 and config.omop_relationships >= 10_000_000
    result["export"] = (
        "full-size (2M concepts, 10M relationships)"
        if full
        else (
            f"smaller than the full-size export ({config.mode} mode): "
            f"{config.omop_concepts:,} concepts, {config.omop_relationships:,} relationships"
        )
    )
    return result


def _quality(release: Release, config: Config, complete_path: Path | None) -> dict[str, Any]:
    if complete_path is None:
        return quality.evaluate(release, max_queries=config.quality_max_queries)
    with Release.open(complete_path) as complete:
        return quality.evaluate(
            release, max_queries=config.quality_max_queries, complete_release=complete
        )


def run(
    config: Config,
    release_path: Path,
    only: tuple[str, ...] = SECTIONS,
    complete_release_path: Path | None = None,
) -> dict[str, Any]:
    """Every section of ``only`` under ``config`` against the release at ``release_path``
    (quality's ``"corpus": "complete"`` queries against ``complete_release_path``)."""
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": config.mode,
        "config": config.to_json(),
        "machine": machine(),
        "release": str(release_path),
        "calibration": {"start": calibration()},
        "sections": {},
        "section_wall_s": {},
        "section_load1": {},
        "errors": {},
        "tracebacks": {},
    }
    wanted = [s for s in SECTIONS if s in only and s not in config.skip]
    needs_release = {"ann", "serving", "embed", "build", "quality"} & set(wanted)
    release = None
    if needs_release:
        try:
            release = Release.open(release_path)
            report["release"] = str(release.path)
            report["release_version"] = release.version
        except Exception as error:
            for name in needs_release:
                report["errors"][name] = f"cannot open release {release_path}: {error}"
            wanted = [s for s in wanted if s not in needs_release]
    jobs: dict[str, Callable[[], dict[str, Any]]] = {
        "keyword": lambda: keyword.compare(
            config.keyword_docs, config.keyword_queries, config.keyword_repeats
        ),
        "ann": lambda: _ann(release, config),
        "serving": lambda: _serving(release, release.path, config),
        "embed": lambda: embed.compare(release, config.embed_texts),
        "build": lambda: build.measure(
            release, list(config.build_sources) if config.build_sources else None
        ),
        "omop": lambda: _omop(config),
        "quality": lambda: _quality(release, config, complete_release_path),
    }
    for name in wanted:
        _section(report, name, jobs[name])
    if release is not None:
        release.close()
    report["calibration"]["end"] = calibration()
    report.update(headline(report["sections"]))
    return report


# -- headline -------------------------------------------------------------------------


def headline(sections: dict[str, Any]) -> dict[str, Any]:
    """The top-level keys of the report, taken from the sections that ran."""
    out: dict[str, Any] = {}
    if "keyword" in sections:
        kw = sections["keyword"]
        out["keyword_p50_ratio_vs_fts5"] = kw["p50_ratio_vs_fts5"]
        out["keyword_p50_ms"] = {"ours": kw["ours"]["p50_ms"], "fts5": kw["fts5"]["p50_ms"]}
    if "ann" in sections:
        backends = {b: sections["ann"][b] for b in ann.BACKENDS}
        out["ann_recall_at_10"] = {b: r["recall_at_10"]["tie_aware"] for b, r in backends.items()}
        out["ann_p50_ms"] = {b: r["latency"]["ours"]["p50_ms"] for b, r in backends.items()}
        out["ann_p50_ratio_vs_raw"] = {b: r["p50_ratio_vs_raw"] for b, r in backends.items()}
        path = sections["ann"]["release_path"]
        out["semantic_path_recall_at_10"] = path["recall_at_10"]["tie_aware"]
        out["semantic_path_recall_at_10_per_source"] = {
            source: row["recall_at_10"]["tie_aware"] for source, row in path["per_source"].items()
        }
        out["semantic_path_p50_ms"] = path["latency"]["semantic_candidates"]["p50_ms"]
    if "serving" in sections:
        serve = sections["serving"]
        out["hybrid_p50_ms"] = serve["latency"]["latency"]["hybrid"]["p50_ms"]
        out["open_release_s"] = serve["first_answer"]["keyword"]["wall_s"]
        out["open_release_hybrid_s"] = serve["first_answer"]["hybrid"]["wall_s"]
        out["mcp_tools_list_s"] = serve["mcp_start"]["tools_list_s"]
        out["mcp_tools_list_ratio_vs_sdk_import"] = serve["mcp_start"]["ratio_vs_sdk_import"]
        out["serve_rss_mb"] = serve["memory"]["rss_mb"]
        out["open_check_s"] = serve["open_check"]["at_open_s"]
    if "embed" in sections:
        out["embed_texts_per_s"] = {
            provider: {name: row[name]["texts_per_s"] for name in ("titles", "documents")}
            for provider, row in sections["embed"].items()
        }
    if "build" in sections:
        out["build_docs_per_s"] = sections["build"]["docs_per_s"]
    if "omop" in sections:
        omop = sections["omop"]
        out["omop_ingest"] = {
            "concepts": omop["generated"]["concepts"],
            "relationships": omop["generated"]["relationships"],
            "wall_s": omop["wall_s"],
            "peak_rss_mib": omop["peak_rss_mib"],
        }
    if "quality" in sections:
        result = sections["quality"]
        out["ndcg_at_10"] = quality.headline(result, "ndcg_at_10")
        out["recall_at_10"] = quality.headline(result, "recall_at_10")
        out["fusion_winner"] = {
            source: {
                "winner": grid["winner"],
                "ndcg_at_10": grid["fusions"][grid["winner"]]["ndcg_at_10"],
                "production": grid["production"],
                "production_ndcg_at_10": grid["fusions"]["production"]["ndcg_at_10"],
                "delta_ci95": grid["fusions"][grid["winner"]]["vs_production"]["ci95"],
            }
            for source, grid in result["fusion_grid"].items()
        }
        out["eval_id_problems"] = {
            source: len(info["id_problems"]) for source, info in result["sets"].items()
        }
    return out


# -- table ----------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    return str(value)


def render(report: dict[str, Any]) -> str:
    """A plain-text table of the headline figures, then quality and the fusion grid."""
    lines = [
        f"metabundle benchmarks, {report['mode']} mode, {report['date']}",
        f"machine: {report['machine']['cpu']} x{report['machine']['cpus']}, "
        f"{report['machine']['mem_gib']} GiB; load {report['calibration']['start']['loadavg']}"
        f" -> {report['calibration']['end']['loadavg']}",
        f"release: {report.get('release')}",
        "",
    ]
    keys = (
        "keyword_p50_ratio_vs_fts5",
        "keyword_p50_ms",
        "ann_recall_at_10",
        "ann_p50_ms",
        "ann_p50_ratio_vs_raw",
        "semantic_path_recall_at_10",
        "semantic_path_recall_at_10_per_source",
        "semantic_path_p50_ms",
        "hybrid_p50_ms",
        "open_release_s",
        "open_release_hybrid_s",
        "mcp_tools_list_s",
        "mcp_tools_list_ratio_vs_sdk_import",
        "serve_rss_mb",
        "open_check_s",
        "embed_texts_per_s",
        "build_docs_per_s",
        "omop_ingest",
    )
    width = max(len(k) for k in keys)
    lines += [f"{k:<{width}}  {_fmt(report[k])}" for k in keys if k in report]
    if "ndcg_at_10" in report:
        lines += ["", "quality (ndcg@10 / recall@10, limit 10):"]
        for source, methods in report["ndcg_at_10"].items():
            cells = [
                f"{m} {v:.3f}/{report['recall_at_10'][source][m]:.3f}" for m, v in methods.items()
            ]
            lines.append(f"  {source:<6} " + "  ".join(cells))
        lines += ["", "fusion grid (ndcg@10; winner vs production):"]
        grid = report["sections"]["quality"]["fusion_grid"]
        for source, result in grid.items():
            best = result["fusions"][result["winner"]]["vs_production"]
            lines.append(
                f"  {source:<6} winner {result['winner']} "
                f"(vs production {best['mean_delta']:+.3f}, 95% CI {best['ci95']}; "
                f"better/worse on {best['better']}/{best['worse']} queries)"
            )
            rows = "  ".join(f"{n} {r['ndcg_at_10']:.3f}" for n, r in result["fusions"].items())
            lines.append(f"         {rows}")
        lines += comparison_lines(report["sections"]["quality"]["comparison"])
        problems = {s: n for s, n in report["eval_id_problems"].items() if n}
        lines.append(f"  evaluation id problems: {problems or 'none'}")
    if report["errors"]:
        lines += ["", "errors:"] + [f"  {k}: {v}" for k, v in report["errors"].items()]
    lines += ["", "section wall times (s): " + _fmt(report["section_wall_s"])]
    lines += ["section load (1-min average before, after): " + _fmt(report["section_load1"])]
    return "\n".join(lines)


def comparison_lines(comparison: dict[str, Any]) -> list[str]:
    """Production hybrid against keyword-only and semantic-only, per set, query kind
    and provenance kind: ndcg@10 means and the paired difference with its 95 % CI."""
    lines = [
        "",
        "hybrid vs keyword-only vs semantic-only (ndcg@10; Δ = hybrid - baseline, 95 % "
        "paired bootstrap CI; recall@10 and hit@5 of hybrid):",
    ]
    for name, groups in comparison.items():
        for grouping, rows in groups.items():
            for value, row in rows.items():
                label = name if grouping == "all" else f"  {grouping}={value}"
                ndcg = row["ndcg_at_10"]
                deltas = "  ".join(
                    f"vs {m} {ndcg[m]:.3f} Δ {p['mean_delta']:+.3f} "
                    f"[{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}]"
                    for m in quality.BASELINES
                    if (p := ndcg[f"hybrid_vs_{m}"])
                )
                lines.append(
                    f"  {label:<28} n={row['queries']:<4} hybrid {ndcg['hybrid']:.3f}  {deltas}"
                    f"  (recall@10 {row['recall_at_10']['hybrid']:.3f}, "
                    f"hit@5 {row['hit_at_5']['hybrid']:.3f})"
                )
    return lines
