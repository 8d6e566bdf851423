"""All of Us source: the real mirror over loopback, through fetch_source/parse_source.

The OMOP tables aou depends on are staged by the test from the real Eunomia (and
Synthea) vocabulary subsets of the mirror, in the shape the omop source writes.
Expected values are computed here from the mirror's CSVs with the standard library,
independently of the parser.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import random
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metabundle.config import BuildSettings
from metabundle.errors import ParseError
from metabundle.release.writer import source_coverage
from metabundle.schemas import get_table
from metabundle.sources.aou import SOURCE
from metabundle.sources.aou.inputs import ANSWER_KEY_SPEC, SURVEY_METADATA, read_csv_text
from metabundle.sources.base import RawSnapshot, SearchDocContext
from metabundle.sources.registry import source_names, with_dependencies
from metabundle.sources.steps import StagedSource, fetch_source, parse_source
from metabundle.staging import StagedTable
from tests.support.servers import FaultyHandler, faulty_handler, serve_directory

TABLES = ("aou_item", "aou_item_identifier", "aou_item_edge", "aou_item_link", "aou_unit")
EHR_DOMAINS = {"Condition", "Drug", "Measurement", "Procedure"}
DATA_BROWSER = "https://databrowser.researchallofus.org/"


# -- fixtures ----------------------------------------------------------------------------


def stage_omop(vocabulary: Path, out: Path) -> StagedSource:
    """omop_concept and omop_concept_relationship from an Athena-dialect folder."""
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()

    def athena(name: str) -> str:
        return (
            f"read_csv('{vocabulary / name}', delim='\t', quote='', header=true, all_varchar=true)"
        )

    dates = (
        "strptime(VALID_START_DATE, '%Y%m%d')::DATE AS valid_start_date, "
        "strptime(VALID_END_DATE, '%Y%m%d')::DATE AS valid_end_date, "
        "nullif(INVALID_REASON, '') AS invalid_reason"
    )
    queries = {
        "omop_concept": f"""
            SELECT CAST(CONCEPT_ID AS BIGINT) AS concept_id, CONCEPT_NAME AS concept_name,
                   DOMAIN_ID AS domain_id, VOCABULARY_ID AS vocabulary_id,
                   CONCEPT_CLASS_ID AS concept_class_id,
                   nullif(STANDARD_CONCEPT, '') AS standard_concept,
                   CONCEPT_CODE AS concept_code, {dates}
            FROM {athena("CONCEPT.csv")}""",
        "omop_concept_relationship": f"""
            SELECT CAST(CONCEPT_ID_1 AS BIGINT) AS concept_id_1,
                   CAST(CONCEPT_ID_2 AS BIGINT) AS concept_id_2,
                   RELATIONSHIP_ID AS relationship_id, {dates}
            FROM {athena("CONCEPT_RELATIONSHIP.csv")}""",
    }
    tables = {}
    for name, query in queries.items():
        path = out / f"{name}.parquet"
        con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet)")
        tables[name] = StagedTable(name, path, pq.ParquetFile(path).metadata.num_rows)
    key = hashlib.sha256(str(vocabulary).encode()).hexdigest()[:24]
    snapshot = RawSnapshot("omop", f"test fixture {vocabulary.name}", ())
    return StagedSource("omop", key, False, snapshot, tables)


@pytest.fixture(scope="session")
def omop(upstream_dir, tmp_path_factory) -> StagedSource:
    vocabulary = upstream_dir / "omop" / "eunomia_gibleed"
    return stage_omop(vocabulary, tmp_path_factory.mktemp("omop_eunomia"))


def settings_for(url: str, root: Path) -> BuildSettings:
    return BuildSettings.load(
        out=root / "out",
        cache=root / "cache",
        sources=("aou",),
        upstream=url,
        http_attempts=1,
    )


class Run:
    """One fetch and parse of the aou source, with what it reported."""

    def __init__(self, url: str, root: Path, omop: StagedSource) -> None:
        self.messages: list[str] = []
        self._rows: dict[str, list[dict]] = {}
        self.settings = settings_for(url, root)
        self.snapshot = fetch_source("aou", self.settings, self.messages.append)
        self.staged = parse_source(
            "aou", self.snapshot, self.settings, self.messages.append, {"omop": omop}
        )

    def table(self, name: str) -> pa.Table:
        return pq.read_table(self.staged.tables[name].path)

    def rows(self, name: str) -> list[dict]:
        if name not in self._rows:
            self._rows[name] = self.table(name).to_pylist()
        return self._rows[name]


@pytest.fixture(scope="session")
def run(mirror_url, tmp_path_factory, omop) -> Run:
    return Run(mirror_url, tmp_path_factory.mktemp("aou"), omop)


@pytest.fixture(scope="session")
def items(run) -> list[dict]:
    return run.rows("aou_item")


@pytest.fixture(scope="session")
def by_id(items) -> dict[str, dict]:
    return {item["result_id"]: item for item in items}


def mirror_csv(upstream_dir: Path, relative: str) -> list[dict[str, str]]:
    with (upstream_dir / relative).open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


@contextlib.contextmanager
def served_copy(upstream_dir: Path, root: Path, change: Callable[[Path], None]) -> Iterator[str]:
    """A copy of the mirror's aou folder, changed by ``change``, served on loopback."""
    shutil.copytree(upstream_dir / "aou", root / "aou")
    change(root)
    with serve_directory(root) as url:
        yield url


