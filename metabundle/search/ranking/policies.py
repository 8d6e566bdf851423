"""Every ranking rule of every search tool, in one table (:data:`POLICIES`).

A :class:`Policy` drives the stages of :func:`metabundle.search.ranking.pipeline.rank`:

1. **candidates**: exact identifiers and aliases (``exact_first``), the keyword
   generator (``keyword``: BM25 over title and body, a title term counting
   :data:`~metabundle.index.fts.TITLE_WEIGHT` times a body term, or a title
   substring; BM25 also scores the query's term variants, abbreviations and spellings
   the corpus defines, :mod:`metabundle.index.variants`), a Jaro-Winkler title
   fallback (``title_fallback``) and cosine similarity through the ANN index (in
   hybrid with ``semantic_variants``, also of the query's text rewritten by the
   abbreviations the corpus defines, a document keeping its best cosine); all inside
   the tool's filter mask, before any candidate limit;
2. **folding** (``fold_kinds``): a child document that matches only through its
   parent's text (an All of Us answer repeating its question) stands for the parent;
3. **fusion** (``fusion``; ``keyword_fusion`` for several keyword lists): weighted
   (BM25 over the query's best or ideal BM25, raised to ``keyword_power``, cosine
   min-max scaled or raw, and the title match, see :class:`Fusion`) or reciprocal
   rank; ``search_all`` ranks a source of ``source_fusion`` with that source's fusion;
4. **boosts** (``boosts``): exact identifier (``id``) or alias (``alias``) matches
   add ``keyword weight × boost``;
5. **intent signals** (``intents``, hybrid only): a small bonus to items of the data
   type the query names in so many words; and (``participants_weight``, hybrid only)
   a UK Biobank field's share of the most participants of any field, times the weight;
6. **order**: by score, exact matches first (by ``exact_kind_order``, then by score
   when ``exact_by_score``, else in docno order), lifted so that no score rises as
   rank falls;
7. **diversity** (``max_per_title``): at most so many results per (title, domain);
8. **priors** (``priors``): the source's own structure (UK Biobank: a companion
   field's main field before it, equal titles by participants);
9. **lookups** (``lookup_alone``): a query of one token holding a digit that names an
   entity exactly ("21001", "phs000007", "K92.2") is a lookup: behind the exact matches
   only documents the keyword index matched are kept, as the embedding of an identifier
   says nothing about a document (:func:`~.stages.drop_unrelated`).

``search_all`` ranks each source with :data:`SEARCH_ALL` and merges the rankings
(:mod:`.merge`); with ``unmatched_last`` (hybrid) each source's hits from the first
whose keyword share is below it and that is no closer than unrelated documents
(:func:`~metabundle.search.retrieval.unmatched_hit`) come after every other source's
matches. Weights were chosen by measurement (``benchmarks/README.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from metabundle.index.fts import TITLE_WEIGHT
from metabundle.index.tokenizer import tokenize
from metabundle.index.variants import ALTERNATIVE_WEIGHT, MAX_ALTERNATIVES

RRF_K = 60
# A hit whose BM25 is below this share of the query's ideal BM25 (one common word of a
# longer query) does not count as a keyword match in search_all's merge.
UNMATCHED_KEYWORD_SHARE = 0.2


@dataclass(frozen=True)
class Fusion:
    """How hybrid combines its lists: weighted scores or reciprocal rank.

    Weighted fusion adds ``keyword_weight`` × the keyword signal (BM25 over the query's
    best BM25 among the candidates, or with ``keyword_scale="ideal"`` over the BM25 of
    a document holding every query term at its best weight, so a match of one word of
    a long query counts little) raised to ``keyword_power`` (above 1, a match of part
    of the query counts less than its share), ``semantic_weight`` × cosine (min-max
    scaled per query, or raw) and ``title_match`` × the title match (the share of the
    query's terms in the title times the share of the title's terms in the query: 1.0
    when query and title hold the same terms)."""

    kind: Literal["weighted", "rrf"]
    keyword_weight: float = 0.5
    semantic_weight: float = 0.5
    rrf_k: int = RRF_K
    scale_semantic: bool = True  # weighted: cosine min-max per query, else raw cosine
    keyword_scale: Literal["best", "ideal"] = "best"  # weighted: BM25 over which maximum
    title_match: float = 0.0  # weighted: the weight of the title match
    keyword_power: float = 1.0  # weighted: the keyword signal raised to this power

    @property
    def full_scale(self) -> float:
        """The most a weighted score reaches without boosts (every signal at 1.0)."""
        return round(self.keyword_weight + self.semantic_weight + self.title_match, 6)

    def describe(self) -> dict[str, Any]:
        if self.kind == "rrf":
            return {"fusion": "reciprocal_rank", "rrf_k": self.rrf_k}
        described: dict[str, Any] = {
            "fusion": "weighted",
            "keyword": self.keyword_weight,
            "semantic": self.semantic_weight,
            "semantic_scaling": "min_max" if self.scale_semantic else "raw_cosine",
        }
        if self.keyword_scale == "ideal":
            described["keyword_scaling"] = "over_ideal_bm25"
        if self.keyword_power != 1.0:
            described["keyword_power"] = self.keyword_power
        if self.title_match:
            described["title_match"] = self.title_match
        return described


RRF = Fusion("rrf")


@dataclass(frozen=True)
class Intent:
    """A data type (``search_doc.variable_type``) a query asks for in so many words."""

    variable_type: str
    terms: frozenset[str] = frozenset()  # any of these query terms (tokenized)
    phrases: tuple[str, ...] = ()  # or any of these phrases in the query text
    titles_of_kind: str | None = None  # or the title of a document of this kind


@dataclass(frozen=True)
class Policy:
    """One tool's ranking rules; see the module docstring for the stages."""

    name: str
    fusion: Fusion
    formula: str
    keyword: Literal["bm25", "title_substring"] = "bm25"
    keyword_score: Literal["bm25", "bm25_over_best"] = "bm25"  # keyword-only score
    keyword_fusion: Fusion | None = None  # several keyword lists fused by this
    semantic_variants: bool = False  # hybrid: cosine of the query's abbreviation rewrites too
    lookup_alone: bool = False  # an identifier found exactly: keep only keyword matches behind it
    exact_first: bool = True
    exact_kind_order: Mapping[str, int] = field(default_factory=dict)  # kind → tier
    exact_by_score: bool = False  # within a tier: by score, else by docno
    boosts: Mapping[str, float] = field(default_factory=dict)  # "id" / "alias" → boost
    title_fallback: bool = False
    title_similarity_min: float = 0.85
    title_pool: int = 20
    fold_kinds: Mapping[str, str] = field(default_factory=dict)  # child kind → parent
    intents: tuple[Intent, ...] = ()
    intent_bonus: float = 0.0
    max_per_title: int | None = None
    priors: tuple[str, ...] = ()
    participants_weight: float = 0.0  # hybrid: times a UK Biobank field's participant share
    # search_all hybrid: a source's hits from the first with a keyword share (BM25 over the
    # ideal) below this and a cosine below unrelated documents' come after every match
    unmatched_last: float | None = None
    # search_all: a source ranked with its own fusion (the policy's for every other)
    source_fusion: Mapping[str, Fusion] = field(default_factory=dict)

    def for_source(self, source: str) -> Policy:
        """The policy as it ranks ``source``: with the source's own fusion, if it has one."""
        fusion = self.source_fusion.get(source)
        return self if fusion is None else replace(self, fusion=fusion)

    @property
    def fields(self) -> dict[str, float]:
        """The document fields the keyword generator reads, with their weights."""
        if self.keyword == "title_substring":
            return {"title": 1.0}
        return {"title": float(TITLE_WEIGHT), "body": 1.0}

    def weights(self, method: str) -> dict[str, Any] | None:
        """The short description of how ``method`` combined its signals."""
        if method == "hybrid":
            weights = self.fusion.describe()
            if self.intent_bonus:
                weights["intent_bonus"] = self.intent_bonus
            if self.participants_weight:
                weights["participants_prior"] = self.participants_weight
            if self.source_fusion:
                weights["per_source"] = {
                    source: self.source_fusion[source].describe()
                    for source in sorted(self.source_fusion)
                }
            return weights
        if method == "keyword" and self.keyword_fusion is not None:
            return self.keyword_fusion.describe()
        return None

    def explain(self, method: str) -> dict[str, Any]:
        """Everything that ranked an answer under ``method``, for ``explain=true``."""
        stages: dict[str, Any] = {
            "exact_first": self.exact_first and method != "semantic",
            "exact_order": {
                "kinds": dict(self.exact_kind_order) or None,
                "by_score": self.exact_by_score,
            },
            "keyword": None if method == "semantic" else self.keyword,
            "fields": None if method == "semantic" else self.fields,
            "term_variants": (
                {"max_alternatives": MAX_ALTERNATIVES, "weight": ALTERNATIVE_WEIGHT}
                if self.keyword == "bm25" and method != "semantic"
                else None
            ),
            "semantic_variants": (
                {"max_alternatives": MAX_ALTERNATIVES, "weight": ALTERNATIVE_WEIGHT}
                if self.semantic_variants and method == "hybrid"
                else None
            ),
            "title_fallback": (
                {"similarity_min": self.title_similarity_min, "pool": self.title_pool}
                if self.title_fallback and method != "semantic"
                else None
            ),
            "fold_kinds": dict(self.fold_kinds) or None,
            "boosts": dict(self.boosts) if self.boosts and method != "semantic" else None,
            "intents": [i.variable_type for i in self.intents]
            if self.intents and method == "hybrid"
            else None,
            "max_per_title": self.max_per_title,
            "priors": list(self.priors) or None,
            "participants_prior": (self.participants_weight or None)
            if method == "hybrid"
            else None,
            "lookup_alone": self.lookup_alone and method != "semantic",
            "unmatched_last": (
                {"keyword_share_below": self.unmatched_last, "cosine_below": "unrelated"}
                if self.unmatched_last is not None and method == "hybrid"
                else None
            ),
        }
        return {"policy": self.name, "score_formula": self.formula, "stages": stages}


