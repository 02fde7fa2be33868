"""The five structured-output schemas (Scope, Search, Extract, Verdict, Report).

The original workflow's five schemas. Python attributes are snake_case; the wire (JSON
schema, validation input, `model_dump()`) uses the original's camelCase keys (`sourceQuality`,
`publishDate`, `counterSource`, `openQuestions`), so prompts and schemas agree 1:1.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Angle",
    "Claim",
    "Confidence",
    "Extract",
    "Finding",
    "Importance",
    "Relevance",
    "Report",
    "Scope",
    "Search",
    "SearchResult",
    "SourceQuality",
    "Verdict",
]

Relevance = Literal["high", "medium", "low"]
Importance = Literal["central", "supporting", "tangential"]
SourceQuality = Literal["primary", "secondary", "blog", "forum", "unreliable"]
Confidence = Literal["high", "medium", "low"]


def _no_description(schema: dict[str, Any]) -> None:
    # Docstrings are for Python readers; in the JSON schema a small model copies them into
    # its answer ("One extracted claim with ..."), and the original's schemas have none.
    schema.pop("description", None)


class _Wire(BaseModel):
    # Accept both spellings on input; always emit camelCase.
    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        json_schema_extra=_no_description,
    )


class Angle(_Wire):
    """One search angle: `label`, `query`, optional `rationale`."""

    label: str
    query: str
    rationale: str | None = None


class Scope(_Wire):
    """Scope phase output: the question, a 1-2 sentence strategy, 3-6 angles."""

    question: str
    summary: str
    angles: list[Angle] = Field(min_length=3, max_length=6)


class SearchResult(_Wire):
    """One search hit: `url`, `title`, optional `snippet`, `relevance` high|medium|low."""

    url: str
    title: str
    snippet: str | None = None
    relevance: Relevance


class Search(_Wire):
    """Search phase output: at most 6 results."""

    results: list[SearchResult] = Field(max_length=6)


class Claim(_Wire):
    """One extracted claim with its supporting quote and importance."""

    claim: str
    quote: str
    importance: Importance


class Extract(_Wire):
    """Fetch+extract output: source quality, optional publish date, at most 5 claims."""

    source_quality: SourceQuality = Field(alias="sourceQuality")
    publish_date: str | None = Field(default=None, alias="publishDate")
    claims: list[Claim] = Field(max_length=5)


class Verdict(_Wire):
    """One verifier vote: `refuted`, specific `evidence`, `confidence`, `counterSource`."""

    refuted: bool
    evidence: str
    confidence: Confidence
    counter_source: str | None = Field(default=None, alias="counterSource")


class Finding(_Wire):
    """One synthesised finding."""

    claim: str
    confidence: Confidence
    sources: list[str]
    evidence: str
    vote: str | None = None


class Report(_Wire):
    """Synthesis output: summary, findings, caveats, optional open questions."""

    summary: str
    findings: list[Finding]
    caveats: str
    open_questions: list[str] | None = Field(default=None, alias="openQuestions")
