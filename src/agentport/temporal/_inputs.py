"""Closed boundary types: what another client of the namespace may put in a Temporal input.

Any client of a Temporal namespace can start agentport's workflows and schedule its
activities by name, on the workers' queues, with input it wrote. So every workflow and
activity input is parsed, on the receiving side, into a pydantic model with
`extra="forbid"` whose fields can only *name* (a backend the worker serves, a model, an id
that matches a strict pattern, a path that the worker's path authority resolves under its
own roots) or *narrow* (a lower budget, a shorter timeout). What runs, with which tools,
in which folder, against which endpoint and with which key comes only from the worker's
own configuration. Our own client and workflows build these same types (`wire`), so they
send exactly what the worker accepts.

The wire is plain JSON (Temporal's default converter). Receivers declare their input as a
`RawValue` and parse it here (`parse`), so an input of any shape, a wrong type or an
unknown key is refused by one non-retryable `ApplicationError` of type `REFUSED_INPUT`
naming the field, not a decoding failure that Temporal would retry for ever.
"""

# No `from __future__ import annotations`: the workflow sandbox re-imports this module.
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

__all__ = [
    "REFUSED_INPUT",
    "BackendName",
    "Closed",
    "FileId",
    "InputRefused",
    "Label",
    "ModelName",
    "PathText",
    "Prefix",
    "ReportName",
    "Seconds",
    "WebRequest",
    "one_line",
    "parse",
    "validate",
    "wire",
]

#: `ApplicationError.type` of a refused input (never retried)
REFUSED_INPUT = "agentport.refused_input"

M = TypeVar("M", bound=BaseModel)


class InputRefused(ValueError):
    """A boundary input that does not parse into its closed type; `str` is one line naming
    the field (never the value: history is readable by every client of the namespace)."""


class Closed(BaseModel):
    """A boundary type: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _not_a_file(value: str) -> str:
    # the local backend takes a model file path: a request names a model, never a file
    if value.lower().endswith(".gguf") or ".." in value.split("/"):
        raise ValueError("a model is a name, not a file path")
    return value


def _no_controls(value: str) -> str:
    if re.search(r"[\x00-\x1f\x7f-\x9f]", value):
        raise ValueError("holds a control character")
    return value


#: a backend name, alias or chain (`codex`, `openai-compat`, `codex,claude`, `a+b`)
BackendName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+, -]{0,199}$")]
#: a model id (`gpt-5`, `openai/gpt-4o`, `qwen2.5:7b`, `claude@2024`): never a path
ModelName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$"),
    AfterValidator(_not_a_file),
]
#: an id that becomes a file name: a question id (`question_id`), never `..` or a path
FileId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
#: a report's file name in the batch folder: `<item id>.md` (`.partial.md`, `.failed.md`)
ReportName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.md$")]
#: a task-queue prefix
Prefix = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
#: free text for diagnostics (call ids, labels): bounded, no control characters
Label = Annotated[str, StringConstraints(max_length=512), AfterValidator(_no_controls)]
#: a path, resolved by the worker's path authority (`agentport.transport._beneath`)
PathText = Annotated[str, StringConstraints(max_length=4096)]
#: a duration in seconds: positive, finite, at most a week
Seconds = Annotated[float, Field(gt=0, le=7 * 86400)]


def one_line(exc: ValidationError) -> str:
    """The first validation error as `field.path: message` (no input value)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "input"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def validate(model: type[M], value: Any, what: str) -> M:
    """*value* (JSON data or already a *model*) as *model*; `InputRefused` (one line)."""
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InputRefused(f"refused {what} input: {one_line(exc)}") from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise InputRefused(f"refused {what} input: {type(exc).__name__}") from None


def wire(model: BaseModel) -> dict[str, Any]:
    """*model* as the JSON data the receiver parses back into the same type."""
    return model.model_dump(mode="json")


def parse(model: type[M], raw: Any, what: str) -> M:
    """A workflow's or activity's input (a `RawValue` from Temporal, or JSON data / a
    *model* from a direct call) as *model*; anything else is a non-retryable
    `ApplicationError(type=REFUSED_INPUT)` whose message names the field."""
    from temporalio import activity, workflow
    from temporalio.common import RawValue
    from temporalio.exceptions import ApplicationError

    try:
        if isinstance(raw, RawValue):
            in_workflow = workflow.in_workflow()
            converter = (
                workflow.payload_converter() if in_workflow else activity.payload_converter()
            )
            raw = converter.from_payload(raw.payload)
        return validate(model, raw, what)
    except InputRefused as exc:
        message = str(exc)
    except Exception as exc:  # a payload that is not JSON, an unknown encoding
        message = f"refused {what} input: not JSON data ({type(exc).__name__})"
    raise ApplicationError(message, type=REFUSED_INPUT, non_retryable=True)


class WebRequest(Closed):
    """The client's `[web]` table as workflow input (`_web.web_input`): no proxy, no
    credentials. The engine, its URL and the User-Agent only tell the workflow whether
    agentport's own search can stand in; the worker searches and fetches with its own
    `[web]` settings, which the numbers and flags here may only narrow (`narrow_web`)."""

    engine: Literal["auto", "searxng", "none"] | None = None
    searxng_url: Annotated[str, StringConstraints(max_length=2048)] | None = None
    max_results: int | None = None
    search_timeout_s: float | None = None
    timeout_s: float | None = None
    max_bytes: int | None = None
    max_redirects: int | None = None
    per_host_concurrency: int | None = None
    per_host_delay_s: float | None = None
    respect_robots: bool | None = None
    allow_private: bool | None = None
    max_page_chars: int | None = None
    user_agent: Annotated[str, StringConstraints(max_length=512)] | None = None

    def sent(self) -> dict[str, Any]:
        """The fields given, as the `[web]` table they came from."""
        return self.model_dump(exclude_none=True)