# -- survey ------------------------------------------------------------------------------


def test_every_survey_question_is_an_item(upstream_dir, items):
    rows = mirror_csv(upstream_dir, "aou/data-browser/csv/survey_metadata.csv")
    expected = {int(r["concept_id"]) for r in rows if r["type"] == "QUESTION"}
    questions = [i for i in items if i["kind"] == "question"]
    assert {q["concept_id"] for q in questions} == expected
    assert len(questions) == len(expected) == 951
    assert all(q["is_variable"] and q["variable_type"] == "survey" for q in questions)


def expected_answers(upstream_dir: Path) -> dict[int, set[str]]:
    """Answer keys per question: (question, answer) concept pairs of the answer key and
    the PFHH map, else the answer labels stored with the question."""
    questions = mirror_csv(upstream_dir, "aou/data-browser/csv/survey_metadata.csv")
    asked = {int(r["concept_id"]) for r in questions if r["type"] == "QUESTION"}
    answers: dict[int, set[str]] = {q: set() for q in asked}
    for relative in ("aou/omop2survey/survey_key.csv", "aou/data-browser/csv/pfhh_qa_metadata.csv"):
        for r in mirror_csv(upstream_dir, relative):
            question = int(r["question_concept_id"])
            if question in asked:
                answers[question].add(f"{question}:{r['answer_concept_id']}")
    for r in questions:
        question = int(r["concept_id"])
        if r["type"] == "QUESTION" and not any(":label:" not in a for a in answers[question]):
            for label in (r["question_string"] or "").split("|"):
                if label.strip() and label.strip() != "NULL":
                    answers[question].add(f"{question}:label:{label.strip()}")
    return answers


def test_every_question_has_its_answers(upstream_dir, items, by_id):
    expected = expected_answers(upstream_dir)
    found: dict[int, set[str]] = {q: set() for q in expected}
    for item in items:
        if item["kind"] == "answer":
            parent = by_id[item["parent_result_id"]]
            assert parent["kind"] == "question"
            assert item["search_role"] == "support" and not item["is_variable"]
            found[parent["concept_id"]].add(item["native_id"])
    assert found == expected
    assert all(found.values())
    questions = [i for i in items if i["kind"] == "question"]
    assert all(q["child_count"] == len(expected[q["concept_id"]]) for q in questions)


