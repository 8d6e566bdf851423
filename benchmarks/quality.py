"""Retrieval quality on the evaluation sets, through the real tools of a release.

Every ``tests/eval/<source>.jsonl`` found is used (one JSON object per line:
``{"query", "relevant": {"<search_doc.entity_id>": grade 1..3}, "kind", "note"}``).

**Methods** (:data:`SPECS`): each source is searched by its own tool, called through
:func:`metabundle.search.tools.call_tool` exactly as an agent would, ``limit=10``:

======  ==================================================================
ukb     ``search_ukb_fields`` method keyword / semantic / hybrid
dbgap   ``search_dbgap_catalog`` method keyword / semantic / hybrid, with the
        study and kind of the case's best relevant entity
aou     ``search_aou_catalog`` method keyword / semantic / hybrid
omop    keyword ``concept_search_fulltext``, semantic ``embedding_search``,
        hybrid ``search_all(sources=['omop'])``, ground ``concept_ground``
idc     ``search_idc`` method keyword / semantic / hybrid
======  ==================================================================

plus ``search_all`` (hybrid, ``sources=[source]``) for every source but omop (whose
hybrid already is). Metrics: ndcg@10 (gain ``2^grade - 1``), recall@10 (share of the
relevant ids in the top 10) and MRR, overall and per query kind.

**Fusion grid** (:func:`fusion_grid`): hybrid weights are chosen by measurement. Within
the scope the source's hybrid tool searches (its filter mask, its keyword generator),
alternative fusions are evaluated on the same queries, all through the production
:func:`metabundle.search.ranking.pipeline.rank` (a policy with the fusion alone):
``weighted`` ``w_kw/w_sem`` (BM25 / best BM25, raw cosine clipped at 0), ``minmax``
with the same weights (cosine min-max scaled per query over the semantic candidates,
``Fusion.scale_semantic``) and reciprocal rank (``rrf``, k=60). Exact identifier
matches rank first in all of them, as in ``rank``.
Source-specific extras of a tool (UK Biobank alias boosts, All of Us title fallback,
answer folding, intent bonus and diversity, OMOP grounding tiers) are not in the grid,
so a grid row can differ from the tool's own hybrid figure; the row named after the
production fusion shows by how much.

:func:`check_ids` compares each set's ids with the release's ``search_doc``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from math import log2
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

import numpy as np

from benchmarks.common import REPO, SEED, latency, timed
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import (
    AOU_CATALOG,
    DBGAP_VARIABLES,
    IDC_SEARCH,
    RRF,
    SEARCH_ALL,
    UKB_FIELDS,
    Fusion,
    Policy,
)
from metabundle.search.release import Release
from metabundle.search.retrieval import mask_from_sql
from metabundle.search.tools import call_tool

EVAL_DIR = REPO / "tests" / "eval"
K = 10
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Case:
    """One evaluation query."""

    source: str
    line: int
    query: str
    relevant: dict[str, int]
    kind: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def provenance(self) -> str:
        """Where the query came from: ``independent``, ``derived`` or ``unrecorded``."""
        recorded = self.extra.get("provenance")
        return (
            str(recorded.get("kind", "unrecorded")) if isinstance(recorded, dict) else "unrecorded"
        )

    @property
    def complete_corpus(self) -> bool:
        """The answer is only in a build of the complete mirror (``"corpus": "complete"``)."""
        return self.extra.get("corpus") == "complete"


@dataclass(frozen=True)
class Entity:
    """Where a relevant id lives in the release."""

    docno: int
    kind: str
    study_id: str | None


@dataclass(frozen=True)
class Target:
    """The scope of one case: the search_doc kind and (dbGaP) study of its best id."""

    kind: str | None
    study_id: str | None


@dataclass(frozen=True)
class MethodCall:
    """One evaluated method: a tool and its fixed arguments."""

    name: str
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class SourceSpec:
    """How a source is evaluated: its tools, result id field and production policy."""

    source: str
    kinds: tuple[str, ...]  # search_doc kinds the tools can return
    id_field: str
    methods: tuple[MethodCall, ...]
    policy: Policy  # the ranking policy of the source's hybrid tool

    @property
    def fusion(self) -> Fusion:
        return self.policy.for_source(self.source).fusion


def _per_method(tool: str, **fixed: Any) -> tuple[MethodCall, ...]:
    return tuple(
        MethodCall(m, tool, {**fixed, "method": m}) for m in ("keyword", "semantic", "hybrid")
    )


def _search_all(source: str) -> MethodCall:
    return MethodCall("search_all", "search_all", {"sources": [source], "method": "hybrid"})


def source_specs() -> dict[str, SourceSpec]:
    return {
        "ukb": SourceSpec(
            "ukb",
            ("field",),
            "id",
            (*_per_method("search_ukb_fields"), _search_all("ukb")),
            UKB_FIELDS,
        ),
        "dbgap": SourceSpec(
            "dbgap",
            ("variable", "dataset", "document"),
            "id",
            (*_per_method("search_dbgap_catalog"), _search_all("dbgap")),
            DBGAP_VARIABLES,
        ),
        "aou": SourceSpec(
            "aou",
            (
                "question",
                "answer",
                "survey_module",
                "survey_topic",
                "ehr_concept",
                "physical_measurement",
                "domain",
            ),
            "result_id",
            (*_per_method("search_aou_catalog"), _search_all("aou")),
            AOU_CATALOG,
        ),
        "omop": SourceSpec(
            "omop",
            ("concept",),
            "concept_id",
            (
                MethodCall("keyword", "concept_search_fulltext", {}),
                MethodCall("semantic", "embedding_search", {}),
                MethodCall("hybrid", "search_all", {"sources": ["omop"], "method": "hybrid"}),
                MethodCall("ground", "concept_ground", {}),
            ),
            SEARCH_ALL,
        ),
        "idc": SourceSpec(
            "idc",
            ("collection", "analysis_result"),
            "id",
            (*_per_method("search_idc"), _search_all("idc")),
            IDC_SEARCH,
        ),
    }


# -- evaluation sets ------------------------------------------------------------------


def load_sets(folder: Path = EVAL_DIR) -> dict[str, list[Case]]:
    """Every ``<source>.jsonl`` in ``folder``: its cases, in file order."""
    sets: dict[str, list[Case]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        cases = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            data = json.loads(line)
            known = {"query", "relevant", "kind", "note"}
            cases.append(
                Case(
                    source=path.stem,
                    line=number,
                    query=data["query"],
                    relevant={str(k): int(v) for k, v in data["relevant"].items()},
                    kind=data.get("kind", "unknown"),
                    extra={k: v for k, v in data.items() if k not in known},
                )
            )
        sets[path.stem] = cases
    return sets


def entities(release: Release, source: str) -> dict[str, list[Entity]]:
    """Every ``search_doc`` entity of ``source`` by entity id (ids repeat across kinds)."""
    rows = release.query(
        "SELECT entity_id, docno, kind, study_id FROM search_doc WHERE source = ?", [source]
    )
    found: dict[str, list[Entity]] = defaultdict(list)
    for entity_id, docno, kind, study_id in rows:
        found[str(entity_id)].append(Entity(int(docno), kind, study_id))
    return found


def _searchable(spec: SourceSpec, found: list[Entity]) -> list[Entity]:
    return [e for e in found if e.kind in spec.kinds]


def target_of(spec: SourceSpec, case: Case, known: dict[str, list[Entity]]) -> Target:
    """The kind and study of the case's best-graded id present in the release."""
    for entity_id, _ in sorted(case.relevant.items(), key=lambda kv: -kv[1]):
        present = _searchable(spec, known.get(entity_id, []))
        if present:
            return Target(present[0].kind, present[0].study_id)
    return Target(None, None)


