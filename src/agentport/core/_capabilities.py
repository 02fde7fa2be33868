"""Capability declarations: what each backend does with each parameter.

Every backend declares a `ParamSupport` for EVERY `Param` in its `BackendCapability`; the
catalog (`agentport.catalog`) holds these declarations and nothing else re-declares them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

__all__ = [
    "BackendCapability",
    "BackendKind",
    "Billing",
    "Concurrency",
    "Param",
    "ParamSupport",
    "normalize_name",
]


class ParamSupport(enum.StrEnum):
    """NATIVE: the backend enforces it. TRANSLATED: agentport emulates it (e.g. schema in the
    prompt, then validation). IGNORED: it has no effect on this backend."""

    NATIVE = "native"
    TRANSLATED = "translated"
    IGNORED = "ignored"


class Param(enum.StrEnum):
    """Parameters of `CompletionConfig` and of agent runs that a backend may honour."""

    system_prompt = "system_prompt"
    output_schema = "output_schema"
    temperature = "temperature"
    max_tokens = "max_tokens"
    reasoning_effort = "reasoning_effort"
    model = "model"
    tool_restriction = "tool_restriction"
    sandbox = "sandbox"
    max_turns = "max_turns"
    streaming = "streaming"
    session_resume = "session_resume"
    cwd = "cwd"
    web_search = "web_search"
    images = "images"
    files = "files"
    mcp_servers = "mcp_servers"
    functions = "functions"
    #: the caller's approval hook (`CompletionConfig.on_permission`), asked before a tool runs
    approvals = "approvals"
    #: runtime session controls (docs/sessions.md): `steer(text)` on a running session,
    #: `interrupt()` of its turn, `fork()` of a session, `handoff` to/from another backend
    steer = "steer"
    interrupt = "interrupt"
    fork = "fork"
    handoff = "handoff"


class BackendKind(enum.StrEnum):
    cli = "cli"
    http = "http"
    local = "local"
    test = "test"


class Billing(enum.StrEnum):
    """How calls to a backend are paid for: `subscription` = a logged-in plan whose
    usage windows calls spend (Claude Pro/Max, ChatGPT, Copilot, ...); `api_key` = metered by
    a provider key; `cloud` = a cloud account (Bedrock, Vertex AI); `local` = your own
    hardware; `none` = nothing (test doubles)."""

    subscription = "subscription"
    api_key = "api_key"
    cloud = "cloud"
    local = "local"
    none = "none"


class Concurrency(BaseModel):
    """A backend's adaptive concurrency window (`agentport.policies` halves it on a 429 and
    grows it back): `initial` calls at once to start with, never more than `maximum`. None
    on a backend means it is not gated (in-process and test backends)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    initial: int = Field(ge=1)
    maximum: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> Concurrency:
        if self.initial > self.maximum:
            raise ValueError(f"concurrency initial {self.initial} is above maximum {self.maximum}")
        return self


# Agent CLIs publish no concurrency limit and one login's parallel calls share one usage
# window (14 parallel calls of one CLI once stampeded an exhausted quota): a few at a time
# until successes show more is fine (an exhausted window stops them all through the
# cooldown). Not one: a single hung turn would then hold every other call of the backend
# until its deadline. An HTTP endpoint serves several at once.
_DEFAULT_CONCURRENCY: dict[str, Concurrency | None] = {
    "cli": Concurrency(initial=4, maximum=8),
    "http": Concurrency(initial=8, maximum=64),
    "local": None,
    "test": None,
}


def normalize_name(name: str) -> str:
    """Lower-case and fold spaces and dashes to underscores: `" Claude-Code "` -> `claude_code`."""
    return "_".join(name.strip().lower().replace("-", " ").split())