def test_answers_are_edges_in_order(run, by_id):
    edges = [e for e in run.rows("aou_item_edge") if e["edge_kind"] == "has_answer"]
    answers = [i for i in by_id.values() if i["kind"] == "answer"]
    assert len(edges) == len(answers)
    for edge in edges:
        answer = by_id[edge["to_result_id"]]
        assert answer["parent_result_id"] == edge["from_result_id"]
        assert edge["position"] == answer["position"]


def resolve(run: Run, identifier: str) -> list[str]:
    return sorted(
        row["result_id"]
        for row in run.rows("aou_item_identifier")
        if row["normalized"] == identifier.lower()
    )


def test_question_code_resolves_to_its_question(upstream_dir, run, by_id):
    rows = mirror_csv(upstream_dir, "aou/data-browser/csv/survey_metadata.csv")
    assert any(r["concept_code"] == "Smoking_100CigsLifetime" for r in rows)
    [result_id] = resolve(run, "Smoking_100CigsLifetime")
    question = by_id[result_id]
    assert (question["kind"], question["concept_id"]) == ("question", 1585857)
    assert question["survey_name"] == "Lifestyle"
    assert question["canonical_url"] == DATA_BROWSER + "survey/lifestyle"
    answers = sorted(
        (a["concept_id"], a["title"], a["answer_value"])
        for a in by_id.values()
        if a["parent_result_id"] == result_id
    )
    assert answers == [(1585858, "Yes", 1), (1585859, "No", 0)]
    assert resolve(run, "1585857") == [result_id]


def test_branching_follows_the_question_paths(run, by_id):
    [drinks] = [i for i in by_id.values() if i["concept_code"] == "Alcohol_AverageDailyDrinkCount"]
    assert len(drinks["question_paths"]) == 4
    branches = [
        e
        for e in run.rows("aou_item_edge")
        if e["edge_kind"] == "branches_to" and e["to_result_id"] == drinks["result_id"]
    ]
    parents = {by_id[e["from_result_id"]]["concept_id"] for e in branches}
    assert parents == {1586201}
    assert sorted(e["qualifier"] for e in branches) == ["1586203", "1586204", "1586205", "1586206"]
    assert " > " in drinks["question_path_text"]


def test_repaired_paths_are_reported(run, by_id):
    assert any("repaired question paths" in m and "2831" in m for m in run.messages)
    [question] = [i for i in by_id.values() if i["concept_id"] == 1740595]
    assert question["question_paths"] == ["836784.1740948.1740595"]


def test_topics_group_pfhh_questions(run, by_id):
    topics = [i for i in by_id.values() if i["kind"] == "survey_topic"]
    assert topics and all(not t["is_variable"] for t in topics)
    members = [e for e in run.rows("aou_item_edge") if e["edge_kind"] == "topic_has_question"]
    for edge in members:
        topic, question = by_id[edge["from_result_id"]], by_id[edge["to_result_id"]]
        assert question["topic"] == topic["title"]
        assert question["survey_concept_id"] == topic["survey_concept_id"]
    assert sum(t["child_count"] for t in topics) == len(members)


def test_modules_are_navigation_with_their_pages(upstream_dir, items):
    modules = {m["concept_id"]: m for m in items if m["kind"] == "survey_module"}
    listed = mirror_csv(upstream_dir, "aou/data-browser/csv/survey_module.csv")
    assert set(modules) == {int(r["concept_id"]) for r in listed}
    assert all(m["search_role"] == "navigation" and not m["is_variable"] for m in modules.values())
    assert modules[43528895]["canonical_url"] == (
        DATA_BROWSER + "survey/health-care-access-and-utilization"
    )
    assert modules[1586134]["canonical_url"] == DATA_BROWSER + "survey/the-basics"
    questions = [i for i in items if i["kind"] == "question"]
    assert modules[1585855]["child_count"] == sum(
        1 for q in questions if q["survey_concept_id"] == 1585855
    )


# -- ids ---------------------------------------------------------------------------------


