"""What an All of Us release holds of the public Data Browser: every survey module,
question and answer its catalogue lists, physical measurement and EHR concept; the
questions of modules it does not list; and whether participant counts were read."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from metabundle.sources.aou.api import FROM_API
from metabundle.sources.aou.inputs import ANSWER_KEY_SPEC, PFHH_QA, read_csv_text
from metabundle.sources.base import CoverageContext, coverage_block, left_out

COUNTS_REMEDY = (
    "rebuild on a machine that reaches the Data Browser API "
    "(https://databrowser.researchallofus.org/api), without --upstream"
)


UNLISTED_REMEDY = (
    "none in this version: questions are read from survey_metadata.csv, which gives each "
    "its module, topic and Data Browser page"
)


def unlisted_questions(ctx: CoverageContext) -> tuple[int, int]:
    """(questions, answers) that the answer key and ``pfhh_qa_metadata.csv`` pair but
    whose question the release does not hold: questions of survey modules the Data
    Browser's ``survey_metadata.csv`` does not list (the COVID-19 surveys, the retired
    Family Health History). Both files are read by the parse step's own reader."""
    present = {f.key for f in ctx.snapshot.files}
    pairs = [
        read_csv_text(
            spec, ctx.snapshot.file(spec.key).path.read_text(encoding="utf-8-sig"), _ignore
        ).select(["question_concept_id", "answer_concept_id"])
        for spec in (ANSWER_KEY_SPEC, PFHH_QA)
        if spec.key in present
    ]
    if not pairs:
        return 0, 0
    ctx.con.register("paired_answers", pa.concat_tables(pairs))
    questions, answers = ctx.row(
        "SELECT count(DISTINCT question_concept_id), "
        "count(DISTINCT (question_concept_id, answer_concept_id)) FROM paired_answers "
        "WHERE CAST(question_concept_id AS VARCHAR) NOT IN "
        "(SELECT native_id FROM aou_item WHERE kind = 'question')"
    )
    return int(questions), int(answers)


def _ignore(_reason: str, _line: int | None) -> None:
    """Malformed records were reported (quarantined) by the parse step already."""


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Items by kind, the questions of unlisted modules, and the participant counts'
    status."""
    by_kind = ctx.counts_by("SELECT kind, count(*) FROM aou_item GROUP BY kind ORDER BY kind")
    counted = ctx.count("SELECT count(*) FROM aou_item WHERE participant_count IS NOT NULL")
    api = ctx.snapshot.details.get("api", {})
    gaps = []
    unlisted, unlisted_answers = unlisted_questions(ctx)
    if unlisted:
        gaps.append(
            left_out(
                f"{unlisted:,} survey questions and their {unlisted_answers:,} answers that "
                "the answer key pairs but survey_metadata.csv does not list (the COVID-19 "
                "surveys and the retired Family Health History, which the Data Browser "
                "keeps in other files)",
                UNLISTED_REMEDY,
                unlisted,
            )
        )
    if api.get("status") != FROM_API:
        gaps.append(
            left_out(
                "participant counts per item: the Data Browser API was not read "
                f"({api.get('status', 'unknown')})",
                COUNTS_REMEDY,
            )
        )
    total = sum(by_kind.values())
    summary = (
        f"every survey module, question and answer that the Data Browser's catalogue "
        f"(survey_metadata.csv) lists ({by_kind.get('question', 0):,} questions, "
        f"{by_kind.get('answer', 0):,} answers) "
        f"and {by_kind.get('ehr_concept', 0):,} EHR concepts; {total:,} items"
    )
    notes = [
        "EHR concepts are those of the OMOP vocabulary this release holds (see omop's coverage)."
    ]
    return coverage_block(
        selection="all",
        summary=summary,
        counts={"items": total, "items_with_participant_counts": counted, "by_kind": by_kind},
        left_out=gaps,
        notes=notes,
    )