# -- the table --------------------------------------------------------------------------

_AOU_SURVEY = Intent(
    "survey",
    frozenset(tokenize("survey surveys question questions questionnaire asked answer")),
    titles_of_kind="survey_module",
)
_AOU_PM = Intent(
    "physical_measurement",
    frozenset(tokenize("vitals")),
    ("physical measurement", "vital sign"),
)
_AOU_EHR = Intent(
    "ehr",
    frozenset(tokenize("ehr emr snomed loinc rxnorm icd icd9 icd10 icd10cm cpt omop")),
    ("health record", "medical record"),
)

# Every hybrid leads with semantic (0.3 keyword / 0.7 semantic), measured with the
# default embedder on the evaluation sets (benchmarks/README.md): the contract's
# 0.6 / 0.4 for UK Biobank and reciprocal rank for All of Us and search_all lost to it
# on every source; IDC keeps raw cosine and BM25 over the best match, which its set
# preferred.
_SEMANTIC_LED = Fusion("weighted", 0.3, 0.7, keyword_scale="ideal", title_match=0.2)
_VARIANT_COSINE = (
    "the cosine is the query's or, times "
    f"{ALTERNATIVE_WEIGHT}, that of the query rewritten by an abbreviation the documents "
    "define, whichever is higher"
)
_SEMANTIC_LED_FORMULA = (
    f"{_SEMANTIC_LED.keyword_weight} * keyword + {_SEMANTIC_LED.semantic_weight} * "
    f"semantic + {_SEMANTIC_LED.title_match} * title_match, keyword = BM25 / the BM25 of "
    "a document holding every query term at its best weight, semantic = cosine min-max "
    "scaled per query, title_match = (shared terms / query terms) * (shared terms / "
    f"title terms); {_VARIANT_COSINE}"
)
_UKB_BOOSTS = MappingProxyType({"id": 2.0, "alias": 1.75})
PARTICIPANTS_WEIGHT = 0.2
"""Hybrid: a UK Biobank field's share of the most participants of any field, times this,
is added to its fused score. Of two fields that match a query alike, the one measured
on the whole cohort is the one a person usually means (4079 "Diastolic blood pressure,
automated reading", 476k participants, before the pulse-wave subset's 12698, 88k);
weights 0.1 to 0.5 measured (``benchmarks/README.md``, "UK Biobank participants")."""
_UKB_PRIORS = ("main_field_before_companion", "equal_titles_by_participants")
_UKB_PRIORS_TEXT = (
    f"in hybrid {PARTICIPANTS_WEIGHT} * a UK Biobank field's share of the most participants of "
    "any field added to its score; a companion field's main field before it and fields of "
    "one title by participants"
)
UKB_FIELDS = Policy(
    "ukb_fields",
    _SEMANTIC_LED,
    f"hybrid: {_SEMANTIC_LED_FORMULA}, plus {_SEMANTIC_LED.full_scale} * boost; "
    "keyword: BM25 / best BM25 of the query among fields + boost; semantic: cosine only. "
    f"boost = {_UKB_BOOSTS['id']} for the exact field id, {_UKB_BOOSTS['alias']} for "
    f"another exact stored alias, else 0; then {_UKB_PRIORS_TEXT}.",
    keyword_score="bm25_over_best",
    exact_by_score=True,
    boosts=_UKB_BOOSTS,
    priors=_UKB_PRIORS,
    participants_weight=PARTICIPANTS_WEIGHT,
    semantic_variants=True,
    lookup_alone=True,
)
DBGAP_VARIABLES = Policy(
    "dbgap_catalog",
    _SEMANTIC_LED,
    f"hybrid: {_SEMANTIC_LED_FORMULA}; keyword: BM25; semantic: cosine. Exact accessions first.",
    semantic_variants=True,
    lookup_alone=True,
)
_DBGAP_DOCUMENTS_FUSION = Fusion("weighted", 0.3, 0.7)
DBGAP_DOCUMENTS = Policy(
    "dbgap_documents",
    _DBGAP_DOCUMENTS_FUSION,
    f"hybrid: {_DBGAP_DOCUMENTS_FUSION.keyword_weight} * title contains the query (1 or "
    f"0) + {_DBGAP_DOCUMENTS_FUSION.semantic_weight} * cosine min-max scaled per query; "
    "keyword: title contains the query; semantic: cosine of the title.",
    keyword="title_substring",
)
_AOU_BONUS = 0.003
_AOU_MAX_PER_TITLE = 2
AOU_CATALOG = Policy(
    "aou_catalog",
    _SEMANTIC_LED,
    f"keyword: sum of 1 / ({RRF_K} + rank) over the BM25 and title-similarity lists; "
    f"hybrid: {_SEMANTIC_LED_FORMULA}, plus {_AOU_BONUS} for items of a data type the "
    "query names; semantic: cosine. Answers matching only "
    "through their question stand for it; exact identifiers first (variables, "
    f"navigation, support); at most {_AOU_MAX_PER_TITLE} results per (title, domain).",
    keyword_fusion=RRF,
    exact_by_score=True,
    exact_kind_order=MappingProxyType(
        {"survey_module": 1, "survey_topic": 1, "domain": 1, "answer": 2}
    ),
    title_fallback=True,
    fold_kinds=MappingProxyType({"answer": "question"}),
    intents=(_AOU_SURVEY, _AOU_PM, _AOU_EHR),
    intent_bonus=_AOU_BONUS,
    max_per_title=_AOU_MAX_PER_TITLE,
    semantic_variants=True,
    lookup_alone=True,
)
# raw cosine and BM25 over the best match: the IDC set measured both better than
# min-max scaling, the ideal BM25 and the title match (benchmarks/README.md)
_IDC_FUSION = Fusion("weighted", 0.3, 0.7, scale_semantic=False)
IDC_SEARCH = Policy(
    "idc_search",
    _IDC_FUSION,
    f"hybrid: {_IDC_FUSION.keyword_weight} * BM25 / best BM25 + "
    f"{_IDC_FUSION.semantic_weight} * cosine (raw, clipped at 0), {_VARIANT_COSINE}; "
    "keyword: BM25; semantic: cosine. Exact ids and DOIs first.",
    semantic_variants=True,
    lookup_alone=True,
)
OMOP_FUSION = replace(_SEMANTIC_LED, keyword_power=4.0)
"""OMOP concepts in hybrid (``search_all``): the semantic-led fusion with the keyword
signal to the fourth power. A vocabulary's concepts share words with their siblings
("Non-small cell lung cancer" holds every word of "Small cell lung cancer", "Injury of
kidney" half of "kidney infection"), so a keyword match of part of the query is mostly
a neighbour of the concept asked for: on the OMOP set (189 queries, minilm), hybrid
nDCG@10 0.755 at power 1, 0.762 at 2, 0.768 at 3, 0.769 at 4 to 8, 0.766 at 16, against
semantic-only's 0.751; the other sources' sets lost 0.001 to 0.007 (UK Biobank,
dbGaP) or gained up to 0.003 (All of Us) at powers 2 to 4 (``benchmarks/README.md``)."""
OMOP_EMBEDDING = Policy(
    "omop_embedding",
    RRF,
    "semantic: cosine of the query and the concept (name plus a short synonym).",
    exact_first=False,
)
SEARCH_ALL = Policy(
    "search_all",
    _SEMANTIC_LED,
    f"per source: {_SEMANTIC_LED_FORMULA} (keyword: BM25; semantic: cosine; OMOP concepts: "
    f"keyword to the power {OMOP_FUSION.keyword_power}), exact identifiers first, "
    f"{_UKB_PRIORS_TEXT}; then children folded into their parents, versions "
    "of one entity collapsed, and the sources interleaved by rank (ties by cosine), each "
    f"source's hits from the first whose keyword share is below {UNMATCHED_KEYWORD_SHARE} and "
    "that is no closer than unrelated documents after every match (hybrid), each hit "
    f"scoring 1 / ({RRF_K} + its round).",
    priors=_UKB_PRIORS,
    participants_weight=PARTICIPANTS_WEIGHT,
    semantic_variants=True,
    lookup_alone=True,
    unmatched_last=UNMATCHED_KEYWORD_SHARE,
    source_fusion=MappingProxyType({"omop": OMOP_FUSION}),
)

POLICIES: Mapping[str, Policy] = MappingProxyType(
    {
        p.name: p
        for p in (
            UKB_FIELDS,
            DBGAP_VARIABLES,
            DBGAP_DOCUMENTS,
            AOU_CATALOG,
            IDC_SEARCH,
            OMOP_EMBEDDING,
            SEARCH_ALL,
        )
    }
)
"""Every policy by name; the ``retrieval`` block of an answer names the one used."""