def test_result_ids_are_opaque_content_hashes(items):
    for item in items:
        digest = hashlib.sha256(f"{item['kind']}\0{item['native_id']}".encode()).hexdigest()
        assert item["result_id"] == f"aou.doc.{digest[:24]}"
    assert len({i["result_id"] for i in items}) == len(items)
    assert all(re.fullmatch(r"aou\.doc\.[0-9a-f]{24}", i["result_id"]) for i in items)


def test_a_second_parse_is_identical(run, mirror_url, tmp_path, omop):
    again = Run(mirror_url, tmp_path, omop)
    assert not again.staged.reused
    for name in TABLES:
        assert again.table(name).equals(run.table(name)), name


def shuffle_csv_rows(path: Path, seed: int) -> None:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    random.Random(seed).shuffle(rows)
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])


def test_row_order_does_not_change_ids_or_tables(upstream_dir, run, tmp_path, omop):
    def shuffle(root: Path) -> None:
        for seed, path in enumerate(sorted((root / "aou").rglob("*.csv"))):
            shuffle_csv_rows(path, seed)

    with served_copy(upstream_dir, tmp_path / "mirror", shuffle) as url:
        shuffled = Run(url, tmp_path, omop)
    assert shuffled.snapshot.inputs_sha256 != run.snapshot.inputs_sha256
    for name in TABLES:
        assert shuffled.table(name).equals(run.table(name)), name


# -- counts ------------------------------------------------------------------------------


def test_counts_are_null_and_explained_offline(run, items):
    assert run.snapshot.details["api"] == {"status": "unavailable_offline"}
    assert all(i["participant_count"] is None for i in items)
    assert {i["count_status"] for i in items} == {"unavailable_offline"}


def test_an_unreachable_api_is_said_so(mirror_url, tmp_path, omop, monkeypatch):
    monkeypatch.setenv("METABUNDLE_AOU_API", f"{mirror_url}/no-such-api")
    unreachable = Run(mirror_url, tmp_path, omop)
    assert unreachable.snapshot.details["api"]["status"] == "api_unreachable"
    assert any("not reachable" in m for m in unreachable.messages)
    statuses = {i["count_status"] for i in unreachable.rows("aou_item")}
    assert statuses == {"api_unreachable"}


def api_responses(upstream_dir: Path) -> dict[str, object]:
    """Responses in the shapes public-api.yaml declares, built from the mirror's own
    modules, domains and top-level questions: the API is the one upstream we cannot
    reach offline, so this loopback stand-in is how the counts path is exercised."""
    csv_dir = "aou/data-browser/csv"
    modules = mirror_csv(upstream_dir, f"{csv_dir}/survey_module.csv")
    domains = mirror_csv(upstream_dir, f"{csv_dir}/domain_info.csv")
    rows = mirror_csv(upstream_dir, f"{csv_dir}/survey_metadata.csv")
    prefix = "/v1/databrowser"
    responses: dict[str, object] = {
        f"{prefix}/domain-totals": {
            "domainInfos": [
                {"name": d["name"], "description": "", "standardConceptCount": 0,
                 "allConceptCount": 0, "participantCount": 1000 + n}
                for n, d in enumerate(domains)
            ],
            "surveyModules": [
                {"conceptId": int(m["concept_id"]), "name": m["name"], "description": "",
                 "questionCount": 0, "participantCount": 2000 + n}
                for n, m in enumerate(modules)
            ],
        },
        f"{prefix}/cdrversion-used": {"cdrVersionId": "1", "name": "test", "creationTime": 0},
    }  # fmt: skip
    for module in modules:
        listed = [r for r in rows if r["survey_concept_id"] == module["concept_id"]]
        items = [
            {"conceptId": int(r["concept_id"]), "conceptName": r["concept_name"],
             "surveyName": r["survey_name"], "path": r["path"], "type": r["type"],
             "countValue": 20 * int(r["id"])}
            for r in listed if r["sub"] == "0"
        ]  # fmt: skip
        query = f"?survey_concept_id={module['concept_id']}"
        responses[f"{prefix}/survey-questions{query}"] = {"questions": {"items": items}}
    return responses


