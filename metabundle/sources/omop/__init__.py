"""OMOP standardized vocabularies, from Athena vocabulary exports.

Getting an export
-----------------
The vocabularies are distributed by OHDSI Athena, which needs a (free) account
and, for licensed vocabularies such as CPT4 or MedDRA, an accepted licence:

1. Sign in at https://athena.ohdsi.org and open *Download*.
2. Tick the vocabularies you want (the default selection is a reasonable start),
   give the bundle a name and choose *Download vocabularies*.
3. Athena e-mails a link to a zip a while later; download it. It holds
   ``CONCEPT.csv``, ``CONCEPT_SYNONYM.csv``, ``CONCEPT_RELATIONSHIP.csv``,
   ``CONCEPT_ANCESTOR.csv``, ``VOCABULARY.csv``, ``DOMAIN.csv``,
   ``CONCEPT_CLASS.csv``, ``RELATIONSHIP.csv`` and ``DRUG_STRENGTH.csv``
   (tab-separated despite the name), plus ``cpt4.jar``, ``cpt.sh`` and a readme.
   If the bundle includes CPT4, unpack it and run ``./cpt.sh <UMLS API key>`` as
   the readme says; without that step CPT4 concepts are missing from CONCEPT.csv.
4. Build with ``metabundle build --sources omop --omop-vocab PATH`` where PATH is
   the zip or the folder it was unpacked into. Several paths may be given; their
   rows are merged and, for a key found in more than one, the first path wins.

Without ``--omop-vocab`` a mirror upstream supplies its ``omop/<name>/`` exports, and
a build against the public upstream reads the small GiBleed subset that OHDSI
publishes on GitHub (see :mod:`.exports`); either way the release's coverage block
says that it holds public vocabulary subsets, not the full vocabularies.

Modules: :mod:`.exports` (fetch: which exports), :mod:`.athena` (reading one file),
:mod:`.ingest` (parse: staging and merging), :mod:`.docs` (search documents).
"""

from __future__ import annotations

from metabundle.schemas.omop import LOOKUP_COPIES, OMOP
from metabundle.sources.base import FetchContext, RawSnapshot, SourceSpec
from metabundle.sources.omop.athena import TABLE_FILES
from metabundle.sources.omop.coverage import ATHENA_EXPORT, PUBLIC_SUBSETS, coverage
from metabundle.sources.omop.docs import search_docs
from metabundle.sources.omop.exports import EUNOMIA_BASE, choose_exports
from metabundle.sources.omop.ingest import MERGE_RULE, parse


def fetch(ctx: FetchContext) -> RawSnapshot:
    """Record the exports this build reads; the version is their vocabulary release."""
    exports = choose_exports(ctx)
    releases = [f"{e.name} {e.release}" for e in exports if e.release]
    return ctx.snapshot(
        upstream_version="; ".join(releases) or None,
        details={
            "exports": [e.to_json() for e in exports],
            "merge_rule": MERGE_RULE,
            "vocabulary": ATHENA_EXPORT if ctx.settings.omop_vocab else PUBLIC_SUBSETS,
        },
    )


SOURCE = SourceSpec(
    descriptor=OMOP,
    tables=(*(t.table.name for t in TABLE_FILES), *(c.name for c in LOOKUP_COPIES.values())),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    coverage=coverage,
    public_urls=lambda settings: () if settings.omop_vocab else (f"{EUNOMIA_BASE}/",),
    version="4",  # 2: malformed records are quarantined; 3: lookup copies; 4: codes as ids
)

__all__ = ["SOURCE"]
