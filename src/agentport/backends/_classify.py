"""Shared wording patterns for the per-backend error tables (each backend keeps its own table;
these are only the message shapes the HTTP layer of every CLI produces)."""

from __future__ import annotations

import re

from ..core import ErrorKind

__all__ = ["CONTEXT_WORDS", "kind_from_status", "kind_from_text"]

# Every way a backend says the prompt does not fit the model's window: OpenAI-style bodies
# ("context_length_exceeded", "maximum context length"), llama.cpp ("n_ctx", "exceed context
# window"), claude ("prompt is too long"), qwen-code ("context is too large"). One table for the
# CLI classifier and the HTTP wire alike.
CONTEXT_WORDS = re.compile(
    r"context.{0,20}(?:length|window)|maximum context|too many tokens|prompt is too long|"
    r"input is too long|context (?:is |was )?too (?:large|long)|too (?:large|long) for (?:the )?"
    r"(?:model'?s? )?context|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?(?:context|token)|"
    r"n_ctx|reduce the length",
    re.IGNORECASE,
)
_RULES: tuple[tuple[str, ErrorKind], ...] = (
    (r"\b401\b|unauthori[sz]ed|invalid api key|authenticat", ErrorKind.auth_required),
    (r"\b403\b|forbidden|permission denied", ErrorKind.auth_required),
    (
        r"\b429\b|too many requests|rate.?limit|quota|resource.?exhausted|usage limit",
        ErrorKind.rate_limited,
    ),
    (CONTEXT_WORDS.pattern, ErrorKind.context_length),
    # not "high demand": codex says that for any HTTP 500 (cli-transcripts/codex/http500*)
    (r"\b529\b|overloaded|over capacity", ErrorKind.overloaded),
    (
        r"blocked due to safety|safety (settings|filter|system)|content.?(filter|policy|"
        r"management polic)|responsible ai",
        ErrorKind.content_filter,
    ),
    (
        r"model_not_found|model\b.{0,60}\b(not found|does not exist|is unknown)"
        r"|unknown model|no such model|invalid model",
        ErrorKind.model_not_found,
    ),
    (
        r"\b5\d\d\b(?! ?ms)|internal server error|high demand|server.?side",
        ErrorKind.server_error,
    ),
    (
        r"disconnect|connection|econn|fetch failed|error sending request|network|socket"
        r"|terminated|timed? ?out",
        ErrorKind.network,
    ),
    (r"\b400\b|invalid.request|bad request", ErrorKind.invalid_request),
)
_TEXT_RULES = tuple((re.compile(pattern, re.I), kind) for pattern, kind in _RULES)


def kind_from_status(status: int | None) -> ErrorKind | None:
    """The error kind a status alone says, or None; callers try the status before the
    message text."""
    if status is None:
        return None
    if status in (401, 403):
        return ErrorKind.auth_required
    if status == 429:
        return ErrorKind.rate_limited
    if status == 413:
        return ErrorKind.context_length
    if status == 529:
        return ErrorKind.overloaded
    if 500 <= status <= 599:
        return ErrorKind.server_error
    if 400 <= status <= 499:
        return ErrorKind.invalid_request
    return None


def kind_from_text(text: str) -> ErrorKind | None:
    """The first matching rule for an error message, or None."""
    for pattern, kind in _TEXT_RULES:
        if pattern.search(text):
            return kind
    return None
