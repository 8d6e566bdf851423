"""The UK Biobank files we download: public URLs, mirror paths and expected columns.

Showcase schemas are served by ``scdown.cgi?fmt=txt&id=<N>`` (mirror path
``ukb/scdown/<N>.txt``); schema 1 holds the data-fields, 2 the encodings, 3 the
category titles and 13 the category tree. Coding values come from ``codown.cgi?id=<id>``
(mirror ``ukb/codown/<id>.tsv``). The retired data dictionary CSV is the only other
source of category titles (its per-field category paths).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SHOWCASE = "https://biobank.ndph.ox.ac.uk/ukb"
FIELD_URL = SHOWCASE + "/field.cgi?id="
ENCODING_URL = SHOWCASE + "/coding.cgi?id="
CATEGORY_URL = SHOWCASE + "/label.cgi?id="
INSTANCING_URL = SHOWCASE + "/instance.cgi?id="

LEGACY_KEY = "ukb/legacy/Data_Dictionary_Showcase.csv"
LEGACY_URL = "https://biobank.ndph.ox.ac.uk/~bbdatan/Data_Dictionary_Showcase.csv"
LEGACY_COLUMNS = ("Path", "Category", "FieldID", "Field")

CODING_DIR = "ukb/codown"
CODING_FILE = re.compile(r"(\d+)\.tsv")


@dataclass(frozen=True)
class SchemaFile:
    """One Showcase schema download and the columns (with DuckDB types) we read."""

    schema_id: int
    columns: Mapping[str, str]

    @property
    def key(self) -> str:
        return f"ukb/scdown/{self.schema_id}.txt"

    @property
    def url(self) -> str:
        return f"{SHOWCASE}/scdown.cgi?fmt=txt&id={self.schema_id}"


_INT, _TEXT, _REAL, _TIME = "INTEGER", "VARCHAR", "DOUBLE", "TIMESTAMP"

FIELDS = SchemaFile(
    1,
    {
        "field_id": _INT,
        "title": _TEXT,
        "availability": _INT,
        "stability": _INT,
        "private": _INT,
        "value_type": _INT,
        "base_type": _INT,
        "item_type": _INT,
        "strata": _INT,
        "instanced": _INT,
        "arrayed": _INT,
        "sexed": _INT,
        "units": _TEXT,
        "main_category": _INT,
        "encoding_id": _INT,
        "instance_id": _INT,
        "instance_min": _INT,
        "instance_max": _INT,
        "array_min": _INT,
        "array_max": _INT,
        "notes": _TEXT,
        "debut": _TIME,
        "version": _TIME,
        "num_participants": "BIGINT",
        "item_count": "BIGINT",
        "showcase_order": _REAL,
        "cost_do": _INT,
        "cost_on": _INT,
        "cost_sc": _INT,
    },
)

ENCODINGS = SchemaFile(
    2,
    {
        "encoding_id": _INT,
        "title": _TEXT,
        "availability": _INT,
        "coded_as": _INT,
        "structure": _INT,
        "num_members": "BIGINT",
        "descript": _TEXT,
    },
)

CATEGORIES = SchemaFile(
    3,
    {
        "category_id": _INT,
        "title": _TEXT,
        "availability": _INT,
        "group_type": _INT,
        "descript": _TEXT,
        "notes": _TEXT,
    },
)

CATEGORY_TREE = SchemaFile(13, {"parent_id": _INT, "child_id": _INT, "showcase_order": _REAL})

FLAT_CODING_COLUMNS: Mapping[str, str] = {"coding": _TEXT, "meaning": _TEXT}
TREE_CODING_COLUMNS: Mapping[str, str] = {
    **FLAT_CODING_COLUMNS,
    "node_id": _INT,
    "parent_id": _INT,
    "selectable": _TEXT,
}
TREE_ONLY_COLUMNS = frozenset(TREE_CODING_COLUMNS) - frozenset(FLAT_CODING_COLUMNS)


def coding_key(encoding_id: int) -> str:
    return f"{CODING_DIR}/{encoding_id}.tsv"


def coding_url(encoding_id: int) -> str:
    return f"{SHOWCASE}/codown.cgi?id={encoding_id}"


def coding_id_of(key: str) -> int | None:
    """The encoding id of a coding file's key (``ukb/codown/19.tsv`` → 19), else None."""
    folder, _, name = key.rpartition("/")
    match = CODING_FILE.fullmatch(name)
    return int(match.group(1)) if folder == CODING_DIR and match else None
