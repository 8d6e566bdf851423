"""The conventions every OMOP concept tool shares.

The tools read the CDM v5.4 vocabulary tables of the release (``omop_concept``,
``omop_concept_synonym``, ``omop_concept_relationship``, ``omop_concept_ancestor``,
``omop_domain``, ``omop_vocabulary``, ``omop_relationship``; SQL in :mod:`.queries`)
and the concept documents of ``search_doc`` (kind ``concept``, filter columns
``domain``, ``vocabulary``, ``standard_concept``, ``is_valid``; :mod:`.filters`).

* a concept is returned as :data:`CONCEPT_FIELDS` with its Athena page
  (:class:`.models.Concept`), ``standard_concept`` as a boolean (true only for ``S``;
  classification concepts ``C`` are not standard);
* a standard target of "Maps to" is a concept of the release with
  ``standard_concept = 'S'`` and no ``invalid_reason``, reached by a relationship row
  with no ``invalid_reason``; targets missing from the release are not reported (the
  mirror's subsets hold relationships to concepts they do not ship);
* a domain, vocabulary or relationship filter is checked against the release's ids,
  case-insensitively, and canonicalized (:mod:`.filters`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from metabundle.search.release import Release

MAX_CONCEPT_ID = 2**63 - 1
MAPS_TO = "Maps to"
IS_A = "Is a"
SELF = "self"

#: The fields of a concept in every result, in the contract's order.
CONCEPT_FIELDS = (
    "concept_id",
    "concept_name",
    "concept_code",
    "vocabulary_id",
    "domain_id",
    "concept_class_id",
    "standard_concept",
    "invalid_reason",
)
CONCEPT_COLUMNS = ", ".join(f"c.{name}" for name in CONCEPT_FIELDS)


ATHENA_TERMS = "https://athena.ohdsi.org/search-terms/terms/"


def athena_url(concept_id: int) -> str:
    """The concept's page on OHDSI Athena (any concept id, in this release or not)."""
    return f"{ATHENA_TERMS}{int(concept_id)}"


def athena_url_sql(column: str) -> str:
    """SQL for the Athena page of the concept id in ``column``, as ``athena_url``."""
    return f"'{ATHENA_TERMS}' || {column} AS athena_url"


def is_standard(row: dict[str, Any]) -> bool:
    return row["standard_concept"] == "S" and row["invalid_reason"] is None


# -- per-release caches -------------------------------------------------------------

_cache: weakref.WeakKeyDictionary[Release, dict[str, Any]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def cached(release: Release, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per opened release (releases are immutable)."""
    with _cache_lock:
        entry = _cache.setdefault(release, {})
        if key in entry:
            return entry[key]
    value = compute()
    with _cache_lock:
        return _cache[release].setdefault(key, value)
