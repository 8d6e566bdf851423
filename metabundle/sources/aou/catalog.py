"""What the Data Browser's own code fixes and no data file carries: page routes, the
public API host, and the program physical measurements.

Each constant names the file of ``all-of-us/data-browser`` it is taken from, so that a
reader can re-check it against a newer commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import pyarrow as pa

DATA_BROWSER = "https://databrowser.researchallofus.org"
"""Public Data Browser (public-ui/src/environments/environment.prod.ts)."""

PUBLIC_API = "https://public.api.researchallofus.org"
"""``publicApiUrl`` of the production Data Browser (environment.prod.ts)."""

API_PREFIX = "/v1/databrowser"
ATHENA_CONCEPT = "https://athena.ohdsi.org/search-terms/terms/"

HEALTH_CARE_ACCESS = 43528895
"""The one module whose route is not derived from its name (survey-react-view)."""


@dataclass(frozen=True)
class DomainPage:
    """A Data Browser domain: its page route, data type and OMOP domain (EHR only)."""

    route: str
    variable_type: str
    omop_domain: str | None


DOMAIN_PAGES: dict[str, DomainPage] = {
    "Condition": DomainPage("ehr/conditions", "ehr", "Condition"),
    "Drug": DomainPage("ehr/drug-exposures", "ehr", "Drug"),
    "Measurement": DomainPage("ehr/labs-and-measurements", "ehr", "Measurement"),
    "Procedure": DomainPage("ehr/procedures", "ehr", "Procedure"),
    "Physical Measurements": DomainPage("physical-measurements", "physical_measurement", None),
    "Fitbit": DomainPage("fitbit", "fitbit", None),
}
"""``domain_id`` of domain_info.csv → page (public-ui/src/app/utils/constants.tsx
``domainToRoute`` and home-view-react.component.tsx)."""

PM_DOMAIN = "Physical Measurements"


@dataclass(frozen=True)
class PhysicalMeasurement:
    """One program physical measurement as the Data Browser's measurement page lists it.

    ``loinc`` is the standard LOINC code the measurement is stored under in the OMOP
    measurement table, where that is established; the others have none here.
    """

    concept_id: int
    name: str
    group: str
    group_route: str
    variable_class: str
    loinc: str | None

    @property
    def title(self) -> str:
        return self.name if self.name == self.group else f"{self.group} - {self.name}"


PHYSICAL_MEASUREMENTS: tuple[PhysicalMeasurement, ...] = (
    PhysicalMeasurement(903118, "Systolic", "Mean Blood Pressure", "blood-pressure",
                        "continuous", "8480-6"),
    PhysicalMeasurement(903115, "Diastolic", "Mean Blood Pressure", "blood-pressure",
                        "continuous", "8462-4"),
    PhysicalMeasurement(903133, "Height", "Height", "height", "continuous", "8302-2"),
    PhysicalMeasurement(903121, "Weight", "Weight", "weight", "continuous", "29463-7"),
    PhysicalMeasurement(903135, "Mean waist circumference", "Mean waist circumference",
                        "mean-waist", "continuous", None),
    PhysicalMeasurement(903136, "Mean hip circumference", "Mean hip circumference",
                        "mean-hip", "continuous", None),
    PhysicalMeasurement(903126, "Mean heart rate", "Mean heart rate", "mean-heart-rate",
                        "continuous", "8867-4"),
    PhysicalMeasurement(903111, "Wheelchair use", "Wheelchair use", "wheel-chair",
                        "categorical", None),
    PhysicalMeasurement(903120, "Pregnancy", "Pregnancy", "pregnancy", "categorical", None),
)  # fmt: skip
"""``PMGroups`` of public-ui/src/app/data-browser/views/pm/pm-react.component.tsx (the
concept ids are ``PM_CONCEPTS`` of constants.tsx); histogram charts are continuous,
column charts categorical."""


def survey_route(concept_id: int, name: str) -> str:
    """The survey page route: the module name, lower-cased, spaces as hyphens."""
    if concept_id == HEALTH_CARE_ACCESS:
        return "health-care-access-and-utilization"
    return "-".join(name.split(" ")).lower()


def survey_pdf(concept_id: int, name: str, suffix: str = "") -> str:
    """The module's questionnaire PDF the survey page links to (``setSurvey``)."""
    stem = "Health_Care_Access_Utilization" if concept_id == HEALTH_CARE_ACCESS else name
    return f"{DATA_BROWSER}/assets/surveys/{quote('_'.join(stem.split(' ')))}{suffix}.pdf"


def module_pages(modules: pa.Table) -> pa.Table:
    """Page, route and PDFs of each survey module (``concept_id``, ``name`` columns)."""
    rows = modules.select(["concept_id", "name"]).to_pylist()
    routes = [survey_route(r["concept_id"], r["name"]) for r in rows]
    return pa.table(
        {
            "concept_id": pa.array([r["concept_id"] for r in rows], pa.int64()),
            "route": routes,
            "url": [f"{DATA_BROWSER}/survey/{route}" for route in routes],
            "pdf": [survey_pdf(r["concept_id"], r["name"]) for r in rows],
            "pdf_spanish": [survey_pdf(r["concept_id"], r["name"], "_Spanish") for r in rows],
        }
    )


def domain_pages() -> pa.Table:
    """Every known Data Browser domain with its page URL and route alias."""
    names = sorted(DOMAIN_PAGES)
    pages = [DOMAIN_PAGES[name] for name in names]
    return pa.table(
        {
            "domain_id": names,
            "url": [f"{DATA_BROWSER}/{page.route}" for page in pages],
            "alias": [page.route.rsplit("/", 1)[-1] for page in pages],
            "variable_type": [page.variable_type for page in pages],
            "omop_domain": pa.array([page.omop_domain for page in pages], pa.string()),
        }
    )


def pm_catalog() -> pa.Table:
    """The physical measurements with their titles, positions and page URLs."""
    items = PHYSICAL_MEASUREMENTS
    return pa.table(
        {
            "concept_id": pa.array([pm.concept_id for pm in items], pa.int64()),
            "title": [pm.title for pm in items],
            "group_name": [pm.group for pm in items],
            "group_route": [pm.group_route for pm in items],
            "variable_class": [pm.variable_class for pm in items],
            "loinc": pa.array([pm.loinc for pm in items], pa.string()),
            "position": pa.array(range(1, len(items) + 1), pa.int32()),
            "url": [f"{DATA_BROWSER}/physical-measurements/{quote(pm.group)}" for pm in items],
        }
    )