def check_ids(spec: SourceSpec, cases: list[Case], known: dict[str, list[Entity]]) -> list[dict]:
    """Problems with a set's ids: absent from the release, of a kind the tools never
    return, or (dbGaP) relevant ids spread over studies or kinds, or disagreeing with
    the case's own ``study_id`` / ``entity_kind``."""
    problems = []

    def add(case: Case, problem: str, entity_id: str | None = None) -> None:
        problems.append(
            {"line": case.line, "query": case.query, "id": entity_id, "problem": problem}
        )

    for case in cases:
        scopes = set()
        for entity_id in case.relevant:
            found = known.get(entity_id, [])
            if not found:
                add(case, "id not in search_doc", entity_id)
            elif not _searchable(spec, found):
                add(case, f"kind {found[0].kind} is not returned by the tools", entity_id)
            else:
                entity = _searchable(spec, found)[0]
                scopes.add((entity.kind, entity.study_id))
        if spec.source != "dbgap":
            continue
        if len(scopes) > 1:
            add(case, f"relevant ids span several study/kind scopes {sorted(scopes)}")
        target = target_of(spec, case, known)
        for key, value in (("study_id", target.study_id), ("entity_kind", target.kind)):
            if key in case.extra and value is not None and case.extra[key] != value:
                add(case, f"{key} {case.extra[key]!r} differs from the entity's {value!r}")
    return problems


