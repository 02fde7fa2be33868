"""Honest resume: a call that asked to resume a session either ran in that session or fails
with `ErrorKind.session_not_found`, never answers from a silent new session.

Every CLI call goes through `honest_resume` (the generic adapter's last step), which judges the
CLI's own output:

- the CLI failed saying it has no such session (its words: the spec's `unknown_session`
  pattern, e.g. claude "No conversation found with session ID", codex "no rollout found for
  thread id", qwen "No saved session found with ID", recorded from the real CLIs; or the
  generic `UNKNOWN_SESSION`) -> the failure becomes `session_not_found`;
- the CLI succeeded but reported a session id other than the one asked for (it started a new
  session) -> `session_not_found`, naming both ids, with the answer dropped.

A CLI that reports no session id at all (goose, kiro) cannot be checked here; its own error
text is still matched.
"""

from __future__ import annotations

import re

from returns.result import Failure, Result, Success

from ..core import CompletionResponse, ErrorKind, ProviderError

__all__ = ["UNKNOWN_SESSION", "honest_resume", "not_loaded", "unknown_session_error"]

# Wordings of "no such session" any backend may use ("session ... not found", "no session
# found"), besides the spec's own pattern.
UNKNOWN_SESSION = re.compile(
    r"\b(session|conversation|thread)\b(?!/)[^\n]{0,80}\bnot found"
    r"|\bno (saved )?(session|conversation|thread)s? found",
    re.I,
)

# kinds a "no such session" answer may have been classified as before this step looks at it
_REINTERPRETED = frozenset(
    {ErrorKind.process_failed, ErrorKind.invalid_request, ErrorKind.bad_output}
)


def _says_unknown(own: re.Pattern[str] | None, error: ProviderError) -> bool:
    text = f"{error.message}\n{error.stderr_tail}"
    return any(p is not None and p.search(text) for p in (own, UNKNOWN_SESSION))


def unknown_session_error(
    backend: str, asked: str, *, started: str | None = None, cause: ProviderError | None = None
) -> ProviderError:
    """The `session_not_found` failure of a resume of *asked* on *backend*: the backend said
    so (*cause*), or it started session *started* instead."""
    if started is not None:
        message = (
            f"asked to resume session {asked!r}, but {backend} answered in a new session "
            f"{started!r}; the answer was dropped"
        )
    else:
        message = f"{backend} has no session {asked!r} to resume"
    details: dict[str, object] = {"session_id": asked}
    if started is not None:
        details["started"] = started
    if cause is not None:
        details["cause"] = cause.message
        details |= {k: v for k, v in cause.details.items() if k not in details}
    return ProviderError(
        ErrorKind.session_not_found,
        message,
        backend=backend,
        retryable=False,
        exit_code=None if cause is None else cause.exit_code,
        stderr_tail="" if cause is None else cause.stderr_tail,
        details=details,
        # a new session answered: the model was asked; a refusal: the CLI stopped before
        request_sent=True
        if started is not None
        else (None if cause is None else cause.request_sent),
        usage=None if cause is None else cause.usage,
    )


def honest_resume(
    backend: str,
    asked: str | None,
    result: Result[CompletionResponse, ProviderError],
    own: re.Pattern[str] | None = None,
    *,
    fork: bool = False,
) -> Result[CompletionResponse, ProviderError]:
    """*result* of a call on *backend* that resumed *asked* (None: no resume, *result*
    unchanged), judged as the module docstring says, with *own* the backend's "no such
    session" pattern: `Failure(session_not_found)` or *result* itself. With *fork* the
    answer must come from a new session: one in *asked* itself is `bad_output` (the original
    session was continued, not copied)."""
    if asked is None:
        return result
    if isinstance(result, Failure):
        error = result.failure()
        if error.kind in _REINTERPRETED and _says_unknown(own, error):
            return Failure(unknown_session_error(backend, asked, cause=error))
        return result
    response = result.unwrap()
    started = response.raw.session_id
    if fork:
        if started != asked:
            return result
        return Failure(
            ProviderError(
                ErrorKind.bad_output,
                f"asked to fork session {asked!r}, but {backend} continued it",
                backend=backend,
                retryable=False,
                request_sent=True,
                details={"session_id": asked},
                usage=response.usage,
            )
        )
    if started is not None and started != asked:
        failure = unknown_session_error(backend, asked, started=started)
        return Failure(failure.replace(usage=response.usage))
    return Success(response)


def not_loaded(asked: str, error: ProviderError) -> ProviderError:
    """The failure of an ACP `session/load` of *asked* that the agent answered with *error*:
    a refusal of the request itself (invalid params, resource not found, an internal error)
    is `session_not_found`; auth, time-outs, a dead connection and an unknown method keep
    their kind."""
    if error.kind in _REINTERPRETED:
        return unknown_session_error(error.backend or "acp", asked, cause=error)
    return error
