"""How OMOP concepts match a query: four strategies, each returning ordered matches.

* :func:`exact_matches`: case-insensitive equality of the query (whitespace collapsed)
  with ``concept_name``, then with ``concept_synonym_name``; names before synonyms,
  each concept once (under ``name`` when both match); optionally concept codes.
* :func:`fulltext_matches`: BM25 over the release's keyword index restricted to the
  OMOP concept documents (a docno mask), standing in for PostgreSQL's ``ts_rank``.
  A concept document's title is the concept name and its body holds the synonyms
  (then code, vocabulary and class). The score is normalized to ``[0, 1]`` as
  ``rank = bm25 / ideal``, where ``ideal`` is the sum, over the query's distinct
  terms, of the largest BM25 weight that term has in any concept document. ``1.0``
  means the concept carries every query term as strongly as any concept does; the
  value does not depend on filters or on the other hits (unlike dividing by the top
  score, which makes every query's best hit 1.0 however weak it is), so ``min_rank``
  is a threshold with the same meaning for every query. A query term that no concept
  document contains counts in ``ideal`` as much as the heaviest query term that one
  does, so a query half made of unknown words cannot reach 1.0.
  A hit is kept only when the query shares a term (after the index's tokenizer:
  folding, stop words, stemming) with the concept's name (``match_source`` ``name``)
  or, when synonyms are included, with one of its synonyms (``synonym``, the synonym
  sharing most terms as ``matched_synonym``). A hit that matched only through its
  code, vocabulary or class in the body is dropped, as are synonym-only hits when
  ``include_synonyms`` is false; the BM25 score itself is the document's (names and
  synonyms together).
* :func:`embedding_matches`: cosine similarity of the query embedding to the concept
  documents' embeddings (name plus one short English synonym), through the ANN index.
* :func:`partial_matches`: every word of the query is a substring of the name (or of
  a synonym); prefix matches first, then shorter matched strings; the score is the
  query's length over the matched string's.

Filters (:class:`~.filters.ConceptFilter`) apply before any candidate limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabundle.index.fts import KeywordIndex
from metabundle.index.tokenizer import tokenize
from metabundle.search.ranking.concepts import ideal_score, normalized_rank, partial_score
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import OMOP_EMBEDDING
from metabundle.search.release import Release
from metabundle.search.retrieval import Retrieval
from metabundle.search.services.omop.concepts import CONCEPT_COLUMNS
from metabundle.search.services.omop.filters import ConceptFilter, concept_doc_mask
from metabundle.search.services.omop.queries import concepts_by_docno, synonyms_of

#: Matched concepts: standard first, then valid, then by id.
PREFERRED_ORDER = (
    "coalesce(c.standard_concept = 'S', FALSE) DESC, (c.invalid_reason IS NULL) DESC, c.concept_id"
)
FULLTEXT_FIRST_POOL = 200
FULLTEXT_MAX_POOL = 20_000
FULLTEXT_CHUNK = 100
MAX_PARTIAL_WORDS = 8


@dataclass
class Match:
    """One concept matched by a strategy, with how it matched."""

    row: dict[str, Any]
    match_source: str
    matched_synonym: str | None = None
    score: float = 1.0

    @property
    def concept_id(self) -> int:
        return int(self.row["concept_id"])


def normalize_query(query: str) -> str:
    """The query with surrounding whitespace removed and inner runs collapsed."""
    return " ".join(query.split())


# -- exact -----------------------------------------------------------------------------


def exact_matches(
    release: Release,
    query: str,
    flt: ConceptFilter,
    *,
    include_synonyms: bool,
    limit: int,
    include_codes: bool = False,
) -> list[Match]:
    """Concepts whose name, synonym (or code) equals the query, ignoring case."""
    text = normalize_query(query).lower()
    where, params = flt.concept_sql()
    names = release.query_dicts(
        f"SELECT {CONCEPT_COLUMNS} FROM omop_concept c "
        f"WHERE lower(c.concept_name) = ? AND {where} ORDER BY {PREFERRED_ORDER} LIMIT ?",
        [text, *params, limit],
    )
    matches = [Match(row, "name") for row in names]
    if include_synonyms and len(matches) < limit:
        synonyms = release.query_dicts(
            f"SELECT {CONCEPT_COLUMNS}, min(s.concept_synonym_name) AS matched_synonym "
            "FROM omop_concept c JOIN omop_concept_synonym s ON s.concept_id = c.concept_id "
            f"WHERE lower(s.concept_synonym_name) = ? AND lower(c.concept_name) <> ? "
            f"AND {where} GROUP BY {CONCEPT_COLUMNS} ORDER BY {PREFERRED_ORDER} LIMIT ?",
            [text, text, *params, limit],
        )
        matches += [Match(row, "synonym", row.pop("matched_synonym")) for row in synonyms]
    if include_codes and len(matches) < limit:
        seen = {m.concept_id for m in matches}
        codes = release.query_dicts(
            f"SELECT {CONCEPT_COLUMNS} FROM omop_concept c "
            f"WHERE lower(c.concept_code) = ? AND {where} ORDER BY {PREFERRED_ORDER} LIMIT ?",
            [text, *params, limit],
        )
        matches += [Match(row, "code") for row in codes if int(row["concept_id"]) not in seen]
    return matches[:limit]


# -- full text ---------------------------------------------------------------------------


def _ranked_docs(index: KeywordIndex, query: str, mask: np.ndarray) -> Iterator[tuple[int, float]]:
    """BM25 hits in rank order, fetching a larger top-k only when more are needed."""
    k, seen = FULLTEXT_FIRST_POOL, 0
    while True:
        docs, scores = index.search(query, k, mask)
        for docno, score in zip(docs[seen:], scores[seen:], strict=True):
            yield int(docno), float(score)
        seen = len(docs)
        if seen < k or k >= FULLTEXT_MAX_POOL:
            return
        k = min(k * 4, FULLTEXT_MAX_POOL)


def _chunks(pairs: Iterator[tuple[int, float]], size: int) -> Iterator[list[tuple[int, float]]]:
    chunk: list[tuple[int, float]] = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _best_synonym(synonyms: list[str], terms: set[str]) -> str | None:
    """The synonym sharing most terms with the query (then the shortest), if any."""
    best, best_shared = None, 0
    for synonym in synonyms:  # shortest first
        shared = len(terms & set(tokenize(synonym)))
        if shared > best_shared:
            best, best_shared = synonym, shared
    return best


def _classify(
    row: dict[str, Any], synonyms: list[str], terms: set[str], include_synonyms: bool
) -> tuple[str, str | None] | None:
    """``(match_source, matched_synonym)`` of a BM25 hit, or None to drop it."""
    if terms & set(tokenize(row["concept_name"])):
        return "name", None
    if include_synonyms:
        synonym = _best_synonym(synonyms, terms)
        if synonym is not None:
            return "synonym", synonym
    return None


@dataclass
class Fulltext:
    """Full-text matches and whether the release has a keyword index over concepts."""

    available: bool
    matches: list[Match]


def fulltext_matches(
    release: Release,
    query: str,
    flt: ConceptFilter,
    *,
    include_synonyms: bool,
    min_rank: float,
    limit: int,
) -> Fulltext:
    """Concepts by normalized BM25 ``rank`` (descending), at least ``min_rank``."""
    index, concepts = release.keywords, concept_doc_mask(release)
    if index is None or not concepts.any():
        return Fulltext(False, [])
    query_terms = tokenize(query)
    ideal = ideal_score(index, query_terms, concepts)
    if ideal <= 0.0:
        return Fulltext(True, [])
    terms, matches = set(query_terms), []
    for chunk in _chunks(_ranked_docs(index, query, flt.doc_mask(release)), FULLTEXT_CHUNK):
        rows = concepts_by_docno(release, [docno for docno, _ in chunk])
        synonyms = synonyms_of(release, [r["concept_id"] for r in rows.values()])
        for docno, score in chunk:
            normalized = normalized_rank(score, ideal)
            if normalized < min_rank:
                return Fulltext(True, matches)
            row = rows.get(docno)
            if row is None:
                continue
            how = _classify(row, synonyms.get(int(row["concept_id"]), []), terms, include_synonyms)
            if how is None:
                continue
            matches.append(Match(row, how[0], how[1], normalized))
            if len(matches) == limit:
                return Fulltext(True, matches)
    return Fulltext(True, matches)


# -- embeddings ----------------------------------------------------------------------------


def embedding_matches(
    release: Release, query: str, flt: ConceptFilter, *, limit: int
) -> tuple[list[Match], Retrieval]:
    """Nearest concepts by cosine similarity; ``embeddings_unavailable`` when off."""
    hits, retrieval = rank(
        release,
        query,
        policy=OMOP_EMBEDDING,
        method="semantic",
        mask=flt.doc_mask(release),
        limit=limit,
    )
    rows = concepts_by_docno(release, [h.docno for h in hits])
    matches = [
        Match(rows[h.docno], "embedding", None, float(h.semantic or 0.0))
        for h in hits
        if h.docno in rows
    ]
    return matches, retrieval


# -- partial -------------------------------------------------------------------------------


def partial_matches(release: Release, query: str, flt: ConceptFilter, *, limit: int) -> list[Match]:
    """Concepts whose name (or else a synonym) contains every word of the query."""
    text = normalize_query(query).lower()
    words = text.split()[:MAX_PARTIAL_WORDS]
    where, params = flt.concept_sql()
    in_name = " AND ".join(["contains(lower(c.concept_name), ?)"] * len(words))
    in_synonym = " AND ".join(["contains(lower(s.concept_synonym_name), ?)"] * len(words))
    rows = release.query_dicts(
        f"""
        WITH candidate AS (
            SELECT {CONCEPT_COLUMNS}, NULL::VARCHAR AS matched_synonym,
                   starts_with(lower(c.concept_name), ?) AS prefix,
                   length(c.concept_name) AS matched_length
            FROM omop_concept c WHERE {in_name} AND {where}
            UNION ALL
            SELECT {CONCEPT_COLUMNS}, s.concept_synonym_name,
                   starts_with(lower(s.concept_synonym_name), ?),
                   length(s.concept_synonym_name)
            FROM omop_concept c JOIN omop_concept_synonym s ON s.concept_id = c.concept_id
            WHERE {in_synonym} AND NOT ({in_name}) AND {where}
        )
        SELECT * FROM candidate
        QUALIFY row_number() OVER (
            PARTITION BY concept_id ORDER BY prefix DESC, matched_length, matched_synonym
        ) = 1
        ORDER BY prefix DESC, matched_length, concept_id
        LIMIT ?
        """,
        [words[0], *words, *params, words[0], *words, *words, *params, limit],
    )
    matches = []
    for row in rows:
        synonym = row.pop("matched_synonym")
        row.pop("prefix")
        length = row.pop("matched_length")
        score = partial_score(text, length)
        matches.append(Match(row, "synonym" if synonym else "name", synonym, score))
    return matches