class BackendCapability(BaseModel):
    """One backend's catalog entry.

    Attributes:
        name: canonical name (lower snake case).
        aliases: other accepted names.
        kind: cli / http / local / test.
        summary: one line for tables and docs.
        module: import path of the backend module: a `BackendSpec` named `SPEC` (agent CLIs),
            else `create_adapter(capability, settings)` and, for runtimes,
            `create_runtime(capability, settings)`.
        executable: the CLI binary name (cli kind), else None.
        install_hint: how a user installs it (shown when it is missing).
        verified_against: the real CLI version the contract tests ran on, or None.
        checked_against_source: where no binary can be installed here, the public source the
            spec was last read against (`owner/repo@commit`, or why there is none).
        supports_runtime: whether `create_agent_runtime` can drive it.
        auto_priority: position in the `auto` order (lower first), None = never picked by auto.
        requires_modules: Python modules that must be importable (an optional extra).
        extra: the pip extra that provides `requires_modules`, e.g. "local".
        params: a ParamSupport for every `Param` (validated complete).
        notes: per-param explanations shown in docs (why TRANSLATED/IGNORED).
        retries: how the CLI's own retries are kept from multiplying agentport's (a per-run
            setting that turns them off, or the run ending at its first retry notice),
            shown on the backend's docs page.
        billing: how calls are paid for, the usual way first (`Billing`); shown by
            `agentport backends` and the docs, so a user sees which calls spend a
            subscription window.
        billing_note: one line on the above (which login, which key).
        env_namespace: the CLI's own environment variables (`fnmatch` patterns such as
            `COPILOT_*`, from the CLI's docs: its endpoint, key and model settings), passed
            to it from the caller's environment unless `[llm.<backend>] base_url` is set.
        concurrency: the adaptive concurrency window's start and ceiling (`Concurrency`);
            by default agent CLIs start at 1 (up to 8), HTTP backends at 8 (up to 64), and
            local and test backends are not gated (None).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    aliases: tuple[str, ...] = ()
    kind: BackendKind
    summary: str
    module: str
    executable: str | None = None
    install_hint: str = ""
    verified_against: str | None = None
    checked_against_source: str | None = None
    supports_runtime: bool = False
    auto_priority: int | None = None
    requires_modules: tuple[str, ...] = ()
    extra: str | None = None
    params: Mapping[Param, ParamSupport]
    notes: Mapping[Param, str] = Field(default_factory=dict)
    retries: str = ""
    billing: tuple[Billing, ...] = ()
    billing_note: str = ""
    env_namespace: tuple[str, ...] = ()
    concurrency: Concurrency | None = None

    @model_validator(mode="before")
    @classmethod
    def _concurrency_default(cls, data: object) -> object:
        """An entry that names no `concurrency` gets its kind's default."""
        if isinstance(data, dict) and "concurrency" not in data and "kind" in data:
            return {**data, "concurrency": _DEFAULT_CONCURRENCY.get(str(data["kind"]))}
        return data

    @field_validator("name")
    @classmethod
    def _canonical(cls, v: str) -> str:
        if normalize_name(v) != v:
            raise ValueError(f"backend name {v!r} is not canonical ({normalize_name(v)!r})")
        return v

    @field_validator("params", "notes", mode="after")
    @classmethod
    def _freeze(cls, v: Mapping[Param, object]) -> Mapping[Param, object]:
        return MappingProxyType(dict(v))

    @field_serializer("params", "notes")
    def _plain(self, v: Mapping[Param, object]) -> dict[str, object]:
        return {k.value: (x.value if isinstance(x, ParamSupport) else x) for k, x in v.items()}

    @model_validator(mode="after")
    def _complete(self) -> BackendCapability:
        missing = [p.value for p in Param if p not in self.params]
        if missing:
            raise ValueError(f"backend {self.name!r} declares no support for: {', '.join(missing)}")
        return self

    def support(self, param: Param) -> ParamSupport:
        return self.params[param]

    @property
    def names(self) -> tuple[str, ...]:
        """Canonical name first, then aliases."""
        return (self.name, *self.aliases)
