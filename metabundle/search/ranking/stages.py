"""The stages of the ranking pipeline, each applying one part of a :class:`~.policies.Policy`.

They work on candidate lists (``[(docno, score)]``, best first), on :class:`Hit`
dictionaries and on ``search_doc`` rows (:func:`metabundle.search.retrieval.documents`
plus each row's ``parent_docno``), never on payloads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from metabundle.index.title_words import MIN_WORD_LENGTH, WORD_SEPARATOR, split_title
from metabundle.index.tokenizer import STOP_WORDS, tokenize
from metabundle.schemas.search import doc_id
from metabundle.search.ranking.policies import Fusion, Policy
from metabundle.search.release import Release, release_outdated
from metabundle.search.retrieval import Hit, normalize_identifier

Pairs = list[tuple[int, float]]
Rows = dict[int, dict[str, Any]]

# -- candidates: the title-similarity fallback ------------------------------------------

TITLE_SIMILARITY = f"""
WITH words AS (SELECT DISTINCT unnest(?::VARCHAR[]) AS word),
titles AS (SELECT docno, lower(title) AS title FROM search_doc SEMI JOIN title_scope USING (docno)),
tokens AS (SELECT docno, unnest({split_title("title")}) AS token FROM titles),
close AS (
    SELECT token, word, jaro_winkler_similarity(word, token) AS similarity
    FROM (SELECT DISTINCT token FROM tokens WHERE length(token) >= {MIN_WORD_LENGTH}), words
    WHERE jaro_winkler_similarity(word, token) >= ?
),
best AS (
    SELECT docno, word, max(similarity) AS similarity
    FROM tokens JOIN close USING (token) GROUP BY ALL
),
matched AS (
    SELECT docno, round(avg(similarity), 9) AS words FROM best GROUP BY docno
    HAVING count(*) = (SELECT count(*) FROM words)
),
scored AS (
    SELECT docno, jaro_winkler_similarity(title, ?) AS whole, coalesce(m.words, 0.0) AS words
    FROM titles LEFT JOIN matched m USING (docno)
)
SELECT docno, greatest(whole, words) AS similarity FROM scored WHERE similarity >= ?
ORDER BY similarity DESC, whole DESC, docno LIMIT ?
"""
"""A title's similarity to the query, over the titles in ``title_scope``: the
Jaro-Winkler similarity of the two, or the mean over the query's words of each word's
best similarity to a title word, whichever is higher. A title reaches the threshold on
its words only if every word has a title word at least ``threshold * words - (words -
1)`` close (the others count 1 at most), so each distinct title word is compared with
the query's words once and only those close words are looked up in the titles. The
mean is rounded to nine places, so that titles as close as each other tie (and are
ordered by their whole similarity, then docno) whatever order the mean was summed in."""

TITLES_WITH_A_CLOSE_WORD = """
SELECT DISTINCT unnest(docnos) AS docno
FROM search_title_word, (SELECT unnest(?::VARCHAR[]) AS query_word)
WHERE source IN (SELECT unnest(?::VARCHAR[])) AND jaro_winkler_similarity(query_word, word) >= ?
"""
"""The documents of the given sources whose title holds a word at least the threshold
close to one of the query's words (``search_title_word``: one row per distinct word)."""


def query_words(query: str) -> list[str]:
    """The query's words of three or more letters that are not stop words."""
    words = re.split(WORD_SEPARATOR, query.lower())
    return [w for w in dict.fromkeys(words) if len(w) > 2 and w not in STOP_WORDS]


def needs_title_fallback(release: Release, query: str, keyword: Pairs, limit: int) -> bool:
    """True when BM25 alone may miss: a query term the keyword index has never seen (a
    misspelling, a run-together word) or fewer keyword candidates than ``limit``."""
    terms = set(tokenize(query))
    index = release.keywords
    if index is None or len(keyword) < limit:
        return True
    return len(index.term_ids(sorted(terms))) < len(terms)