# -- metrics --------------------------------------------------------------------------


def ndcg(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    gains = [2 ** relevant.get(i, 0) - 1 for i in ranked[:k]]
    dcg = sum(g / log2(n + 2) for n, g in enumerate(gains))
    ideal = sorted((2**g - 1 for g in relevant.values()), reverse=True)[:k]
    idcg = sum(g / log2(n + 2) for n, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def reciprocal_rank(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    for n, entity_id in enumerate(ranked[:k], start=1):
        if entity_id in relevant:
            return 1.0 / n
    return 0.0


def score_case(ranked: list[str], case: Case) -> dict[str, float]:
    return {
        "ndcg_at_10": ndcg(ranked, case.relevant),
        "recall_at_10": recall(ranked, case.relevant),
        "hit_at_5": float(any(i in case.relevant for i in ranked[:5])),
        "mrr": reciprocal_rank(ranked, case.relevant),
    }


def aggregate(cases: list[Case], scores: list[dict[str, float]]) -> dict[str, Any]:
    """Mean metrics over all cases and per query kind."""

    def mean(rows: list[dict[str, float]]) -> dict[str, float]:
        names = ("ndcg_at_10", "recall_at_10", "hit_at_5", "mrr")
        return {n: round(fmean(r[n] for r in rows), 4) if rows else 0.0 for n in names}

    by_kind: dict[str, list[dict[str, float]]] = defaultdict(list)
    for case, row in zip(cases, scores, strict=True):
        by_kind[case.kind].append(row)
    return {
        **mean(scores),
        "queries": len(scores),
        "by_kind": {k: {**mean(v), "queries": len(v)} for k, v in sorted(by_kind.items())},
    }


# -- tools ----------------------------------------------------------------------------


def tool_arguments(method: MethodCall, case: Case, target: Target) -> dict[str, Any]:
    args = {**method.args, "query": case.query, "limit": K}
    if method.tool == "search_dbgap_catalog":
        # a case whose ids are all unknown falls back to its own study_id (the tool's
        # error is then counted under the method's errors)
        args["study_id"] = target.study_id or case.extra.get("study_id", "")
        args["kind"] = target.kind or case.extra.get("entity_kind", "variable")
    return args


def result_id(item: dict[str, Any], spec: SourceSpec) -> str:
    """A result's entity id: the source tool's id field, or search_all's ``id``."""
    return str(item[spec.id_field] if spec.id_field in item else item["id"])


def run_method(
    release: Release, spec: SourceSpec, method: MethodCall, cases: list[Case], targets: list[Target]
) -> dict[str, Any]:
    """One method over a set through ``call_tool``: metrics, errors and latency."""
    scores, samples, errors = [], [], Counter()
    for case, target in zip(cases, targets, strict=True):
        seconds, payload = timed(
            lambda c=case, t=target: call_tool(release, method.tool, tool_arguments(method, c, t))
        )
        samples.append(seconds)
        if "error" in payload:
            errors[payload["error"]["code"]] += 1
            ranked: list[str] = []
        else:
            ranked = [result_id(item, spec) for item in payload["results"]]
        scores.append(score_case(ranked, case))
    result = aggregate(cases, scores)
    result.update(tool=method.tool, args=method.args, errors=dict(errors))
    result["latency"] = latency(samples)
    for metric in COMPARED:
        result[f"per_query_{metric}"] = [round(s[metric], 4) for s in scores]
    return result


# -- production hybrid against keyword-only and semantic-only ---------------------------

COMPARED = ("ndcg_at_10", "recall_at_10", "hit_at_5")
BASELINES = ("keyword", "semantic")


def compare_methods(cases: list[Case], methods: dict[str, Any]) -> dict[str, Any]:
    """Production hybrid against keyword-only and semantic-only on the same queries:
    means and paired bootstrap intervals of the difference, over the whole set, per
    query kind and per provenance kind."""
    groups: dict[str, dict[str, list[int]]] = {"all": {"all": list(range(len(cases)))}}
    for name, label in (("kind", "kind"), ("provenance", "provenance")):
        by: dict[str, list[int]] = defaultdict(list)
        for position, case in enumerate(cases):
            by[getattr(case, label)].append(position)
        groups[name] = dict(sorted(by.items()))
    return {
        grouping: {value: _compared(methods, positions) for value, positions in members.items()}
        for grouping, members in groups.items()
    }


def _compared(methods: dict[str, Any], positions: list[int]) -> dict[str, Any]:
    def values(method: str, metric: str) -> list[float]:
        return [methods[method][f"per_query_{metric}"][p] for p in positions]

    row: dict[str, Any] = {"queries": len(positions)}
    for metric in COMPARED:
        means = {m: round(fmean(values(m, metric)), 4) for m in ("hybrid", *BASELINES)}
        best = max(BASELINES, key=lambda m: means[m])
        row[metric] = {
            **means,
            **{
                f"hybrid_vs_{m}": _paired(values("hybrid", metric), values(m, metric))
                for m in BASELINES
            },
            "better_baseline": best,
        }
    return row


# -- fusion grid ----------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """The documents a source's hybrid tool searches for one case."""

    mask: np.ndarray
    keyword: Literal["bm25", "title_substring"] = "bm25"  # the keyword generator


def scope_of(release: Release, source: str, target: Target) -> Scope:
    """The filter mask (and keyword generator) of the source's hybrid tool."""
    from metabundle.search.ranking.policies import DBGAP_DOCUMENTS
    from metabundle.search.services.aou.ranking import AouFilters
    from metabundle.search.services.dbgap import catalog_search as dbgap_catalog
    from metabundle.search.services.omop.filters import concept_doc_mask
    from metabundle.search.services.ukb.queries import field_mask

    if source == "ukb":
        return Scope(field_mask(release))
    if source == "dbgap":
        kind = target.kind or "variable"
        mask = dbgap_catalog.scope_mask(release, kind, target.study_id or "")
        return Scope(mask, DBGAP_DOCUMENTS.keyword if kind == "document" else "bm25")
    if source == "aou":
        return Scope(mask_from_sql(release, *AouFilters().where()))
    if source == "omop":
        return Scope(concept_doc_mask(release))
    if source == "idc":
        kinds = ["collection", "analysis_result"]
        return Scope(
            mask_from_sql(release, "source = ? AND list_contains(?, kind)", [source, kinds])
        )
    return Scope(mask_from_sql(release, "source = ?", [source]))


Ranker = Callable[[Release, str, Scope], list[int]]


def via_rank(method: str, fusion: Fusion = RRF) -> Ranker:
    """A ranker calling the production ``rank`` with a policy of ``fusion`` alone."""

    def ranker(release: Release, query: str, scope: Scope) -> list[int]:
        policy = Policy("grid", fusion, "the fusion alone", keyword=scope.keyword)
        hits, _ = rank(release, query, policy=policy, method=method, mask=scope.mask, limit=K)
        return [h.docno for h in hits]

    return ranker


def grid_rankers(production: Fusion) -> dict[str, Ranker]:
    """The fusions compared; ``production`` names the source's own hybrid weights."""
    rankers: dict[str, Ranker] = {
        "keyword_only": via_rank("keyword"),
        "semantic_only": via_rank("semantic"),
    }
    for scaled, name in ((False, "weighted"), (True, "minmax")):
        for kw in (0.2, 0.3, 0.5, 0.6, 0.7):
            fusion = Fusion("weighted", kw, round(1 - kw, 2), scale_semantic=scaled)
            rankers[f"{name}_{kw:.1f}/{1 - kw:.1f}"] = via_rank("hybrid", fusion)
    rankers["rrf_k60"] = via_rank("hybrid", RRF)
    rankers["production"] = via_rank("hybrid", production)
    return rankers


def fusion_grid(
    release: Release,
    spec: SourceSpec,
    cases: list[Case],
    targets: list[Target],
    docno_entity: np.ndarray,
) -> dict[str, Any]:
    """Every fusion of :func:`grid_rankers` on a set; the winner by ndcg@10."""
    scopes = [scope_of(release, spec.source, t) for t in targets]
    rows: dict[str, Any] = {}
    per_query: dict[str, list[float]] = {}
    for name, ranker in grid_rankers(spec.fusion).items():
        scores = []
        for case, scope in zip(cases, scopes, strict=True):
            ranked = [str(docno_entity[d]) for d in ranker(release, case.query, scope)]
            scores.append(score_case(ranked, case))
        rows[name] = aggregate(cases, scores)
        per_query[name] = [s["ndcg_at_10"] for s in scores]
    fused = [n for n in rows if n not in ("keyword_only", "semantic_only", "production")]
    best = max(fused, key=lambda n: (rows[n]["ndcg_at_10"], rows[n]["recall_at_10"]))
    for name in rows:
        rows[name]["vs_production"] = _paired(per_query[name], per_query["production"])
    return {
        "production": spec.fusion.describe(),
        "production_policy": spec.policy.name,
        "fusions": rows,
        "winner": best,
        "winner_minus_production_ndcg": round(
            rows[best]["ndcg_at_10"] - rows["production"]["ndcg_at_10"], 4
        ),
    }


def _paired(these: list[float], production: list[float]) -> dict[str, Any]:
    """``these`` against ``production``, query by query: how many queries it beats,
    loses or ties, the mean difference and its 95 % paired bootstrap interval (a
    difference whose interval spans 0 is not established by this set)."""
    diff = np.array(these) - np.array(production)
    better, worse = int((diff > 1e-9).sum()), int((diff < -1e-9).sum())
    rng = np.random.default_rng(SEED)
    means = diff[rng.integers(0, len(diff), (BOOTSTRAP, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5]) if len(diff) else (0.0, 0.0)
    return {
        "better": better,
        "worse": worse,
        "same": len(diff) - better - worse,
        "mean_delta": round(float(diff.mean()), 4) if len(diff) else 0.0,
        "ci95": [round(float(low), 4), round(float(high), 4)],
    }


# -- the whole evaluation -------------------------------------------------------------


def evaluate(
    release: Release,
    *,
    max_queries: int | None = None,
    folder: Path = EVAL_DIR,
    sources: Iterable[str] | None = None,
    grid: bool = True,
    complete_release: Release | None = None,
) -> dict[str, Any]:
    """Methods, their comparison and the fusion grid on every evaluation set whose
    source the release has. Queries marked ``"corpus": "complete"`` run only against
    ``complete_release`` (a build of the complete mirror), as the set
    ``<source>@complete``, and the comparison of every line of the source's set as
    ``<source>@all``; without it they are counted and left out."""
    specs = source_specs()
    in_release = set(release.manifest["sources"])
    wanted = set(sources) if sources is not None else None
    out: dict[str, Any] = {
        "release": str(release.path),
        "version": release.version,
        "embedding_model": release.search_info.get("embedding_model"),
        "k": K,
        "sets": {},
        "methods": {},
        "comparison": {},
        "fusion_grid": {},
        "skipped": {},
        "complete_release": None if complete_release is None else str(complete_release.path),
    }
    for source, all_cases in load_sets(folder).items():
        if wanted is not None and source not in wanted:
            continue
        if source not in specs or source not in in_release:
            out["skipped"][source] = "no tool spec" if source not in specs else "not in release"
            continue
        spec = specs[source]
        session = [c for c in all_cases if not c.complete_corpus]
        complete = [c for c in all_cases if c.complete_corpus]
        _evaluate_set(out, release, spec, source, session, max_queries, folder, grid)
        out["sets"][source]["complete_corpus_queries"] = len(complete)
        if complete and complete_release is not None:
            name = f"{source}@complete"
            _evaluate_set(out, complete_release, spec, name, complete, max_queries, folder, False)
            _compare_whole_set(out, source, name, session, complete, max_queries)
    return out


def _compare_whole_set(
    out: dict[str, Any],
    source: str,
    complete_name: str,
    session: list[Case],
    complete: list[Case],
    max_queries: int | None,
) -> None:
    """The comparison over every line of a source's set (``<source>@all``): the session
    lines and the complete-corpus lines together, each scored on its own release."""
    cases = [*session[:max_queries], *complete[:max_queries]] if max_queries else session + complete
    parts = (out["methods"][source], out["methods"][complete_name])
    pooled = {
        method: {
            f"per_query_{metric}": [
                *parts[0][method][f"per_query_{metric}"],
                *parts[1][method][f"per_query_{metric}"],
            ]
            for metric in COMPARED
        }
        for method in ("hybrid", *BASELINES)
    }
    if cases:
        out["comparison"][f"{source}@all"] = compare_methods(cases, pooled)


def _evaluate_set(
    out: dict[str, Any],
    release: Release,
    spec: SourceSpec,
    name: str,
    all_cases: list[Case],
    max_queries: int | None,
    folder: Path,
    grid: bool,
) -> None:
    """One set's methods, comparison and (``grid``) fusion grid into ``out``."""
    known = entities(release, spec.source)
    cases = all_cases[:max_queries] if max_queries else all_cases
    targets = [target_of(spec, c, known) for c in cases]
    out["sets"][name] = {
        "file": str(folder / f"{spec.source}.jsonl"),
        "queries": len(cases),
        "queries_in_file": len(all_cases),
        "kinds": dict(Counter(c.kind for c in cases)),
        "provenance": dict(Counter(c.provenance for c in cases)),
        "id_problems": check_ids(spec, all_cases, known),
    }
    out["methods"][name] = {
        m.name: run_method(release, spec, m, cases, targets) for m in spec.methods
    }
    if cases:
        out["comparison"][name] = compare_methods(cases, out["methods"][name])
    if grid:
        docno_entity = np.array(
            [r[0] for r in release.query("SELECT entity_id FROM search_doc ORDER BY docno")],
            dtype=object,
        )
        out["fusion_grid"][name] = fusion_grid(release, spec, cases, targets, docno_entity)


def headline(quality: dict[str, Any], metric: str) -> dict[str, dict[str, float]]:
    """``{source: {method: metric}}`` of an :func:`evaluate` result."""
    return {
        source: {name: row[metric] for name, row in methods.items()}
        for source, methods in quality["methods"].items()
    }