def test_counts_come_from_the_api_when_it_answers(
    upstream_dir, mirror_url, tmp_path, omop, monkeypatch
):
    responses = api_responses(upstream_dir)

    def answer(handler: FaultyHandler) -> bool:
        body = responses.get(handler.path)
        if body is None:
            return False
        payload = json.dumps(body).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        return True

    (tmp_path / "api").mkdir()
    with serve_directory(tmp_path / "api", faulty_handler(answer)) as api:
        monkeypatch.setenv("METABUNDLE_AOU_API", api)
        counted = Run(mirror_url, tmp_path, omop)
    assert counted.snapshot.details["api"]["status"] == "from_public_api"
    found = {(i["kind"], i["concept_id"] or i["domain"]): i for i in counted.rows("aou_item")}
    lifestyle = found[("survey_module", 1585855)]
    assert lifestyle["count_status"] == "from_public_api"
    assert lifestyle["count_source"] == "/v1/databrowser/domain-totals"
    assert found[("domain", "Condition")]["participant_count"] == 1000
    smoking = found[("question", 1585857)]
    assert (smoking["participant_count"], smoking["count_status"]) == (20 * 56, "from_public_api")
    sub_question = found[("question", 1586207)]
    assert (sub_question["participant_count"], sub_question["count_status"]) == (
        None,
        "not_collected",
    )
    ehr = [i for i in found.values() if i["kind"] == "ehr_concept"]
    assert {i["count_status"] for i in ehr} == {"not_collected"}


# -- EHR and physical measurements --------------------------------------------------------


def omop_concepts(omop: StagedSource) -> list[dict]:
    return pq.read_table(omop.tables["omop_concept"].path).to_pylist()


def test_ehr_items_come_from_the_omop_tables_with_roles(omop, items, by_id):
    role = {"S": "standard", "C": "classification", None: "source"}
    expected = {
        c["concept_id"]: role[c["standard_concept"]]
        for c in omop_concepts(omop)
        if c["domain_id"] in EHR_DOMAINS and c["invalid_reason"] is None
    }
    ehr = [i for i in items if i["kind"] == "ehr_concept"]
    assert {i["concept_id"]: i["ehr_role"] for i in ehr} == expected
    assert {i["domain"] for i in ehr} == EHR_DOMAINS
    assert {i["ehr_role"] for i in ehr} >= {"standard", "source"}
    for item in ehr:
        assert item["is_variable"] and item["variable_type"] == "ehr"
        domain = by_id[item["parent_result_id"]]
        assert (domain["kind"], domain["domain"]) == ("domain", item["domain"])
        assert item["canonical_url"].endswith(f"/{item['concept_id']}")


def test_omop_relationships_become_edges(omop, run, by_id):
    ehr = {i["concept_id"] for i in by_id.values() if i["kind"] == "ehr_concept"}
    relationships = pq.read_table(omop.tables["omop_concept_relationship"].path).to_pylist()
    expected = {
        (r["concept_id_1"], r["concept_id_2"], r["relationship_id"])
        for r in relationships
        if r["relationship_id"] in ("Maps to", "Subsumes")
        and r["invalid_reason"] is None
        and r["concept_id_1"] != r["concept_id_2"]
        and {r["concept_id_1"], r["concept_id_2"]} <= ehr
    }
    kinds = {"maps_to": "Maps to", "subsumes": "Subsumes"}
    edges = [e for e in run.rows("aou_item_edge") if e["edge_kind"] in kinds]
    ends = [(by_id[e["from_result_id"]], by_id[e["to_result_id"]], e["edge_kind"]) for e in edges]
    found = {
        (start["concept_id"], end["concept_id"], kinds[kind])
        for start, end, kind in ends
        if start["kind"] == "ehr_concept"
    }
    assert found == expected
    icd = [i for i in by_id.values() if i["vocabulary"] == "ICD10CM"]
    assert icd and all(i["ehr_role"] == "source" for i in icd)
    assert any(start["vocabulary"] == "ICD10CM" for start, _, _ in ends)


