"""The names a UK Biobank field goes by in extract files, declared once.

The build writes every field's aliases from these forms (``ukb_field_alias``, SQL made
by :meth:`AliasForm.sql`) and the tools read a column name with the same forms
(:func:`parse_alias`), so the two cannot drift apart.

A form's template holds literal text and ``{field}``, ``{instance}`` and ``{array}``; a
part in brackets is written only when the field has instances (the part holds
``{instance}``) or arrays (``{array}``): ``p{field}[_i{instance}][_a{array}]`` is
``p21001_i0`` for an instanced field and ``p31`` for a singular one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_TOKEN = re.compile(r"(\[[^\]]*\]|\{(?:field|instance|array)\})")
_SQL_NAMES = {"field": "field_id", "instance": "i", "array": "a"}
_FLAGS = {"instance": "has_i", "array": "has_a"}


@dataclass(frozen=True)
class AliasForm:
    """One column-name form: its kind (``ukb_field_alias.alias_kind``), template and
    priority (when two forms give one name, the lower priority's kind is kept);
    ``when`` limits it to fields with instances or arrays."""

    kind: str
    template: str
    priority: int
    when: str | None = None

    @property
    def per_cell(self) -> bool:
        """True when the form names one instance/array cell of a field."""
        return "{instance}" in self.template or "{array}" in self.template

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The form as a regular expression with named groups ``field``, ``instance``
        and ``array``."""

        def regex(text: str) -> str:
            out = []
            for token in _TOKEN.split(text):
                if token.startswith("["):
                    out.append(f"(?:{regex(token[1:-1])})?")
                elif token.startswith("{"):
                    out.append(rf"(?P<{token[1:-1]}>\d+)")
                else:
                    out.append(re.escape(token))
            return "".join(out)

        return re.compile(f"^{regex(self.template)}$")

    def sql(self) -> str:
        """The form as a SQL string expression over ``field_id``, ``i``, ``a``, ``has_i``
        and ``has_a`` (the columns of the build's alias query)."""

        def expression(text: str) -> str:
            parts = []
            for token in _TOKEN.split(text):
                if token.startswith("["):
                    inner = token[1:-1]
                    flag = next(f for name, f in _FLAGS.items() if f"{{{name}}}" in inner)
                    parts.append(f"CASE WHEN {flag} THEN {expression(inner)} ELSE '' END")
                elif token.startswith("{"):
                    parts.append(f"CAST({_SQL_NAMES[token[1:-1]]} AS VARCHAR)")
                elif token:
                    parts.append("'" + token.replace("'", "''") + "'")
            return " || ".join(parts)

        return expression(self.template)


ALIAS_FORMS: tuple[AliasForm, ...] = (
    AliasForm("field_id", "{field}", 1),
    AliasForm("f_prefix", "f{field}", 2),
    AliasForm("rap_stem", "p{field}", 3, when="has_i OR has_a"),
    AliasForm("ukbconv_csv", "{field}-{instance}.{array}", 4),
    AliasForm("ukbconv_r", "f.{field}.{instance}.{array}", 5),
    AliasForm("rap", "p{field}[_i{instance}][_a{array}]", 6),
)
"""The column-name forms of the common extract formats: the field id, ukbconv's R
(``f.21001.0.0``) and CSV (``21001-0.0``) columns, the RAP's (``p21001_i0``), their
stems."""

FORMS_BY_KIND = {form.kind: form for form in ALIAS_FORMS}


def parse_alias(text: str) -> tuple[int, str, int | None, int | None] | None:
    """``(field id, kind, instance, array)`` of a column name in one of the forms, the
    first form in priority order that reads it; else None."""
    for form in ALIAS_FORMS:
        match = form.pattern.match(text)
        if match:
            groups = match.groupdict()
            instance, array = groups.get("instance"), groups.get("array")
            return (
                int(groups["field"]),
                form.kind,
                None if instance is None else int(instance),
                None if array is None else int(array),
            )
    return None