def title_candidates(
    release: Release, query: str, mask: np.ndarray | None, policy: Policy
) -> Pairs:
    """Up to ``policy.title_pool`` documents whose title is close to the query, best
    first: the Jaro-Winkler similarity of query and title, or the mean over the query's
    words of their best Jaro-Winkler similarity to a title word, whichever is higher.

    Only titles holding a word at least the threshold close to one of the query's words
    are compared. A title that reaches the threshold on its words holds one (their mean
    does); one that holds none can reach it only as a whole string, by chance ("ADHD
    medications" and "Addiction", 0.88). Those titles are found through the release's
    title words, so a fallback reads the titles that hold a close word, not every
    title of its sources. A query without a word of three letters or more that is not
    a stop word ("No") can match only as a whole; its candidates are the titles holding
    a word close to one of its shorter words."""
    words = query_words(query)
    near = words or [w for w in re.split(WORD_SEPARATOR, query.lower()) if w]
    if not near:
        return []
    threshold = policy.title_similarity_min
    closest_needed = threshold * len(words) - (len(words) - 1) - 1e-9
    sources = [
        source
        for source, docnos in release.source_ranges.items()
        if mask is None or mask[docnos.start : docnos.stop].any()
    ]
    with release.cursor() as cur:
        try:
            found = cur.execute(TITLES_WITH_A_CLOSE_WORD, [near, sources, threshold])
        except duckdb.CatalogException:
            raise release_outdated("the search_title_word table", "the title fallback") from None
        scope = np.sort(np.asarray(found.fetchnumpy()["docno"], dtype=np.int32))
        if mask is not None:
            scope = scope[mask[scope]]
        if not scope.size:
            return []
        cur.register("title_scope", pa.table({"docno": scope}))
        rows = cur.execute(
            TITLE_SIMILARITY,
            [
                words,
                closest_needed,
                " ".join(query.lower().split()),
                threshold,
                policy.title_pool,
            ],
        ).fetchall()
    return [(int(docno), float(similarity)) for docno, similarity in rows]


# -- rows -------------------------------------------------------------------------------


#: The ``search_doc`` columns the stages read (a payload shows more, and is hydrated on
#: its own: a ranking reads several hundred candidates and shows a few).
RANKING_COLUMNS = (
    "docno",
    "source",
    "kind",
    "entity_id",
    "title",
    "parent_id",
    "domain",
    "variable_type",
)


def doc_rows(
    release: Release, docnos: set[int], fold_kinds: Mapping[str, str] | None = None
) -> Rows:
    """The :data:`RANKING_COLUMNS` of ``docnos``; a row of a kind that folds into a
    parent (``fold_kinds``: child kind → parent kind) carries its parent's
    ``parent_docno`` (None for every other row). Rows come from the release's
    memory-mapped rows file and parents from their ids' places in it, so the cost does
    not grow with the corpus (a join of the whole table did)."""
    if not docnos:
        return {}
    fold_kinds = fold_kinds or {}
    rows = release.shown_rows(docnos, RANKING_COLUMNS)
    parent_ids = {
        int(row["docno"]): doc_id(row["source"], fold_kinds[row["kind"]], row["parent_id"])
        for row in rows
        if row["kind"] in fold_kinds and row["parent_id"] is not None
    }
    parents = release.docnos_of(parent_ids.values())
    for row in rows:
        parent = parent_ids.get(int(row["docno"]))
        row["parent_docno"] = None if parent is None else parents.get(parent)
    return {int(row["docno"]): row for row in rows}


# -- folding ----------------------------------------------------------------------------


def fold_children(
    lists: dict[str, Pairs], rows: Rows, query: str, policy: Policy
) -> tuple[dict[str, Pairs], set[int]]:
    """Each list with children (``policy.fold_kinds``) that match only through their
    parent's text replaced by that parent (at the child's rank, once); and the parents
    that gained a place this way. A child whose own title shares a term with the query
    stays itself, and so do the title list's (it compares the children's own titles)."""
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
            target = _stands_for(rows[docno], terms, policy) or docno
            if target in seen:
                continue
            seen.add(target)
            kept.append((target, score))
            if target != docno:
                folded_into.add(target)
        result[name] = kept
    return result, folded_into


