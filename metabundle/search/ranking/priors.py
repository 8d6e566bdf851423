"""Priors of UK Biobank field search (policy ``priors``: ``search_ukb_fields`` and
``search_all``), mined from the Showcase schema itself.

**Companion fields.** A blood-biochemistry result such as 30740 "Glucose" comes with
companions named after it: "Glucose aliquot", "Glucose assay date", "Glucose
correction level", "Glucose missing reason", "Glucose reportability"; a sample comes
with "… device id", "… acquisition time" and more. Their titles hold every word of
the result's title, so a query for the measurement ranks them level with it. The
qualifiers are not a hand-made list: a title suffix is a qualifier when, at least
:data:`QUALIFIER_MIN` times, it follows the title of another field that has at least
:data:`GROUP_MIN` such suffixed companions (a measurement with a QC family), so
"(left)" or "intake", which stand alone, are not. When a companion ranks and the query
does not name its qualifier, its main field (the field of the title prefix nearest in
field id, since the Showcase numbers a measurement's companions next to it) is placed
just before it.

**Equal titles.** Fields with the same title (6138 and 28056 are both
"Qualifications") are ordered by participants, most first, in the places they hold.

Both keep scores non-increasing down the list: a placed main field takes the score of
the companion it precedes, equal-title fields exchange places and keep the scores of
the places.

**Participants** (the policy's ``participants_weight``, hybrid only, before the order
is made). A field's share of the most participants any field has, times the weight, is
added to its fused score (:data:`~.policies.PARTICIPANTS_WEIGHT`).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from metabundle.index.tokenizer import tokenize
from metabundle.schemas.search import doc_id
from metabundle.search.ranking.policies import Policy
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit

GROUP_MIN = 3
QUALIFIER_MIN = 10
MAX_QUALIFIER_WORDS = 3
MAIN_FIELD = "main_field_before_companion"
EQUAL_TITLES = "equal_titles_by_participants"


@dataclass(frozen=True)
class Companions:
    """Companion field id → (its main field id, the qualifier its title adds)."""

    main_of: dict[int, tuple[int, str]]


@dataclass(frozen=True)
class UkbFields:
    """What the priors read of a release's UK Biobank fields, loaded once per opened
    release (a query joining ``search_doc`` to ``ukb_field`` per search cost 4-10 ms):
    docno → (field id, title, participants), field id → docno, the companions and the
    most participants of a field."""

    by_docno: dict[int, tuple[int, str, int]]
    docno_of: dict[int, int]
    companions: Companions
    most_participants: int  # the most participants any field has (0 when none says)


_CACHE: weakref.WeakKeyDictionary[Release, UkbFields] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _suffixes(title: str, titles: set[str]) -> list[tuple[str, str]]:
    """(prefix title, suffix) for each way ``title`` is another title plus a few words."""
    words = title.split()
    found = []
    for k in range(1, MAX_QUALIFIER_WORDS + 1):
        prefix = " ".join(words[:-k])
        if len(words) > k and prefix in titles:
            found.append((prefix, " ".join(words[-k:])))
    return found


def mine_companions(fields: list[tuple[int, str, int | None, int | None]]) -> Companions:
    """Companions among ``(field_id, title, main_category, participants)`` rows."""
    by_title: dict[str, list[tuple[int, int | None, int | None]]] = defaultdict(list)
    for field_id, title, category, participants in fields:
        by_title[title.lower()].append((field_id, category, participants))
    titles = set(by_title)
    suffixed = [(field_id, _suffixes(title.lower(), titles)) for field_id, title, *_ in fields]
    families: dict[str, set[str]] = defaultdict(set)
    for _field_id, found in suffixed:
        for prefix, suffix in found:
            families[prefix].add(suffix)
    counts = Counter(
        s for suffixes in families.values() if len(suffixes) >= GROUP_MIN for s in suffixes
    )
    qualifiers = {suffix for suffix, count in counts.items() if count >= QUALIFIER_MIN}
    main_of: dict[int, tuple[int, str]] = {}
    for field_id, found in suffixed:
        for prefix, suffix in found:
            if suffix in qualifiers:
                mains = sorted(
                    by_title[prefix],
                    key=lambda m, near=field_id: (abs(m[0] - near), -(m[2] or 0), m[0]),
                )
                main_of[field_id] = (mains[0][0], suffix)
                break
    return Companions(main_of)


def ukb_fields(release: Release) -> UkbFields:
    """The release's UK Biobank fields as the priors read them (see :class:`UkbFields`).
    Their docnos come from the rows file, where the fields' documents are one run of
    ``doc_id`` order: no read of ``search_doc``, whatever the corpus's size."""
    with _LOCK:
        found = _CACHE.get(release)
    if found is None:
        rows = release.query(
            "SELECT field_id, title, main_category, num_participants FROM ukb_field "
            "ORDER BY field_id"
        )
        docnos = release.doc_rows.docnos_under(doc_id("ukb", "field", ""))
        by_docno = {docnos[str(f)]: (f, t, int(n or 0)) for f, t, _, n in rows if str(f) in docnos}
        found = UkbFields(
            by_docno=by_docno,
            docno_of={field: docno for docno, (field, _, _) in by_docno.items()},
            companions=mine_companions(rows),
            most_participants=max((int(n or 0) for _, _, _, n in rows), default=0),
        )
        with _LOCK:
            _CACHE[release] = found
    return found


