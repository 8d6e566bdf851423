"""Published meanings of the numeric property codes in Showcase schemas 1 and 2.

The Showcase downloads carry codes only; their meanings are published on the Showcase
help pages (``https://biobank.ndph.ox.ac.uk/ukb/help.cgi?cd=<topic>``). Where a help page
lists names without codes, the code assignment below is the one transcribed by the
``ukbschemas`` R package (bjcairns/ukbschemas, ``data-raw/aux-tables.R``), and it was
checked against the labelled columns of the retired ``Data_Dictionary_Showcase.csv``:
joining the mirror's schema 1 with that dictionary by field id, each code below is the
majority label of its fields (for example value_type 31 is "Continuous" for all 2,773
shared fields, strata 2 is "Auxiliary" for 475 of 506). Codes without a published
meaning (``availability``, ``private``, the costing tiers) are kept as published with
no label, and so are codes the pages name only with made-up numbers (value types
"Binary object" and "Records", stability "Obsolete").
"""

from __future__ import annotations

from collections.abc import Mapping

# help.cgi?cd=value_type lists the value types; codes per ukbschemas VALUE_TYPES. The same
# codes are used by schema 1's base_type and schema 2's coded_as (the encoding's type).
VALUE_TYPES: Mapping[int, str] = {
    11: "Integer",
    21: "Categorical (single)",
    22: "Categorical (multiple)",
    31: "Continuous",
    41: "Text",
    51: "Date",
    61: "Time",
    101: "Compound",
}

# help.cgi?cd=stability: Complete, Updateable, Accruing, Ongoing (codes 0-3 per ukbschemas).
STABILITY: Mapping[int, str] = {0: "Complete", 1: "Updateable", 2: "Accruing", 3: "Ongoing"}

# help.cgi?cd=item_type: Data, Samples, Bulk, Records.
ITEM_TYPES: Mapping[int, str] = {0: "Data", 10: "Samples", 20: "Bulk", 30: "Records"}

# help.cgi?cd=strata: Primary, Supporting, Auxiliary, Derived.
STRATA: Mapping[int, str] = {0: "Primary", 1: "Supporting", 2: "Auxiliary", 3: "Derived"}

# help.cgi?cd=sexed.
SEXED: Mapping[int, str] = {0: "Both sexes", 1: "Males only", 2: "Females only"}

# help.cgi?cd=instances names three kinds in this order: Singular (one instance only),
# Defined (instance n means the same occasion for everyone) and Variable (no
# correspondence between participants). Schema 1 uses 0/1/2; 2 is set exactly on the
# registry fields whose instances are per-participant events (death, cancer registry).
INSTANCED: Mapping[int, str] = {0: "Singular", 1: "Defined", 2: "Variable"}

# The array flag: 1 when the field holds an array of values per instance.
ARRAYED: Mapping[int, str] = {0: "No", 1: "Yes"}

# help.cgi?cd=data_coding: a data-coding is Flat (a simple list) or a Tree; schema 2 codes
# these 1 and 2 (the tree codings are exactly those whose codown files carry node_id).
STRUCTURE: Mapping[int, str] = {1: "Flat", 2: "Tree"}

LOOKUPS: Mapping[str, Mapping[int, str]] = {
    "value_type": VALUE_TYPES,
    "stability": STABILITY,
    "item_type": ITEM_TYPES,
    "strata": STRATA,
    "sexed": SEXED,
    "instanced": INSTANCED,
    "arrayed": ARRAYED,
    "structure": STRUCTURE,
}
"""Each lookup by name; ``base_type`` and ``coded_as`` use ``value_type``."""


def lookup_rows() -> list[tuple[str, int, str]]:
    """Every (lookup name, code, meaning), sorted, for loading into SQL."""
    return sorted(
        (name, code, label) for name, table in LOOKUPS.items() for code, label in table.items()
    )
