"""All of Us ranking, as the QueryGaP retrieval contract describes it.

Candidate lists, all computed inside the filter (filters apply before every
candidate limit):

- ``exact``: identifiers and aliases (``Smoking_100CigsLifetime``, ``loinc:8462-4``,
  OMOP concept ids, Data Browser route names) equal to the query; they rank first
  (``keyword`` and ``hybrid``), variables before navigation before support hits;
- ``keyword``: BM25 over the search documents (title, module, question path,
  answers, description, code);
- ``title``: a bounded title-similarity fallback for misspelt or run-together
  queries, run when no identifier matched and either a query term is unknown to the
  keyword index or BM25 finds fewer items than asked for: the Jaro-Winkler similarity
  of query and title (whole, or word by word), at least :data:`TITLE_SIMILARITY_MIN`,
  at most :data:`TITLE_POOL` candidates;
- ``semantic``: cosine similarity of the query embedding and the item embeddings.

An answer's search document repeats its question, so in the keyword and semantic
lists an answer whose own title shares no term with the query stands for its
question: the question takes the answer's place (``via_answers``) and the answer
drops out. Otherwise the five "Yes", "No", "Skip" answers of a question would bury
the question itself. An answer the query names ("sleep apnea") stays an answer.

``keyword`` fuses the BM25 and title lists, ``hybrid`` all three, by reciprocal rank
(``1 / (60 + rank)`` per list). ``semantic`` ranks by cosine alone. Hybrid degrades
to keyword when query embeddings are unavailable; explicit semantic fails.

Hybrid adds small intent signals (:data:`INTENT_BONUS` each, about the gap between
ranks 1 and 14 of one list) to items of the data type a query asks for in so many
words: a survey module's name or the words survey, question, questionnaire, asked
or answer favour survey items; physical measurement(s), vitals or vital signs favour
physical measurements; EHR, health or medical records, or a vocabulary name (SNOMED,
LOINC, RxNorm, ICD, CPT, OMOP) favour EHR concepts. Nothing favours an EHR concept
for being a standard or a classification concept.

Finally at most :data:`MAX_PER_TITLE` results share a (title, domain) pair, so that
the many "Yes", "No" or "PMI: Skip" answers cannot crowd out everything else.
Scores are retrieval signals, not calibrated probabilities.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from metabundle.index.tokenizer import STOP_WORDS, tokenize
from metabundle.search.release import Release
from metabundle.search.retrieval import (
    MIN_POOL,
    RRF_K,
    Hit,
    Retrieval,
    exact_matches,
    keyword_candidates,
    mask_from_sql,
    semantic_or_degrade,
    unmatched,
)

SOURCE = "aou"
TITLE_SIMILARITY_MIN = 0.85
TITLE_POOL = 20
INTENT_BONUS = 0.003
MAX_PER_TITLE = 2
ROLE_ORDER = {"variable": 0, "navigation": 1, "support": 2}

SURVEY_TERMS = frozenset(tokenize("survey surveys question questions questionnaire asked answer"))
PM_TERMS = frozenset(tokenize("vitals"))
PM_PHRASES = ("physical measurement", "vital sign")
EHR_TERMS = frozenset(tokenize("ehr emr snomed loinc rxnorm icd icd9 icd10 icd10cm cpt omop"))
EHR_PHRASES = ("health record", "medical record")

Pairs = list[tuple[int, float]]


@dataclass(frozen=True)
class AouFilters:
    """The catalogue filters; every value already validated against the release."""

    variable_type: str | None = None
    ehr_domain: str | None = None
    ehr_role: str | None = None
    ehr_vocabulary: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """A parameterized ``search_doc`` WHERE clause selecting the filtered items."""
        clauses, params = ["source = ?"], [SOURCE]
        for column, value in (
            ("variable_type", self.variable_type),
            ("domain", self.ehr_domain),
            ("role", self.ehr_role),
            ("vocabulary", self.ehr_vocabulary),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return " AND ".join(clauses), params

    def describe(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class AouHit(Hit):
    """A ranked item with the All of Us signals besides keyword and semantic."""

    title_similarity: float | None = None
    via_answers: bool = False
    intent: list[str] = field(default_factory=list)

    def scores(self) -> dict[str, Any]:
        scores = super().scores()
        similarity = self.title_similarity
        scores["title_similarity"] = None if similarity is None else round(similarity, 6)
        scores["via_answers"] = self.via_answers
        scores["intent"] = self.intent
        return scores


# -- candidate lists --------------------------------------------------------------------


TITLE_SIMILARITY = """
WITH words AS (SELECT DISTINCT unnest(?::VARCHAR[]) AS word),
tokens AS (
    SELECT docno, unnest(regexp_split_to_array(lower(title), '[^a-z0-9]+')) AS token
    FROM search_doc WHERE {where}
),
best AS (
    SELECT docno, word, max(jaro_winkler_similarity(word, token)) AS similarity
    FROM tokens, words WHERE length(token) > 1 GROUP BY ALL
),
scored AS (
    SELECT docno, jaro_winkler_similarity(lower(title), ?) AS whole,
           coalesce(b.words, 0.0) AS words
    FROM search_doc
    LEFT JOIN (SELECT docno, avg(similarity) AS words FROM best GROUP BY docno) b USING (docno)
    WHERE {where}
)
SELECT docno, greatest(whole, words) AS similarity FROM scored WHERE similarity >= ?
ORDER BY similarity DESC, whole DESC, docno LIMIT ?
"""


def query_words(query: str) -> list[str]:
    """The query's words of three or more letters that are not stop words."""
    words = re.split(r"[^a-z0-9]+", query.lower())
    return [w for w in dict.fromkeys(words) if len(w) > 2 and w not in STOP_WORDS]


