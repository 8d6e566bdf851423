"""The acronym a study's description defines for the study itself (Schwartz–Hearst
long form that names the study), on descriptions as dbGaP's export writes them."""

from __future__ import annotations

from metabundle.index.tokenizer import tokenize
from metabundle.index.variants import long_form
from metabundle.search.services.dbgap.acronyms import (
    Described,
    defined_acronyms,
    study_acronyms,
)
from metabundle.search.services.dbgap.studies import content_terms


def terms(text: str) -> tuple[str, ...]:
    return content_terms(tokenize(text))


FRAMINGHAM = (
    "Cardiovascular disease (CVD) is the leading cause of death and serious illness in "
    "the United States. In 1948, the Framingham Heart Study (FHS) -- under the direction "
    "of the National Heart Institute -- embarked on an ambitious project."
)


def test_the_long_form_is_the_words_that_spell_the_short_form() -> None:
    assert long_form("FHS", "In 1948, the Framingham Heart Study") == "Framingham Heart Study"
    assert long_form("WHI", "The Women's Health Initiative") == "Women's Health Initiative"
    assert long_form("FHS", "under the direction of the National Institute") is None


def test_only_an_acronym_whose_long_form_names_the_study_counts() -> None:
    assert defined_acronyms("Framingham Cohort", FRAMINGHAM, terms) == ("FHS",)
    assert defined_acronyms("Genetics of Lupus", FRAMINGHAM, terms) == ()
    assert defined_acronyms("Framingham Cohort", None, terms) == ()


def test_a_short_form_of_more_than_two_families_is_a_topic() -> None:
    text = "A genome-wide association study (GWAS) of {}."
    studies = [
        Described(
            f"phs00000{i}.v1.p1",
            f"phs00000{i}",
            f"Genome-Wide Association Study of {d}",
            text.format(d),
        )
        for i, d in enumerate(("asthma", "lupus", "gout"), start=1)
    ]
    assert study_acronyms(studies, terms) == {}
    assert study_acronyms(studies[:2], terms) == {s.study_id: ("GWAS",) for s in studies[:2]}
    family = [Described(s.study_id, "phs000001", s.name, s.description) for s in studies]
    assert study_acronyms(family, terms) == {s.study_id: ("GWAS",) for s in family}