def test_physical_measurements_are_variables(run, items):
    measurements = {i["concept_id"]: i for i in items if i["kind"] == "physical_measurement"}
    assert len(measurements) == 9
    assert all(m["is_variable"] for m in measurements.values())
    [diastolic] = resolve(run, "loinc:8462-4")
    assert diastolic == measurements[903115]["result_id"]
    assert resolve(run, "height") == [measurements[903133]["result_id"]]


def test_with_the_omop_source_itself(mirror_url, tmp_path):
    """The real omop source's tables (all mirror vocabularies) feed the aou parse: every
    EHR role appears and physical measurements link to their LOINC concepts."""
    settings = settings_for(mirror_url, tmp_path)
    report: list[str] = []
    snapshot = fetch_source("omop", settings, report.append)
    omop = parse_source("omop", snapshot, settings, report.append)
    with_omop = Run(mirror_url, tmp_path, omop)
    found = {i["result_id"]: i for i in with_omop.rows("aou_item")}
    roles = {i["ehr_role"] for i in found.values() if i["kind"] == "ehr_concept"}
    assert roles == {"standard", "source", "classification"}
    [pm_id, ehr_id] = sorted(
        resolve(with_omop, "loinc:8462-4"),
        key=lambda r: found[r]["kind"] != "physical_measurement",
    )
    assert found[ehr_id]["concept_id"] == 3012888
    edges = {
        (e["from_result_id"], e["to_result_id"])
        for e in with_omop.rows("aou_item_edge")
        if e["edge_kind"] == "maps_to"
    }
    assert (pm_id, ehr_id) in edges


# -- structure ---------------------------------------------------------------------------


def test_only_questions_concepts_and_measurements_are_variables(items):
    variables = {"question", "ehr_concept", "physical_measurement"}
    for item in items:
        assert item["is_variable"] == (item["kind"] in variables)
        assert item["is_variable"] == (item["search_role"] == "variable")


def test_edges_links_and_parents_resolve(run, by_id):
    for edge in run.rows("aou_item_edge"):
        assert edge["from_result_id"] in by_id and edge["to_result_id"] in by_id
        assert edge["via_result_id"] is None or edge["via_result_id"] in by_id
    links = run.rows("aou_item_link")
    assert {link["result_id"] for link in links} == set(by_id)
    pages = {
        link["result_id"]: link["url"] for link in links if link["link_kind"] == "data_browser"
    }
    assert pages == {i["result_id"]: i["canonical_url"] for i in by_id.values()}
    assert all(url.startswith(DATA_BROWSER) for url in pages.values())
    for item in by_id.values():
        assert item["parent_result_id"] is None or item["parent_result_id"] in by_id


def test_keys_are_unique_and_required_columns_filled(run):
    for name in TABLES:
        table = get_table(name)
        rows = run.rows(name)
        assert len({tuple(row[c] for c in table.primary_key) for row in rows}) == len(rows), name
        required = [c.name for c in table.columns if not c.nullable]
        assert all(row[c] is not None for row in rows for c in required), name


def test_units_keep_every_mapping(upstream_dir, run):
    rows = mirror_csv(upstream_dir, "aou/data-browser/csv/unit_map.csv")
    expected = {(r["unit_source_value"], int(r["unit_concept_id"])) for r in rows}
    found = {(u["unit_source_value"], u["unit_concept_id"]) for u in run.rows("aou_unit")}
    assert found == expected


