"""Per-call configuration (`CompletionConfig`) and which parameters a call sets."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._capabilities import Param
from ._messages import Message, MessageRole

__all__ = [
    "CompletionConfig",
    "IgnoredPolicy",
    "OutputSchema",
    "Sandbox",
    "ToolPolicy",
    "json_schema_problem",
]

OutputSchema = type[BaseModel] | dict[str, Any]
IgnoredPolicy = Literal["warn", "fail"]


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why *schema* is not a usable JSON schema (its own draft's meta-schema, regex patterns
    included), or None."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema, format_checker=cls.FORMAT_CHECKER)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"{where + ': ' if where else ''}{exc.message}"
    return None


class Sandbox(enum.StrEnum):
    """How much an agent may touch: `read_only`, `workspace_write` (its cwd), `full`."""

    read_only = "read_only"
    workspace_write = "workspace_write"
    full = "full"


class ToolPolicy(BaseModel):
    """Which tools an agent may use.

    `allowed_tools=None` leaves the backend's default tool set; `()` allows no tools.
    `sandbox=None` leaves the backend's default sandbox.
    """

    model_config = ConfigDict(frozen=True)

    allowed_tools: tuple[str, ...] | None = None
    sandbox: Sandbox | None = None


class CompletionConfig(BaseModel):
    """What one call asks for. `None` means "the backend's default" for every optional field.

    Attributes:
        model: model id, or None for the backend's configured model.
        temperature: sampling temperature (0-2).
        max_tokens: cap on generated tokens.
        output_schema: a pydantic model class or a JSON-schema dict; the response's `parsed`
            then holds a validated instance (model) or a dict (schema).
        choices: the answer text must be exactly one of these strings (e.g.
            `("<judge>Yes</judge>", "<judge>No</judge>")`). Backends that constrain decoding
            enforce it; others validate and re-prompt
            (`agentport.structured.complete_with_choices`). An output constraint, so it is
            declared as `Param.output_schema`; not together with `output_schema`.
        schema_retries: extra re-prompts with the validation errors when the answer does not
            match `output_schema` (TRANSLATED backends and invalid NATIVE answers).
        max_turns: agent turn budget (agent CLIs).
        startup_timeout_s: seconds until the first output byte.
        idle_timeout_s: longest silence between two output events, in seconds.
        total_timeout_s: wall-clock budget of one attempt, in seconds. The retry policy
            (`agentport.retry`) may make further attempts, each with its own budget, plus
            back-off waits; bound the whole with `anyio.fail_after` when that matters.
        tools: allowed tools and sandbox.
        cwd: working directory for agent CLIs; None = a fresh neutral temporary directory.
        web_search: ask the agent to use its web tools.
        session_id: resume this backend session (runtimes, CLIs that support resume).
        on_ignored: what happens when the call sets a parameter the backend IGNOREs:
            `warn` (recorded in `CompletionResponse.warnings`) or `fail` (`ErrorKind.unsupported`).
        label: a free-form name for the call site (e.g. "verify"); backends ignore it,
            `agentport.testing.ScriptedAdapter` matches on it.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    output_schema: OutputSchema | None = None
    choices: tuple[str, ...] | None = Field(default=None, min_length=1)
    schema_retries: int = Field(default=2, ge=0)
    max_turns: int | None = Field(default=None, gt=0)
    startup_timeout_s: float = Field(default=120.0, gt=0)
    idle_timeout_s: float = Field(default=300.0, gt=0)
    total_timeout_s: float = Field(default=1800.0, gt=0)
    tools: ToolPolicy = ToolPolicy()
    cwd: Path | None = None
    web_search: bool = False
    session_id: str | None = None
    on_ignored: IgnoredPolicy = "warn"
    label: str | None = None

    @model_validator(mode="after")
    def _one_output_constraint(self) -> CompletionConfig:
        if self.output_schema is not None and self.choices is not None:
            raise ValueError("set output_schema or choices, not both")
        if self.choices is not None and len(set(self.choices)) != len(self.choices):
            raise ValueError("choices must be distinct")
        if isinstance(self.output_schema, dict):
            problem = json_schema_problem(self.output_schema)
            if problem:
                raise ValueError(f"output_schema is not a valid JSON schema: {problem}")
        return self

    def params_set(self, messages: Sequence[Message] = ()) -> frozenset[Param]:
        """The parameters this call sets (checked against the backend's capability)."""
        checks: dict[Param, bool] = {
            Param.system_prompt: any(m.role is MessageRole.system for m in messages),
            Param.output_schema: self.output_schema is not None or self.choices is not None,
            Param.temperature: self.temperature is not None,
            Param.max_tokens: self.max_tokens is not None,
            Param.model: self.model is not None,
            Param.tool_restriction: self.tools.allowed_tools is not None,
            Param.sandbox: self.tools.sandbox is not None,
            Param.max_turns: self.max_turns is not None,
            Param.session_resume: self.session_id is not None,
            Param.cwd: self.cwd is not None,
            Param.web_search: self.web_search,
        }
        return frozenset(p for p, on in checks.items() if on)
