"""Parameter types shared by tools: bounded text, clamped limits, method names."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

MAX_QUERY_CHARS = 1000

Method = Literal["keyword", "semantic", "hybrid"]


def clamp(low: int, high: int) -> AfterValidator:
    """Clamp an integer into ``[low, high]`` instead of rejecting it."""
    return AfterValidator(lambda value: min(max(value, low), high))


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Query = Annotated[
    str,
    StringConstraints(max_length=MAX_QUERY_CHARS),
    AfterValidator(_not_blank),
    Field(description="What to look for: words, a phrase, an identifier or a code."),
]


class Params(BaseModel):
    """Base of every tool's parameters: unknown parameters are an error."""

    model_config = ConfigDict(extra="forbid")