def test_search_docs_cover_every_item(run, items):
    con = duckdb.connect()
    tables = {name: staged.path for name, staged in run.staged.tables.items()}
    docs = SOURCE.search_docs(SearchDocContext(tables, con)).to_arrow_table().to_pylist()
    assert len(docs) == len(items)
    assert {d["entity_id"] for d in docs} == {i["result_id"] for i in items}
    for doc in docs:
        assert doc["doc_id"] == f"aou:{doc['kind']}:{doc['entity_id']}"
        assert all(i == i.lower() for i in doc["identifiers"])
    [smoking] = [d for d in docs if "smoking_100cigslifetime" in d["identifiers"]]
    assert "Answers: No; Yes" in smoking["body"]
    assert smoking["variable_type"] == "survey" and smoking["role"] is None
    ehr = [d for d in docs if d["kind"] == "ehr_concept"]
    assert {d["role"] for d in ehr} >= {"standard", "source"}


# -- inputs ------------------------------------------------------------------------------


def test_answer_key_is_optional(upstream_dir, tmp_path, omop):
    def drop_key(root: Path) -> None:
        shutil.rmtree(root / "aou" / "omop2survey")

    with served_copy(upstream_dir, tmp_path / "mirror", drop_key) as url:
        without = Run(url, tmp_path, omop)
    assert without.snapshot.details["answer_key"] == "absent"
    questions = [i for i in without.rows("aou_item") if i["kind"] == "question"]
    assert len(questions) == 951


def test_a_bad_value_is_quarantined_with_its_file_and_line(run, upstream_dir, tmp_path, omop):
    def corrupt(root: Path) -> None:
        path = root / "aou" / "data-browser" / "csv" / "survey_metadata.csv"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines[4] = lines[4].replace(lines[4].split(",")[1], "not-a-number", 1)
        path.write_text("".join(lines), encoding="utf-8")

    with served_copy(upstream_dir, tmp_path / "mirror", corrupt) as url:
        damaged = Run(url, tmp_path, omop)
    assert damaged.staged.quarantine == {
        SURVEY_METADATA.key: {
            "count": 1,
            "examples": [
                {"line": 5, "reason": "column concept_id has 'not-a-number', not an integer"}
            ],
        }
    }
    assert any(SURVEY_METADATA.key in message for message in damaged.messages)
    whole = {i["native_id"] for i in run.rows("aou_item")}
    question = {n for n in whole if n.split(":")[0] == "1586152"}  # line 5, and its answers
    assert len(question) > 1
    assert {i["native_id"] for i in damaged.rows("aou_item")} == whole - question


def answer_key_text(upstream_dir: Path) -> str:
    path = upstream_dir / ANSWER_KEY_SPEC.key
    return path.read_text(encoding="utf-8-sig")


def read_key(text: str) -> tuple[pa.Table, list[tuple[str, int]]]:
    """The answer key read from ``text``, and what it set aside."""
    set_aside: list[tuple[str, int]] = []
    table = read_csv_text(
        ANSWER_KEY_SPEC, text, lambda reason, line: set_aside.append((reason, line))
    )
    return table, set_aside


def test_a_short_record_is_set_aside_and_every_other_record_loads(upstream_dir):
    lines = answer_key_text(upstream_dir).splitlines(keepends=True)
    whole, nothing = read_key("".join(lines))
    assert nothing == []
    lines[29] = ",".join(lines[29].split(",")[:2]) + "\n"
    table, set_aside = read_key("".join(lines))
    assert set_aside == [("the record has 2 cells, the header 8", 30)]
    assert table.num_rows == whole.num_rows - 1


