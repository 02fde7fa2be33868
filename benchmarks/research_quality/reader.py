"""A perfect reader behind `openai_compat`: `FakeModelServer` answers the seed's corpus
prompts (scope, search ranking, extract, verify, synthesis) the way a reader who knows the
gold answers would, so a run with it measures what the pipeline itself loses: a gold
answer missing from the report was never shown to the reader (retrieval), because the
reader never misses one it is shown.

- scope: three angles from the question's own words (the reader knows no more than the
  question there);
- search: the candidates of a gold document, high; none when no candidate is one;
- extract: every paragraph of the passage holding a gold answer (verbatim, its lines
  joined), and in a gold document with none, the paragraph naming what the question is
  about (its `bridge` strings when it has them, else its capitalised names: the first hop);
- verify: refuted when the claim holds a planted value, else supported;
- synthesis: every confirmed claim a finding, the summary their sentences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import score as scoring

_QUESTION = re.compile(
    r'(?:Research question: "|## Research question\n|## Question\n|\*\*Question:\*\* )(.+?)["\n]'
)
_CANDIDATE = re.compile(r"^\[\d+\] url: (\S+)", re.MULTILINE)
_SOURCE = re.compile(r"^\*\*Source:\*\* (\S+)", re.MULTILINE)
_PASSAGE = re.compile(r"## Passage\n(.*?)\n\n## Task", re.DOTALL)
_CLAIM = re.compile(r'## Claim under review\n"(.*?)"\n', re.DOTALL)
_CONFIRMED = re.compile(r"^### \[\d+\] (.*?)\nVote: .*? · Source: (\S+)", re.MULTILINE)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def _doc(url: str) -> str:
    head, _, tail = url.removeprefix("corpus://").rpartition("/")
    return head if tail.isdigit() else url


def _has(text: str, spellings: Sequence[str]) -> bool:
    return any(scoring.normalise(s) in scoring.normalise(text) for s in spellings)


def _paragraphs(body: str, *, rows: bool = False) -> list[str]:
    """The blank-line separated blocks of *body*, lines joined, headings and fences left
    out (a wrapped man page or reST paragraph is one unit, as it is one claim); with
    *rows*, a table's rows are units of their own."""
    out = []
    for block in re.split(r"\n[ \t]*\n", body):
        lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
        lines = [ln for ln in lines if not ln.startswith(("#", "```", "~~~"))]
        if rows and sum(" | " in ln for ln in lines) > 1:
            out += lines
        elif lines:
            out.append(" ".join(lines))
    return out


def perfect_reader(questions: Sequence[Mapping[str, Any]]) -> Callable[[Any], str]:
    """A `FakeModelServer` reply: the request's user text in, the answer JSON out."""
    by_text = {q["question"]: q for q in questions}

    def answer(request: Any) -> str:
        text = request.user_text
        found = _QUESTION.search(text)
        q = by_text.get(found.group(1).strip()) if found else None
        if q is None:  # a question with quotes in it: the one the prompt holds
            q = next((x for x in questions if x["question"] in text), None)
        if q is None:
            return json.dumps({"error": "unknown question"})
        gold = [s for spellings in q["answers"] for s in spellings]
        names = [n for n in _NAME.findall(q["question"])[1:]]
        hop = list(q.get("bridge") or names)  # what names the first hop, when read
        if text.startswith("Decompose this research question"):
            words = " ".join(w for w in re.findall(r"\w+", q["question"]) if len(w) > 3)
            angles = [
                {"label": "question", "query": q["question"]},
                {"label": "names", "query": " ".join(names) or q["question"]},
                {"label": "words", "query": words or q["question"]},
            ]
            return json.dumps({"question": q["question"], "summary": "read", "angles": angles})
        if text.startswith("## Corpus Searcher"):
            urls = [u for u in _CANDIDATE.findall(text) if _doc(u) in q["gold_docs"]]
            results = [
                {"url": u, "title": _doc(u), "snippet": "gold", "relevance": "high"}
                for u in urls[:6]
            ]
            return json.dumps({"results": results})
        if text.startswith("## Source Extractor"):
            source = _SOURCE.search(text)
            passage = _PASSAGE.search(text)
            body = passage.group(1) if passage else ""
            lines = _paragraphs(body)
            picked = [ln for ln in lines if gold and _has(ln, gold)]
            if (
                not picked
                and source
                and _doc(source.group(1)) in q["gold_docs"]
                and q["answerable"]
            ):
                picked = [ln for ln in lines if hop and _has(ln, hop)][:1]
            claims = [{"claim": ln, "quote": ln, "importance": "central"} for ln in picked[:5]]
            return json.dumps({"sourceQuality": "primary", "claims": claims})
        if text.startswith("## Adversarial Claim Verifier"):
            claim = _CLAIM.search(text)
            planted = bool(claim and q["planted"] and _has(claim.group(1), q["planted"]))
            return json.dumps(
                {
                    "refuted": planted,
                    "evidence": "read the passage",
                    "confidence": "high",
                    "counterSource": None,
                }
            )
        if text.startswith("## Synthesis"):
            confirmed = _CONFIRMED.findall(text)
            findings = [
                {"claim": c, "confidence": "high", "sources": [u], "evidence": "quote"}
                for c, u in confirmed
            ]
            return json.dumps(
                {
                    "summary": " ".join(c for c, _ in confirmed) or "none",
                    "findings": findings,
                    "caveats": "none",
                }
            )
        return json.dumps({"error": "unknown prompt"})

    return answer


def _first_instance(schema: Any) -> Any:
    """The smallest instance of a JSON schema made of first options: an object's required
    properties, an array's minimum number of items, an enum's first value."""
    if not isinstance(schema, Mapping):
        return None
    if "enum" in schema:
        return next(iter(schema["enum"]))
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _first_instance(props.get(k)) for k in schema.get("required") or props}
    if kind == "array":
        return [_first_instance(schema.get("items"))] * max(1, int(schema.get("minItems") or 1))
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return ""


_CHOICES = "Answer with exactly one of the following lines and nothing else:\n"
_FIRST_ID = re.compile(r"^([A-Z]+1): ", re.MULTILINE)


def first_candidate(request: Any) -> str:
    """A `FakeModelServer` reply that takes the first option the code offers, never reading
    the question: the first listed choice (a vote: the first of the allowed answers), the
    first value of every enum of the answer's JSON schema (extract, scope, synthesis: the
    first ids). The baseline a model that decides must beat."""
    text = request.user_text
    if _CHOICES in text:
        return text.split(_CHOICES, 1)[1].splitlines()[0]
    body = request.body if isinstance(request.body, Mapping) else {}
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, Mapping) else None
    if schema is not None:
        return json.dumps(_first_instance(schema))
    found = _FIRST_ID.search(text)  # a schema given in the prompt: the first listed id
    return json.dumps({"ids": [found.group(1)]} if found else {})