def needs_title_fallback(release: Release, query: str, keyword: Pairs, limit: int) -> bool:
    """True when BM25 alone may miss: a query term the keyword index has never seen (a
    misspelling, a run-together word) or fewer keyword candidates than ``limit``."""
    terms = set(tokenize(query))
    index = release.keywords
    if index is None or len(keyword) < limit:
        return True
    return len(index.term_ids(sorted(terms))) < len(terms)


def title_candidates(release: Release, query: str, where: str, params: list[Any]) -> Pairs:
    """Up to :data:`TITLE_POOL` items whose title is close to the query, best first:
    the Jaro-Winkler similarity of query and title, or the mean over the query's words
    of their best Jaro-Winkler similarity to a title word, whichever is higher."""
    text = " ".join(query.lower().split())
    rows = release.query(
        TITLE_SIMILARITY.format(where=where),
        [query_words(query), *params, text, *params, TITLE_SIMILARITY_MIN, TITLE_POOL],
    )
    return [(int(docno), float(similarity)) for docno, similarity in rows]


def _new_retrieval(release: Release, method: str) -> Retrieval:
    semantic = method != "keyword"
    weights = None
    if method != "semantic":
        weights = {
            "fusion": "reciprocal_rank",
            "rrf_k": RRF_K,
            "title_similarity_min": TITLE_SIMILARITY_MIN,
            "intent_bonus": INTENT_BONUS if method == "hybrid" else 0.0,
        }
    return Retrieval(
        method=method,
        effective_method=method,
        embedding_provider=release.embedding_provider if semantic else None,
        embedding_model=release.search_info.get("embedding_model") if semantic else None,
        weights=weights,
    )


# -- item rows --------------------------------------------------------------------------

ITEM_COLUMNS = (
    "result_id",
    "kind",
    "search_role",
    "is_variable",
    "variable_type",
    "title",
    "subtitle",
    "domain",
    "vocabulary",
    "concept_id",
    "concept_code",
    "ehr_role",
    "canonical_url",
)


