"""Per-call configuration (`CompletionConfig`) and which parameters a call sets."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._approvals import PermissionHook
from ._capabilities import Param
from ._mcp_servers import FUNCTIONS_SERVER, McpServer, ToolFunction, check_function
from ._messages import Message, MessageRole

__all__ = [
    "CompletionConfig",
    "IgnoredPolicy",
    "OutputSchema",
    "ReasoningEffort",
    "Sandbox",
    "ToolPolicy",
    "json_schema_problem",
]

OutputSchema = type[BaseModel] | dict[str, Any]
IgnoredPolicy = Literal["warn", "fail"]
#: How hard a reasoning model thinks before it answers: the three levels every backend that
#: has the setting accepts (codex `model_reasoning_effort`, claude `--effort`, copilot
#: `--reasoning-effort`, pi `--thinking`, OpenAI-compatible `reasoning_effort`).
ReasoningEffort = Literal["low", "medium", "high"]


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
    """Which tools an agent may use: least privilege unless the caller opts in.

    The default, `ToolPolicy()`, is **no tools and a read-only sandbox**: the agent can only
    answer. `allowed_tools=("Read", ...)` offers only those tools (names in the CLI's own
    vocabulary); `allowed_tools=None` is the opt-in to the CLI's whole default tool set.
    `sandbox` is a ceiling on what a tool may touch (`read_only`, `workspace_write` = the
    working directory, `full`); `None` is the opt-in to the CLI's own default.
    `ToolPolicy.cli_defaults()` opts in to both. Naming only one field is an opt-in too: the
    other one is then left to the CLI (`ToolPolicy(sandbox=Sandbox.workspace_write)` = the
    CLI's tools inside the working directory; `ToolPolicy(allowed_tools=("Read",))` = only
    Read, under the CLI's own sandbox).

    Both are safety parameters: a backend that cannot enforce them refuses the call
    (`ErrorKind.unsupported`) whatever `on_ignored` says; with no tools at all, any sandbox
    holds. Source: docs/security.md (safe by default).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    allowed_tools: tuple[str, ...] | None = ()
    sandbox: Sandbox | None = Sandbox.read_only

    @model_validator(mode="before")
    @classmethod
    def _one_field_is_an_opt_in(cls, data: Any) -> Any:
        if isinstance(data, dict):
            named = {"allowed_tools", "sandbox"} & set(data)
            if len(named) == 1:
                other = "sandbox" if "allowed_tools" in named else "allowed_tools"
                return {**data, other: None}
        return data

    @classmethod
    def none(cls) -> ToolPolicy:
        """No tools, read-only sandbox (the default; what the workflows use)."""
        return cls(allowed_tools=(), sandbox=Sandbox.read_only)

    @classmethod
    def cli_defaults(cls) -> ToolPolicy:
        """Opt in to the CLI's own default tools and sandbox (no least privilege)."""
        return cls(allowed_tools=None, sandbox=None)

    @property
    def no_tools(self) -> bool:
        """True when the agent may use no tool at all."""
        return self.allowed_tools == ()


class CompletionConfig(BaseModel):
    """What one call asks for. `None` means "the backend's default" for every optional field.

    Attributes:
        model: model id, or None for the backend's configured model.
        temperature: sampling temperature (0-2).
        max_tokens: cap on generated tokens.
        reasoning_effort: how hard a reasoning model thinks (`low`, `medium`, `high`), or None
            for the backend's default; each backend maps it to its own setting (see the
            catalog's `reasoning_effort` row).
        output_schema: a pydantic model class or a JSON-schema dict; the response's `parsed`
            then holds a validated instance (model) or a dict (schema).
        choices: the answer text must be exactly one of these strings (e.g.
            `("<judge>Yes</judge>", "<judge>No</judge>")`). Backends that constrain decoding
            enforce it; others validate and re-prompt
            (`agentport.structured.complete_with_choices`). An output constraint, so it is
            declared as `Param.output_schema`; not together with `output_schema`.
        schema_retries: extra re-prompts with the validation errors when the answer does not
            match `output_schema` (TRANSLATED backends and invalid NATIVE answers).
        schema_strict: validate a pydantic `output_schema` in strict mode (True, the default:
            `"4"` is not an `int`, as with the equivalent JSON-schema dict); False opts in to
            pydantic's lax coercion.
        max_turns: agent turn budget (agent CLIs).
        startup_timeout_s: seconds until the first output byte.
        idle_timeout_s: longest silence between two output events, in seconds.
        total_timeout_s: the whole call's deadline, in seconds: it bounds the call including
            agentport's retries, schema/choices re-prompts and back-off waits
            (`agentport.policies`), and ends in `Failure(ErrorKind.timeout)` with
            `timeout="total"` and the attempts made. An adapter used without the policy
            layer (`create_llm_adapter(retry=False)`) is bounded by it as one attempt.
        attempt_timeout_s: bound of one attempt, in seconds (None: only the deadline bounds
            it). Each attempt gets `min(attempt_timeout_s, time left of total_timeout_s)`;
            when the attempt bound fires the failure says `timeout="attempt"` and the call
            may be retried within the deadline.
        tools: allowed tools and sandbox; default no tools and read-only (`ToolPolicy`).
        cwd: working directory for agent CLIs; None = a fresh neutral temporary directory.
        web_search: ask the agent to use its web tools.
        session_id: resume this backend session (runtimes, CLIs that support resume).
        on_ignored: what happens when the call sets a parameter the backend IGNOREs:
            `warn` (recorded in `CompletionResponse.warnings`) or `fail` (`ErrorKind.unsupported`).
        label: a free-form name for the call site (e.g. "verify"); backends ignore it,
            `agentport.testing.ScriptedAdapter` matches on it.
        mcp_servers: MCP servers (`McpServer`: stdio command or HTTP url) for this call only;
            their tools are offered to the agent on top of what `tools` allows. Strict: a
            call that names servers or functions loads only those, never the MCP servers
            of the user's own CLI configuration (docs/tools.md).
        functions: Python callables with annotated parameters, offered to the agent as
            tools: agentport serves them for the call as an MCP server on 127.0.0.1 (a
            per-call bearer token), so every backend that takes `mcp_servers` can call
            them; an exception becomes a tool error the agent sees.
        on_permission: the caller's approval hook, sync or async, `(PermissionRequest) ->
            Allow | Deny`, asked before a tool runs where the backend can ask (the catalog's
            `approvals` row); it only narrows the `tools` policy. Raising is a deny with the
            error as the reason. docs/approvals.md.
        permission_timeout_s: seconds the hook has to answer one request; no answer in time
            is a deny.
        fork_session: with `session_id`, continue a copy of that session under a new id (the
            original stays as it was); a backend that cannot fork refuses (`unsupported`).
    """

    model_config = ConfigDict(
        frozen=True, arbitrary_types_allowed=True, extra="forbid", defer_build=True
    )

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: ReasoningEffort | None = None
    output_schema: OutputSchema | None = None
    choices: tuple[str, ...] | None = Field(default=None, min_length=1)
    schema_retries: int = Field(default=2, ge=0)
    schema_strict: bool = True
    max_turns: int | None = Field(default=None, gt=0)
    startup_timeout_s: float = Field(default=120.0, gt=0)
    idle_timeout_s: float = Field(default=300.0, gt=0)
    total_timeout_s: float = Field(default=1800.0, gt=0)
    attempt_timeout_s: float | None = Field(default=None, gt=0)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    cwd: Path | None = None
    web_search: bool = False
    session_id: str | None = None
    on_ignored: IgnoredPolicy = "warn"
    label: str | None = None
    mcp_servers: tuple[McpServer, ...] = ()
    functions: tuple[ToolFunction, ...] = ()
    on_permission: PermissionHook | None = None
    permission_timeout_s: float = Field(default=60.0, gt=0)
    fork_session: bool = False

    @model_validator(mode="after")
    def _one_output_constraint(self) -> CompletionConfig:
        if self.output_schema is not None and self.choices is not None:
            raise ValueError("set output_schema or choices, not both")
        if self.fork_session and self.session_id is None:
            raise ValueError("fork_session needs the session_id to fork")
        if self.choices is not None and len(set(self.choices)) != len(self.choices):
            raise ValueError("choices must be distinct")
        if isinstance(self.output_schema, dict):
            problem = json_schema_problem(self.output_schema)
            if problem:
                raise ValueError(f"output_schema is not a valid JSON schema: {problem}")
        servers = [s.name for s in self.mcp_servers]
        servers += [FUNCTIONS_SERVER] if self.functions else []
        tools = [check_function(f) for f in self.functions]
        for field, names in (("mcp_servers", servers), ("functions", tools)):
            doubled = sorted({n for n in names if names.count(n) > 1})
            if doubled:
                raise ValueError(f"{field}: names used twice: {', '.join(doubled)}")
        return self

    def with_defaults(self, defaults: CompletionConfig) -> CompletionConfig:
        """This config with every field the caller did not set (pydantic `model_fields_set`)
        taken from *defaults* (the configured settings, `LLMSettings.completion_config()`).

        The one place where configured values meet a per-call config: every adapter and
        runtime calls it (through `merge_config`). A field set explicitly, even to None
        (e.g. `model=None`: the backend's own default), wins over the configured value.
        """
        unset = defaults.model_fields_set - self.model_fields_set
        if not unset:
            return self
        return self.model_copy(update={name: getattr(defaults, name) for name in unset})

    @property
    def attempt_budget_s(self) -> float:
        """Seconds one attempt may run: `min(attempt_timeout_s, total_timeout_s)`."""
        if self.attempt_timeout_s is None:
            return self.total_timeout_s
        return min(self.attempt_timeout_s, self.total_timeout_s)

    def params_set(self, messages: Sequence[Message] = ()) -> frozenset[Param]:
        """The parameters this call sets (checked against the backend's capability)."""
        checks: dict[Param, bool] = {
            Param.system_prompt: any(m.role is MessageRole.system for m in messages),
            Param.output_schema: self.output_schema is not None or self.choices is not None,
            Param.temperature: self.temperature is not None,
            Param.max_tokens: self.max_tokens is not None,
            Param.reasoning_effort: self.reasoning_effort is not None,
            Param.model: self.model is not None,
            Param.tool_restriction: self.tools.allowed_tools is not None,
            Param.sandbox: self.tools.sandbox is not None,
            Param.max_turns: self.max_turns is not None,
            Param.session_resume: self.session_id is not None,
            Param.cwd: self.cwd is not None,
            Param.web_search: self.web_search,
            Param.images: any(m.images for m in messages),
            Param.files: any(m.files for m in messages),
            Param.mcp_servers: bool(self.mcp_servers),
            Param.functions: bool(self.functions),
            Param.approvals: self.on_permission is not None,
            Param.fork: self.fork_session,
        }
        return frozenset(p for p, on in checks.items() if on)
