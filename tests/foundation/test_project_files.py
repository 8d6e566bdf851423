"""The files that say how metabundle may be used and cited agree with the code."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from metabundle import __version__
from metabundle.index.embed.minilm import MODEL_SHA256, TOKENIZER_FILE, TOKENIZER_SHA256
from metabundle.schemas.sources import DESCRIPTORS

REPO = Path(__file__).resolve().parents[2]


def test_the_licence_is_the_one_pyproject_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_the_notice_names_each_sources_terms_and_each_model_file() -> None:
    notice = (REPO / "NOTICE").read_text()
    flat = " ".join(notice.split())
    for source in DESCRIPTORS.values():
        assert source.title in notice, source.name
        assert " ".join(source.license.split()) in flat, source.name
        assert source.license_url in notice, source.name
    assert TOKENIZER_FILE.relative_to(REPO).as_posix() in notice
    assert TOKENIZER_SHA256 in notice and MODEL_SHA256 in notice


def test_the_citation_file_names_this_version_and_every_source() -> None:
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == __version__
    assert len(citation["references"]) == len(DESCRIPTORS)