def _stands_for(row: dict[str, Any], terms: set[str], policy: Policy) -> int | None:
    """The parent a child row stands for, when the query does not name the child."""
    if row["kind"] not in policy.fold_kinds or row["parent_docno"] is None:
        return None
    return None if terms & set(tokenize(row["title"])) else int(row["parent_docno"])


# -- fusion -----------------------------------------------------------------------------


def min_max(pairs: Pairs) -> dict[int, float]:
    """Scores scaled to 0..1 over the list (all 1.0 when they are equal)."""
    if not pairs:
        return {}
    low = min(score for _, score in pairs)
    span = max(score for _, score in pairs) - low
    return {docno: (score - low) / span if span > 0 else 1.0 for docno, score in pairs}


def signals(lists: dict[str, Pairs]) -> dict[int, Hit]:
    """One hit per document carrying each list's raw signal and the scaled ones."""
    hits: dict[int, Hit] = {}
    keyword = lists.get("keyword", [])
    top = max((s for _, s in keyword), default=0.0)
    for docno, score in keyword:
        hit = hits.setdefault(docno, Hit(docno))
        hit.keyword = score
        hit.keyword_scaled = score / top if top > 0 else 0.0
    for docno, score in lists.get("title", []):
        hits.setdefault(docno, Hit(docno)).title_similarity = score
    semantic = lists.get("semantic", [])
    scaled = min_max(semantic)
    for docno, score in semantic:
        hit = hits.setdefault(docno, Hit(docno))
        hit.semantic = score
        hit.semantic_scaled = scaled[docno]
    return hits


def weighted_signals(
    release: Release, hits: dict[int, Hit], rows: Rows, query: str, fusion: Fusion
) -> None:
    """The signals a weighted fusion adds to :func:`signals`: the keyword signal over
    the query's ideal BM25 (``fusion.keyword_scale``) and the title match of each hit
    (``fusion.title_match``)."""
    if fusion.kind != "weighted":
        return
    index = release.keywords
    if fusion.keyword_scale == "ideal" and index is not None:
        ideal = index.ideal_score(query)
        for hit in hits.values():
            if hit.keyword is not None and ideal > 0:
                hit.keyword_scaled = min(1.0, hit.keyword / ideal)
    if fusion.title_match:
        terms = set(tokenize(query))
        for hit in hits.values():
            hit.title_match = title_match(terms, set(tokenize(rows[hit.docno]["title"] or "")))


def title_match(query_terms: set[str], title_terms: set[str]) -> float:
    """The share of the query's terms the title holds times the share of the title's
    terms the query holds: 1.0 when both hold the same terms, 0.0 when none is shared."""
    if not query_terms or not title_terms:
        return 0.0
    shared = len(query_terms & title_terms)
    return shared * shared / (len(query_terms) * len(title_terms))


def fuse(hits: dict[int, Hit], lists: dict[str, Pairs], method: str, policy: Policy) -> None:
    """Set every hit's score: by the method's list alone, or fused by the policy."""
    if method == "semantic":
        for hit in hits.values():
            hit.score = hit.semantic or 0.0
    elif method == "keyword" and policy.keyword_fusion is None:
        for hit in hits.values():
            bm25 = hit.keyword or 0.0
            hit.score = hit.keyword_scaled if policy.keyword_score == "bm25_over_best" else bm25
    else:
        fusion = policy.fusion if method == "hybrid" else policy.keyword_fusion
        assert fusion is not None
        if fusion.kind == "rrf":
            _reciprocal_rank(hits, lists, fusion)
        else:
            _weighted(hits, fusion)


def _weighted(hits: dict[int, Hit], fusion: Fusion) -> None:
    for hit in hits.values():
        cosine = hit.semantic_scaled if fusion.scale_semantic else max(hit.semantic or 0.0, 0.0)
        hit.score = (
            fusion.keyword_weight * hit.keyword_scaled**fusion.keyword_power
            + fusion.semantic_weight * cosine
            + fusion.title_match * hit.title_match
        )


