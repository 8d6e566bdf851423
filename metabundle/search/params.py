"""Parameter types shared by tools: bounded text, clamped limits, method names, and
the argument forms every client can send.

Some MCP clients send every argument as text. A list parameter therefore also takes
a JSON-encoded list (``'["idc"]'``) or comma-separated text (``"idc,ukb"``), and an
object parameter a JSON-encoded object; :class:`Params` decodes them before
validation, for every tool. :func:`parameters_schema` publishes the parameters with
plain ``array``/``object`` types (no ``anyOf`` with ``null``) and says so.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import DEFAULT_REF_TEMPLATE

from metabundle.search.payload import Clamped

MAX_QUERY_CHARS = 1000
CLAMPED_CONTEXT = "clamped"
"""The key of the validation context's list that :func:`clamp` adds a :class:`Clamped`
to for each value it moved (:func:`metabundle.search.registry.parse_arguments`)."""

Method = Literal["keyword", "semantic", "hybrid"]


def clamped_note(parameter: str, requested: int, used: int) -> Clamped:
    """The note saying that ``parameter`` was asked for ``requested`` and ``used`` was used."""
    bound = "above the maximum" if requested > used else "below the minimum"
    return Clamped(
        parameter=parameter,
        requested=requested,
        used=used,
        message=f"{parameter} {requested} is {bound} {used}; {used} was used.",
    )


def clamp(low: int, high: int) -> AfterValidator:
    """Clamp an integer into ``[low, high]`` instead of rejecting it; a value it moves is
    noted in the validation context's :data:`CLAMPED_CONTEXT` list when there is one."""

    def clamped(value: int, info: ValidationInfo) -> int:
        used = min(max(value, low), high)
        moved = info.context.get(CLAMPED_CONTEXT) if isinstance(info.context, dict) else None
        if used != value and moved is not None:
            moved.append(clamped_note(info.field_name or "value", value, used))
        return used

    return AfterValidator(clamped)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Query = Annotated[
    str,
    StringConstraints(max_length=MAX_QUERY_CHARS),
    AfterValidator(_not_blank),
    Field(description="Text to find."),
]

Explain = Annotated[
    bool,
    Field(description="Add ranking rules."),
]


ARRAY_FORMS = "Or JSON or CSV text."
OBJECT_FORMS = "Or JSON text."
Container = Literal["array", "object"]


def container_kind(annotation: Any) -> Container | None:
    """``array`` for a list parameter, ``object`` for a mapping or model, looking
    through ``Annotated`` and ``| None``; ``None`` for anything else."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return container_kind(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        kinds = {container_kind(arg) for arg in get_args(annotation) if arg is not type(None)}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return "object"
    if isinstance(origin, type) and issubclass(origin, Sequence) and origin is not str:
        return "array"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    return None


MAX_TEXT_DEPTH = 16
"""The deepest nesting of lists and objects a parameter's text form may hold (the
deepest any tool takes is three: IDC filters' ranges)."""
_STRINGS_AND_TEXT = re.compile(r'"(?:[^"\\]|\\.)*"|[^\[\]{}"]+')


def nesting_depth(text: str) -> int:
    """How deeply the JSON ``text`` nests its lists and objects (brackets inside string
    literals not counted), found without parsing it."""
    brackets = _STRINGS_AND_TEXT.sub("", text)
    return max(accumulate(1 if c in "[{" else -1 for c in brackets), default=0)


def decode_text(value: str, kind: Container) -> Any:
    """A list or object sent as text: JSON when it parses as one, else (for a list)
    its comma-separated items; anything else is returned unchanged for validation to
    refuse in the parameter's name."""
    text = value.strip()
    if kind == "object" or text.startswith("["):
        if nesting_depth(text) > MAX_TEXT_DEPTH:
            return value  # refused by validation, before a parser recurses into it
        try:
            decoded = json.loads(text)
        except ValueError:
            return value
        return decoded if isinstance(decoded, dict if kind == "object" else list) else value
    return [item.strip() for item in text.split(",") if item.strip()]


class Params(BaseModel):
    """Base of every tool's parameters: unknown parameters are an error, and list and
    object parameters also take their text forms (:func:`decode_text`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _decode_text_forms(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        decoded = dict(data)
        for name, value in data.items():
            field = cls.model_fields.get(name)
            kind = container_kind(field.annotation) if field else None
            if kind and isinstance(value, str):
                decoded[name] = decode_text(value, kind)
        return decoded


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional property typed ``anyOf[<type>, null]`` as the plain type (omitting it
    means null), its description naming the text forms of a list or object."""
    options = schema.get("anyOf") or []
    kept = [option for option in options if option.get("type") != "null"]
    if len(options) == 2 and len(kept) == 1 and "type" in kept[0]:
        outer = {k: v for k, v in schema.items() if k != "anyOf" and k != "default"}
        inner_description = kept[0].get("description")
        schema = {**kept[0], **outer}
        if inner_description and outer.get("description"):
            schema["description"] = f"{outer['description']} {inner_description}"
    forms = {"array": ARRAY_FORMS, "object": OBJECT_FORMS}.get(schema.get("type"))
    if forms:
        schema["description"] = f"{schema.get('description', '').strip()} {forms}".strip()
    return schema


def _untitled(schema: Any) -> Any:
    """``schema`` without pydantic's ``title`` keywords (the property names say it); a
    property that is itself named ``title`` is an object there, and is kept."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _untitled(value)
        for key, value in schema.items()
        if not (key == "title" and isinstance(value, str))
    }


def parameters_schema(
    model: type[BaseModel], ref_template: str = DEFAULT_REF_TEMPLATE
) -> dict[str, Any]:
    """The published JSON schema of a tool's parameters: optional parameters as plain
    types (no ``anyOf`` with ``null``), list and object parameters' descriptions naming
    the text forms, and no ``title`` keywords nor the top-level ``additionalProperties``
    (the core refuses an unknown parameter by name), to keep ``tools/list`` small."""
    schema = model.model_json_schema(ref_template=ref_template)
    schema.pop("additionalProperties", None)
    properties = schema.get("properties", {})
    for name, property_schema in properties.items():
        properties[name] = _plain(property_schema)
    return _untitled(schema)
