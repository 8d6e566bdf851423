"""GENERATED test data for the Imaging Data Commons indices that ``idc-index-data``
describes but does not ship, laid out like the upstream mirror.

Nothing here is hand-typed schema: every table is generated column by column from the
installed package's own ``<index>_schema.json`` (names, BigQuery types, repeated
modes), with synthetic values. Rows point at real series and patients of the
package's ``idc_index.parquet`` (a SEG index row is a real SEG series whose
``segmented_SeriesInstanceUID`` is a real CT series of the same study), so joins to
``idc_series`` are exercised on real keys. The values are generated, not IDC's.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import duckdb
import idc_index_data
import pyarrow as pa
import pyarrow.parquet as pq

from metabundle.sources.idc_indices import clinical_key, index_key

ROWS = 40
MODALITY = {
    "seg_index": "SEG",
    "rtstruct_index": "RTSTRUCT",
    "ct_index": "CT",
    "contrast_index": "CT",
    "volume_geometry_index": "CT",
    "mr_index": "MR",
    "pt_index": "PT",
    "sm_index": "SM",
    "sm_instance_index": "SM",
    "ann_index": "ANN",
    "ann_group_index": "ANN",
}
ANATOMY = (["Liver"], ["Kidney", "Liver"], ["Lung"], ["Spleen"])
STAINS = (["hematoxylin stain", "water soluble eosin stain"], ["Ki-67"])
SLICE_THICKNESS = (0.8, 1.5, 2.5, 5.0)
CLINICAL_TABLE = "generated_clinical"
STAGES = ("Stage I", "Stage II", "Stage III")
ARROW = {
    "STRING": pa.string(),
    "INTEGER": pa.int64(),
    "FLOAT": pa.float64(),
    "BOOLEAN": pa.bool_(),
}
VALUES_RECORD = pa.struct([("option_code", pa.string()), ("option_description", pa.string())])


def _schema(index: str) -> list[dict[str, str]]:
    return idc_index_data.INDEX_METADATA[index]["schema"]["columns"]


def _arrow_type(spec: dict[str, str]) -> pa.DataType:
    scalar = VALUES_RECORD if spec["type"] == "RECORD" else ARROW[spec["type"]]
    return pa.list_(scalar) if spec.get("mode") == "REPEATED" else scalar


def _synthetic(spec: dict[str, str], row: int) -> Any:
    """A generated value of the column's BigQuery type (lists for repeated columns)."""
    kind = spec["type"]
    if kind == "RECORD":
        return [{"option_code": str(row % 3), "option_description": f"option {row % 3}"}]
    value: Any = {
        "STRING": f"{spec['name']} {row % 3}",
        "INTEGER": row,
        "FLOAT": row * 0.5,
        "BOOLEAN": row % 2 == 0,
    }[kind]
    return [value] if spec.get("mode") == "REPEATED" else value


def _series(con: duckdb.DuckDBPyConnection, modality: str, n: int) -> list[dict[str, Any]]:
    rows = con.execute(
        "SELECT SeriesInstanceUID, StudyInstanceUID, PatientID, collection_id "
        "FROM read_parquet(?) WHERE Modality = ? ORDER BY SeriesInstanceUID LIMIT ?",
        [str(idc_index_data.IDC_INDEX_PARQUET_FILEPATH), modality, n],
    ).fetchall()
    return [dict(zip(("series", "study", "patient", "collection"), r, strict=True)) for r in rows]


def _ct_of_study(con: duckdb.DuckDBPyConnection, studies: list[str]) -> dict[str, str]:
    rows = con.execute(
        "SELECT StudyInstanceUID, min(SeriesInstanceUID) FROM read_parquet(?) "
        "WHERE Modality = 'CT' AND StudyInstanceUID IN (SELECT unnest(?)) GROUP BY 1",
        [str(idc_index_data.IDC_INDEX_PARQUET_FILEPATH), studies],
    ).fetchall()
    return dict(rows)