def _reciprocal_rank(hits: dict[int, Hit], lists: dict[str, Pairs], fusion: Fusion) -> None:
    for pairs in lists.values():
        for rank, (docno, _score) in enumerate(pairs, start=1):
            hits[docno].score += 1.0 / (fusion.rrf_k + rank)


# -- boosts and intents -----------------------------------------------------------------


def apply_boosts(hits: list[Hit], rows: Rows, query: str, method: str, policy: Policy) -> None:
    """Exact matches gain ``policy.boosts['id']`` when the query is the entity's id,
    ``['alias']`` for another identifier, times the most a hybrid score can reach
    (:attr:`Fusion.full_scale`) in hybrid, so a boost of 2 is twice any other match."""
    if not policy.boosts or method == "semantic":
        return
    weight = policy.fusion.full_scale if method == "hybrid" else 1.0
    identifier = normalize_identifier(query)
    for hit in hits:
        reason = "id" if identifier == str(rows[hit.docno]["entity_id"]).lower() else "alias"
        hit.boost, hit.boost_reason = policy.boosts[reason], reason
        hit.score += weight * hit.boost


def query_intents(release: Release, query: str, policy: Policy) -> set[str]:
    """The data types (``variable_type`` values) the query names in so many words."""
    text = " ".join(query.lower().split())
    terms = set(tokenize(query))
    found = set()
    for intent in policy.intents:
        titles = []
        if intent.titles_of_kind:
            titles = [
                title
                for (title,) in release.query(
                    "SELECT DISTINCT lower(title) FROM search_doc WHERE kind = ?",
                    [intent.titles_of_kind],
                )
            ]
        if (
            terms & intent.terms
            or any(p in text for p in intent.phrases)
            or any(t in text for t in titles)
        ):
            found.add(intent.variable_type)
    return found


def apply_intents(hits: dict[int, Hit], rows: Rows, intents: set[str], policy: Policy) -> None:
    """Add ``policy.intent_bonus`` to the hits of a data type the query names."""
    for hit in hits.values():
        variable_type = rows[hit.docno]["variable_type"]
        if variable_type in intents:
            hit.score += policy.intent_bonus
            hit.intent.append(f"query names {variable_type}")


# -- order ------------------------------------------------------------------------------


def order(hits: dict[int, Hit], exact: list[int], rows: Rows, policy: Policy) -> list[Hit]:
    """By score, exact matches first (by the policy's kind tiers, then by score or in
    docno order), each lifted to the best score so that no score rises as rank falls."""
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.docno))
    if not exact:
        return ordered
    tiers = policy.exact_kind_order
    matched = [hits[d] for d in exact]
    by_score = policy.exact_by_score
    matched.sort(
        key=lambda h: (tiers.get(rows[h.docno]["kind"], 0), -h.score if by_score else 0, h.docno)
    )
    best = max((h.score for h in ordered), default=0.0)
    for hit in matched:
        hit.score = max(hit.score, best)
    done = set(exact)
    return matched + [h for h in ordered if h.docno not in done]


def is_lookup(query: str) -> bool:
    """A query of one token holding a digit ("21001", "phs000007", "K92.2"): an
    identifier typed to look an entity up, not words to match."""
    text = query.strip()
    return bool(text) and not any(c.isspace() for c in text) and any(c.isdigit() for c in text)


def drop_unrelated(hits: list[Hit]) -> list[Hit]:
    """The exact matches and the hits the keyword index matched: behind an identifier
    found exactly, a document only the embedding found is chance (the vector of a
    number or a code says nothing about it)."""
    return [hit for hit in hits if hit.exact or hit.keyword is not None]


def diversify(ordered: list[Hit], rows: Rows, limit: int, policy: Policy) -> list[Hit]:
    """The first ``limit`` hits, at most ``policy.max_per_title`` per (title, domain)."""
    if policy.max_per_title is None:
        return ordered[:limit]
    seen: Counter[tuple[str, str | None]] = Counter()
    kept = []
    for hit in ordered:
        row = rows[hit.docno]
        key = (row["title"].strip().lower(), row["domain"])
        if seen[key] >= policy.max_per_title:
            continue
        seen[key] += 1
        kept.append(hit)
        if len(kept) == limit:
            break
    return kept