def test_a_file_cut_short_fails_naming_its_last_line(upstream_dir):
    text = answer_key_text(upstream_dir)
    cut = text[: text.index(",", len(text) // 2)]
    with pytest.raises(ParseError) as caught:
        read_key(cut)
    assert caught.value.line == cut.count("\n") + 1
    assert str(caught.value).startswith(
        f"aou: cannot parse {ANSWER_KEY_SPEC.key}, line {caught.value.line}: the file ends "
        "inside its last record, which is cut short (the record has "
    )


def test_a_short_last_record_with_its_line_break_is_set_aside(upstream_dir):
    """The answer key ends without a line break; one added after a short last record
    says the file is whole, so the record alone is malformed."""
    lines = answer_key_text(upstream_dir).splitlines(keepends=True)
    lines[-1] = ",".join(lines[-1].split(",")[:3]) + "\n"
    _, set_aside = read_key("".join(lines))
    assert set_aside == [("the record has 3 cells, the header 8", len(lines))]


def test_a_file_ending_inside_a_quoted_value_fails(upstream_dir):
    text = answer_key_text(upstream_dir)
    with pytest.raises(ParseError, match="the file ends inside a quoted value, cut short"):
        read_key(text + '\n1,2,"never closed')


def test_a_dropped_endpoint_is_an_error(upstream_dir, tmp_path, omop):
    def drop(root: Path) -> None:
        path = root / "aou" / "data-browser" / "public-api.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("/v1/databrowser/domain-totals:", "/v1/gone:"), "utf-8")

    with served_copy(upstream_dir, tmp_path / "mirror", drop) as url:
        settings = settings_for(url, tmp_path)
        snapshot = fetch_source("aou", settings, lambda _: None)
        with pytest.raises(ParseError, match="no longer declares /v1/databrowser/domain-totals"):
            parse_source("aou", snapshot, settings, lambda _: None, {"omop": omop})


def test_a_missing_column_is_an_error():
    text = "id,concept_id\n1,2\n"
    with pytest.raises(ParseError, match=r"survey_metadata\.csv, line 1: the header lacks"):
        read_csv_text(SURVEY_METADATA, text, lambda reason, line: pytest.fail(reason))


def test_aou_is_registered_and_ordered_after_omop():
    assert SOURCE.depends_on == ("omop",)
    names = source_names()
    assert names.index("aou") < names.index("omop")
    assert with_dependencies(("aou",)) == ("omop", "aou")
    everything = with_dependencies(names)
    assert everything.index("omop") < everything.index("aou")


def test_an_answer_the_key_failed_to_recode_keeps_its_own_words(upstream_dir, by_id):
    failed = {
        f"{r['question_concept_id']}:{r['answer_concept_id']}": r["answer"]
        for r in mirror_csv(upstream_dir, "aou/omop2survey/survey_key.csv")
        if r["answer_text"].startswith("Value error")
    }
    answers = {i["native_id"]: i for i in by_id.values() if i["kind"] == "answer"}
    held = failed.keys() & answers.keys()
    assert len(held) >= 20  # the mirror's key has 24 such rows
    for native_id in held:
        assert answers[native_id]["title"] == failed[native_id]
        assert answers[native_id]["answer_value"] is None
    assert not any(a["title"].startswith("Value error") for a in answers.values())


ANSWER_FILES = ("aou/omop2survey/survey_key.csv", "aou/data-browser/csv/pfhh_qa_metadata.csv")


def test_questions_the_catalogue_does_not_list_are_counted_as_left_out(upstream_dir, run):
    listed = {
        int(r["concept_id"])
        for r in mirror_csv(upstream_dir, "aou/data-browser/csv/survey_metadata.csv")
        if r["type"] == "QUESTION"
    }
    paired = {
        (int(r["question_concept_id"]), int(r["answer_concept_id"]))
        for relative in ANSWER_FILES
        for r in mirror_csv(upstream_dir, relative)
        if int(r["question_concept_id"]) not in listed
    }
    block = source_coverage(run.staged, "complete")
    (gap,) = [g for g in block["left_out"] if "survey_metadata.csv does not list" in g["what"]]
    assert gap["count"] == len({q for q, _ in paired}) > 200  # COPE alone has 217
    assert f"their {len(paired):,} answers" in gap["what"]
    assert block["complete"] is False and "survey_metadata.csv" in block["summary"]