def item_rows(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """The ``aou_item`` rows of ``docnos`` (search documents) with the docno of their
    parent (``parent_docno``), keyed by docno."""
    if not docnos:
        return {}
    columns = ", ".join(f"i.{name}" for name in ITEM_COLUMNS)
    rows = release.query_dicts(
        f"SELECT d.docno, p.docno AS parent_docno, {columns} FROM search_doc d "
        f"JOIN aou_item i ON i.result_id = d.entity_id "
        f"LEFT JOIN search_doc p ON p.source = d.source AND p.entity_id = i.parent_result_id "
        f"WHERE d.source = ? AND d.docno IN (SELECT unnest(?::INTEGER[]))",
        [SOURCE, list(docnos)],
    )
    return {int(row.pop("docno")): row for row in rows}


# -- fusion -----------------------------------------------------------------------------


def fold_answers(
    lists: dict[str, Pairs], rows: dict[int, dict[str, Any]], query: str
) -> tuple[dict[str, Pairs], set[int]]:
    """Each list with answers that match only through their question's text replaced by
    that question (at the answer's rank, once); and the questions that gained a place
    this way. An answer whose own title shares a term with the query stays itself, and
    so do answers of the title list (it compares their own titles)."""
    terms = set(tokenize(query))
    folded_into: set[int] = set()
    result: dict[str, Pairs] = {}
    for name, pairs in lists.items():
        if name == "title":
            result[name] = pairs
            continue
        seen: set[int] = set()
        kept: Pairs = []
        for docno, score in pairs:
            target = _stands_for(rows[docno], terms) or docno
            if target in seen:
                continue
            seen.add(target)
            kept.append((target, score))
            if target != docno:
                folded_into.add(target)
        result[name] = kept
    return result, folded_into


def _stands_for(row: dict[str, Any], terms: set[str]) -> int | None:
    """The question an answer row stands for, when the query does not name the answer."""
    if row["kind"] != "answer" or row["parent_docno"] is None:
        return None
    return None if terms & set(tokenize(row["title"])) else int(row["parent_docno"])


def fuse(lists: dict[str, Pairs], reciprocal: bool) -> dict[int, AouHit]:
    """One hit per document; score is the sum of reciprocal ranks (or the single
    list's own score when ``reciprocal`` is false)."""
    hits: dict[int, AouHit] = {}
    for signal, pairs in lists.items():
        for rank, (docno, score) in enumerate(pairs, start=1):
            hit = hits.setdefault(docno, AouHit(docno))
            setattr(hit, "title_similarity" if signal == "title" else signal, score)
            hit.score += 1.0 / (RRF_K + rank) if reciprocal else score
    return hits


def query_intents(release: Release, query: str) -> set[str]:
    """The data types (variable_type values) the query names in so many words."""
    text = " ".join(query.lower().split())
    terms = set(tokenize(query))
    intents = set()
    modules = release.query(
        "SELECT lower(title) FROM search_doc WHERE source = ? AND kind = 'survey_module'",
        [SOURCE],
    )
    if terms & SURVEY_TERMS or any(name in text for (name,) in modules):
        intents.add("survey")
    if terms & PM_TERMS or any(phrase in text for phrase in PM_PHRASES):
        intents.add("physical_measurement")
    if terms & EHR_TERMS or any(phrase in text for phrase in EHR_PHRASES):
        intents.add("ehr")
    return intents


def apply_intents(
    hits: dict[int, AouHit], rows: dict[int, dict[str, Any]], intents: set[str]
) -> None:
    """Add :data:`INTENT_BONUS` to the hits of a data type the query names."""
    for hit in hits.values():
        variable_type = rows[hit.docno]["variable_type"]
        if variable_type in intents:
            hit.score += INTENT_BONUS
            hit.intent.append(f"query names {variable_type}")


def exact_first(
    ordered: list[AouHit],
    exact: list[int],
    hits: dict[int, AouHit],
    rows: dict[int, dict[str, Any]],
) -> list[AouHit]:
    """Exact identifier matches first: variables, then navigation, then support hits,
    each by fused score."""
    if not exact:
        return ordered
    matched = [hits.get(docno) or AouHit(docno) for docno in exact]
    for hit in matched:
        hit.exact = True
    matched.sort(key=lambda h: (ROLE_ORDER[rows[h.docno]["search_role"]], -h.score, h.docno))
    done = set(exact)
    return matched + [h for h in ordered if h.docno not in done]


def diversify(ordered: list[AouHit], rows: dict[int, dict[str, Any]], limit: int) -> list[AouHit]:
    """The first ``limit`` hits, at most :data:`MAX_PER_TITLE` per (title, domain)."""
    seen: Counter[tuple[str, str | None]] = Counter()
    kept = []
    for hit in ordered:
        row = rows[hit.docno]
        key = (row["title"].strip().lower(), row["domain"])
        if seen[key] >= MAX_PER_TITLE:
            continue
        seen[key] += 1
        kept.append(hit)
        if len(kept) == limit:
            break
    return kept


# -- the ranking ------------------------------------------------------------------------


def candidate_lists(
    release: Release, query: str, method: str, filters: AouFilters, limit: int
) -> tuple[list[int], dict[str, Pairs], Retrieval]:
    """Exact matches and the ranked candidate lists of ``method`` within ``filters``."""
    where, params = filters.where()
    mask = mask_from_sql(release, where, params)
    pool = max(MIN_POOL, limit * 5)
    retrieval = _new_retrieval(release, method)
    exact = exact_matches(release, query, mask) if method != "semantic" else []
    lists: dict[str, Pairs] = {}
    if method != "semantic":
        lists["keyword"] = keyword_candidates(release, query, mask, pool)
        if not exact and needs_title_fallback(release, query, lists["keyword"], limit):
            lists["title"] = title_candidates(release, query, where, params)
    if method != "keyword":
        semantic = semantic_or_degrade(release, query, mask, pool, retrieval)
        if not retrieval.degraded:
            lists["semantic"] = semantic
    retrieval.candidates = {name: len(pairs) for name, pairs in lists.items()}
    if method != "semantic":
        retrieval.candidates["exact"] = len(exact)
    retrieval.low_confidence = not exact and unmatched(
        release, query, mask, lists.get("keyword"), lists.get("semantic", [])
    )
    return exact, lists, retrieval


def rank_items(
    release: Release, query: str, *, method: str, filters: AouFilters, limit: int
) -> tuple[list[AouHit], dict[int, dict[str, Any]], Retrieval]:
    """The top ``limit`` items for ``query`` within ``filters``, their ``aou_item``
    rows (by docno) and the retrieval block."""
    exact, lists, retrieval = candidate_lists(release, query, method, filters, limit)
    candidates = {docno for pairs in lists.values() for docno, _ in pairs}
    rows = item_rows(release, sorted(candidates | set(exact)))
    lists, folded = fold_answers(lists, rows, query)
    rows |= item_rows(release, sorted(folded - set(rows)))
    hits = fuse(lists, reciprocal=method != "semantic")
    for docno in folded:
        hits[docno].via_answers = True
    if retrieval.effective_method == "hybrid":
        apply_intents(hits, rows, query_intents(release, query))
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.docno))
    ordered = exact_first(ordered, exact, hits, rows)
    return diversify(ordered, rows, limit), rows, retrieval