def add_participants(release: Release, hits: dict[int, Hit], policy: Policy) -> None:
    """Add each UK Biobank field's share of the most participants, times the policy's
    ``participants_weight``, to its score (``prior_bonus``)."""
    if not policy.participants_weight:
        return
    documents = release.source_ranges.get("ukb", range(0))
    if not any(docno in documents for docno in hits):
        return
    known = ukb_fields(release)
    most = known.most_participants
    if most <= 0:
        return
    for docno, hit in hits.items():
        field = known.by_docno.get(docno)
        if field is not None and field[2] > 0:
            hit.prior_bonus = policy.participants_weight * field[2] / most
            hit.score += hit.prior_bonus


def apply(
    release: Release, hits: list[Hit], query: str, policy: Policy, candidates: dict[int, Hit]
) -> list[Hit]:
    """``hits`` reordered by the priors the policy names (UK Biobank fields only); a
    field placed from outside ``hits`` keeps its signals from ``candidates``."""
    if not policy.priors:
        return hits
    fields = field_rows(release, hits)
    if not fields:  # no UK Biobank field among them (a release may have no ukb_field)
        return hits
    if EQUAL_TITLES in policy.priors:
        hits = order_equal_titles(hits, fields)
    if MAIN_FIELD in policy.priors:
        hits = place_main_fields(release, hits, query, fields, candidates)
    return hits


def field_rows(release: Release, hits: list[Hit]) -> dict[int, tuple[int, str, int]]:
    """docno → (field id, title, participants) of the hits that are UK Biobank fields
    (no lookup when none is a UK Biobank document: ``search_all`` ranks every source
    with these priors)."""
    documents = release.source_ranges.get("ukb", range(0))
    docnos = [h.docno for h in hits if h.docno in documents]
    if not docnos:
        return {}
    fields = ukb_fields(release).by_docno
    return {docno: fields[docno] for docno in docnos if docno in fields}


def place_main_fields(
    release: Release,
    hits: list[Hit],
    query: str,
    fields: dict[int, tuple[int, str, int]],
    candidates: dict[int, Hit],
) -> list[Hit]:
    """``hits`` with each companion's main field placed just before it, at its score,
    when the query does not name the companion's qualifier (and the main is not
    already above)."""
    known = ukb_fields(release)
    found = known.companions
    asked = set(tokenize(query))
    by_field = {fields[h.docno][0]: h for h in hits if h.docno in fields}
    placed: list[Hit] = []
    listed: set[int] = set()
    for hit in hits:
        link = found.main_of.get(fields[hit.docno][0]) if hit.docno in fields else None
        if link is not None and not set(tokenize(link[1])) <= asked:
            main = by_field.get(link[0])
            if main is None and (docno := known.docno_of.get(link[0])) is not None:
                main = candidates.get(docno) or Hit(docno)
            if main is not None and main.docno not in listed:
                placed.append(replace(main, score=hit.score, prior=MAIN_FIELD))
                listed.add(main.docno)
        if hit.docno not in listed:
            placed.append(hit)
            listed.add(hit.docno)
    return placed


def order_equal_titles(hits: list[Hit], fields: dict[int, tuple[int, str, int]]) -> list[Hit]:
    """Fields of one title in the places they hold, most participants first; each place
    keeps its score. Exact matches stay where they are."""
    places: dict[str, list[int]] = defaultdict(list)
    for position, hit in enumerate(hits):
        if not hit.exact and hit.docno in fields:
            places[" ".join(fields[hit.docno][1].lower().split())].append(position)
    ordered = list(hits)
    for positions in places.values():
        if len(positions) < 2:
            continue
        group = sorted((hits[p] for p in positions), key=lambda h: -fields[h.docno][2])
        for position, hit in zip(positions, group, strict=True):
            moved = hit is not hits[position]
            prior = EQUAL_TITLES if moved else hit.prior
            ordered[position] = replace(hit, score=hits[position].score, prior=prior)
    return ordered
