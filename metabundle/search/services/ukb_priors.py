"""Priors of UK Biobank field search, mined from the Showcase schema itself.

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
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from metabundle.index.tokenizer import tokenize
from metabundle.search.release import Release

GROUP_MIN = 3
QUALIFIER_MIN = 10
MAX_QUALIFIER_WORDS = 3
PRIOR = "main_field_of_companion"

Item = dict[str, Any]


@dataclass(frozen=True)
class Companions:
    """Companion field id → (its main field id, the qualifier its title adds)."""

    main_of: dict[int, tuple[int, str]]


_CACHE: weakref.WeakKeyDictionary[Release, Companions] = weakref.WeakKeyDictionary()
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
    families: dict[str, set[str]] = defaultdict(set)
    for _field_id, title, _category, _participants in fields:
        for prefix, suffix in _suffixes(title.lower(), titles):
            families[prefix].add(suffix)
    counts = Counter(
        s for suffixes in families.values() if len(suffixes) >= GROUP_MIN for s in suffixes
    )
    qualifiers = {suffix for suffix, count in counts.items() if count >= QUALIFIER_MIN}
    main_of: dict[int, tuple[int, str]] = {}
    for field_id, title, _category, _participants in fields:
        for prefix, suffix in _suffixes(title.lower(), titles):
            if suffix in qualifiers:
                mains = sorted(
                    by_title[prefix],
                    key=lambda m, near=field_id: (abs(m[0] - near), -(m[2] or 0), m[0]),
                )
                main_of[field_id] = (mains[0][0], suffix)
                break
    return Companions(main_of)


def companions(release: Release) -> Companions:
    """The release's companion fields, mined once per opened release."""
    with _LOCK:
        found = _CACHE.get(release)
    if found is None:
        rows = release.query(
            "SELECT field_id, title, main_category, num_participants FROM ukb_field "
            "ORDER BY field_id"
        )
        found = mine_companions([(int(r[0]), r[1], r[2], r[3]) for r in rows])
        with _LOCK:
            _CACHE[release] = found
    return found


def place_main_fields(
    items: list[Item], query: str, found: Companions, item_of: Callable[[int], Item | None]
) -> list[Item]:
    """``items`` with each companion's main field placed just before it when the query
    does not name the companion's qualifier (and the main is not already above)."""
    asked = set(tokenize(query))
    placed: list[Item] = []
    listed: set[int] = set()
    for item in items:
        link = found.main_of.get(item["id"])
        if link is not None and not set(tokenize(link[1])) <= asked:
            main_id = link[0]
            if main_id not in listed:
                main = next((i for i in items if i["id"] == main_id), None) or item_of(main_id)
                if main is not None:
                    scores = {**item["scores"], "prior": PRIOR}
                    placed.append({**main, "scores": scores})
                    listed.add(main_id)
        if item["id"] not in listed:
            placed.append(item)
            listed.add(item["id"])
    return placed


def order_equal_titles(items: list[Item]) -> list[Item]:
    """Fields of one title in the places they hold, most participants first; each place
    keeps its score. Exact matches stay where they are."""
    places: dict[str, list[int]] = defaultdict(list)
    for position, item in enumerate(items):
        if not item["scores"].get("exact_match"):
            places[" ".join(item["title"].lower().split())].append(position)
    ordered = list(items)
    for positions in places.values():
        if len(positions) < 2:
            continue
        group = sorted((items[p] for p in positions), key=lambda i: -(i["participants"] or 0))
        for position, item in zip(positions, group, strict=True):
            ordered[position] = {**item, "scores": items[position]["scores"]}
    return ordered