def _overrides(index: str, con: duckdb.DuckDBPyConnection, series: list[dict[str, Any]]) -> dict:
    """Column -> row -> value where a generic value would make no join or question."""
    values: dict[str, Callable[[int], Any]] = {
        "SeriesInstanceUID": lambda i: series[i % len(series)]["series"],
        "SegmentedPropertyType_CodeMeanings": lambda i: ANATOMY[i % len(ANATOMY)],
        "staining_usingSubstance_CodeMeaning": lambda i: STAINS[i % len(STAINS)],
        "ObjectiveLensPower": lambda i: (20, 40)[i % 2],
        "SliceThickness": lambda i: SLICE_THICKNESS[i % len(SLICE_THICKNESS)],
        "SOPInstanceUID": lambda i: f"2.25.{i + 1}",
        "AnnotationGroupUID": lambda i: f"2.25.{1000 + i}",
    }
    if index == "seg_index":
        sources = _ct_of_study(con, [s["study"] for s in series])
        values["segmented_SeriesInstanceUID"] = lambda i: sources.get(
            series[i % len(series)]["study"]
        )
    return values


def generated_index(index: str, con: duckdb.DuckDBPyConnection) -> pa.Table:
    """``ROWS`` rows of ``index`` with the package schema's columns and types."""
    series = _series(con, MODALITY[index], ROWS)
    overrides = _overrides(index, con, series)
    rows = len(series) if index != "sm_instance_index" else ROWS
    columns = {}
    fields = []
    for spec in _schema(index):
        make = overrides.get(spec["name"], lambda i, s=spec: _synthetic(s, i))
        columns[spec["name"]] = [make(i) for i in range(rows)]
        fields.append(pa.field(spec["name"], _arrow_type(spec)))
    return pa.table(columns, schema=pa.schema(fields))


def clinical_patients(con: duckdb.DuckDBPyConnection) -> tuple[str, list[str]]:
    """A real collection and ``ROWS`` of its real patients, for the clinical table."""
    collection = con.execute(
        "SELECT collection_id FROM read_parquet(?) WHERE Modality = 'CT' "
        "GROUP BY 1 HAVING count(DISTINCT PatientID) >= ? ORDER BY 1 LIMIT 1",
        [str(idc_index_data.IDC_INDEX_PARQUET_FILEPATH), ROWS],
    ).fetchone()[0]
    patients = con.execute(
        "SELECT DISTINCT PatientID FROM read_parquet(?) WHERE collection_id = ? ORDER BY 1 LIMIT ?",
        [str(idc_index_data.IDC_INDEX_PARQUET_FILEPATH), collection, ROWS],
    ).fetchall()
    return collection, [p[0] for p in patients]


def generated_clinical(con: duckdb.DuckDBPyConnection) -> tuple[pa.Table, pa.Table]:
    """clinical_index (from its schema) describing one generated clinical table, and
    that table: patient, stage and survival days of real patients of a collection."""
    collection, patients = clinical_patients(con)
    table = pa.table(
        {
            "dicom_patient_id": patients,
            "stage": [STAGES[i % len(STAGES)] for i in range(len(patients))],
            "survival_days": [100 * (i + 1) for i in range(len(patients))],
        }
    )
    described = {
        "collection_id": collection,
        "table_name": f"bigquery-public-data.idc_v25_clinical.{CLINICAL_TABLE}",
        "short_table_name": CLINICAL_TABLE,
    }
    index_rows: dict[str, list[Any]] = {spec["name"]: [] for spec in _schema("clinical_index")}
    for column in table.column_names:
        values = sorted({str(v) for v in table[column].to_pylist()})[:5]
        row = {
            **described,
            "column": column,
            "column_label": column.replace("_", " "),
            "values": [{"option_code": v, "option_description": None} for v in values],
        }
        for name in index_rows:
            index_rows[name].append(row[name])
    fields = [pa.field(s["name"], _arrow_type(s)) for s in _schema("clinical_index")]
    return pa.table(index_rows, schema=pa.schema(fields)), table


def write_generated_mirror(root: Path, *, omit: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write every unshipped index (but ``omit``) and the clinical table under
    ``root`` in the mirror layout; returns the written files by index name."""
    version = package_version("idc-index-data")
    written: dict[str, Path] = {}
    with duckdb.connect() as con:
        idc_version = "v" + str(
            con.execute(
                "SELECT max(idc_version) FROM read_parquet(?)",
                [str(idc_index_data.INDEX_METADATA["version_metadata_index"]["parquet_filepath"])],
            ).fetchone()[0]
        )
        for index in sorted(MODALITY):
            if index not in omit:
                written[index] = _write(
                    root / index_key(index, version), generated_index(index, con)
                )
        clinical_index, clinical_table = generated_clinical(con)
    written["clinical_index"] = _write(root / index_key("clinical_index", version), clinical_index)
    written[CLINICAL_TABLE] = _write(
        root / clinical_key(idc_version, CLINICAL_TABLE), clinical_table
    )
    return written


def _write(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path
