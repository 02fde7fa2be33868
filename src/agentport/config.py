"""Configuration: `llm.backend`, `llm.model`, timeouts, retries and per-backend options.

Resolved in this order (first wins, tables merged key by key):

1. explicit arguments (`load_settings(backend="codex")`, `create_llm_adapter("codex")`);
2. environment: `AGENTPORT_LLM_BACKEND`, `AGENTPORT_LLM_MODEL`, `AGENTPORT_LLM_TOTAL_TIMEOUT_S`, …;
3. `./agentport.toml`, table `[llm]`;
4. `./pyproject.toml`, table `[tool.agentport.llm]`;
   (3 and 4 are project files: until the user trusts the folder (`trusted_projects`, see
   `agentport._trust`) they may set only models and timeouts; other keys are ignored with a
   warning naming the file and key; a file that is a symlink is never trusted, and each
   file's trust is its own);
5. the user's file: `$AGENTPORT_CONFIG_FILE`, else `$XDG_CONFIG_HOME/agentport/config.toml`
   (default `~/.config/agentport/config.toml`), table `[llm]`;
6. defaults (`backend = "auto"`).

Per-backend options live in a sub-table named after the backend, e.g. `[llm.openai_compat]`
`base_url = "http://127.0.0.1:8080/v1"`; each backend validates its own table. Bad input
raises `ProviderError(ErrorKind.config)` with one line naming the source and field.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ._trust import (
    CALL_FIELDS,
    ProjectFile,
    UnknownConfigWarning,
    UntrustedConfigWarning,
    canonical_tables,
    filter_untrusted,
    is_trusted,
    narrow_budget,
    read_project_file,
    read_user_file,
    strip_strangers_credentials,
    trusted_entries,
    unknown_setting,
    user_toml,
    warn_dropped,
)
from .core import (
    CompletionConfig,
    ErrorKind,
    IgnoredPolicy,
    ProviderError,
    ReasoningEffort,
    register_secret,
    secret_values,
)
from .policies import Budget, BudgetSettings
from .web import WebSettings

__all__ = [
    "LLMSettings",
    "Settings",
    "TemporalSettings",
    "UnknownConfigWarning",
    "UntrustedConfigWarning",
    "load_settings",
    "run_budget",
    "user_config_path",
    "warn_unknown",
]


class LLMSettings(BaseModel):
    """The `[llm]` table.

    Attributes:
        backend: a backend name or alias, or `auto`; or an ordered failover chain (a TOML
            list, or a comma list in `AGENTPORT_LLM_BACKEND`), kept as a comma list.
        model: model id passed to the backend, or None for its default.
        temperature / max_tokens: sampling temperature and token cap, or None for the
            backend's default.
        reasoning_effort: `low`, `medium` or `high` (`CompletionConfig.reasoning_effort`),
            or None for the backend's default.
        startup_timeout_s / idle_timeout_s / attempt_timeout_s / total_timeout_s: see
            `CompletionConfig` (total_timeout_s is the whole call's deadline, retries included).
        on_ignored: `warn` or `fail` when a call sets a parameter the backend IGNOREs.
        retry_attempts: total attempts for retryable failures (1 = no retry).
        retry_base_delay_s / retry_max_delay_s: exponential backoff bounds, in seconds.
        failover_on: with a chain in `backend`, the error kinds that move on to the next
            backend (None: `agentport.policies.DEFAULT_FAILOVER_ON`).
        hedge_after_s: with a chain, start the next backend when the current one has not
            answered after this many seconds; the first success wins (None: no hedging).
        handover_on: with a chain, the error kinds on which a resumed session moves to the
            next member from a briefing (`agentport.policies.SessionHandover`; None: never).
        min_headroom: with a chain, pass over a member (not the last) whose provider last
            reported less than this share (0-1] of a usage window left
            (`agentport.policies.quota_status`; None: never).
        warm: how many idle agent processes a backend that can serve many calls per process
            keeps between calls (ACP agents, claude, codex, pi; docs/warm.md). None (default):
            none for a direct call, the workflows' default inside them; 0: never.
        options: per-backend option tables (`[llm.<backend>]`), keyed by canonical name.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    backend: str = "auto"
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: ReasoningEffort | None = None
    startup_timeout_s: float = Field(default=120.0, gt=0)
    idle_timeout_s: float = Field(default=300.0, gt=0)
    attempt_timeout_s: float | None = Field(default=None, gt=0)
    total_timeout_s: float = Field(default=1800.0, gt=0)
    on_ignored: IgnoredPolicy = "warn"
    retry_attempts: int = Field(default=3, ge=1)
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    retry_max_delay_s: float = Field(default=30.0, ge=0)
    failover_on: tuple[str, ...] | None = None
    hedge_after_s: float | None = Field(default=None, gt=0)
    min_headroom: float | None = Field(default=None, gt=0, le=1)
    handover_on: tuple[str, ...] | None = None
    warm: int | None = Field(default=None, ge=0)

    @field_validator("backend", mode="before")
    @classmethod
    def _chain(cls, value: Any) -> Any:
        # one name, a list (TOML) or a comma list (environment: a failover chain); every
        # member checked here, so `agentport config` names a typo as `complete` does
        from ._chain import parse_chain

        if isinstance(value, list | tuple | str):
            return ",".join(parse_chain(value))
        return value

    @field_validator("failover_on", "handover_on", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        from ._chain import as_chain
        from .policies import failover_kinds

        if value is None:
            return None
        names = as_chain(value)
        failover_kinds(names)
        return names

    @model_validator(mode="after")
    def _only_backend_tables(self) -> LLMSettings:
        from .catalog import resolve_backend

        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, Mapping):
                raise ValueError(unknown_setting(key, type(self).model_fields))
            try:
                resolve_backend(key)  # a table must be named after a backend
            except ProviderError as exc:
                raise ValueError(f"table [llm.{key}]: {exc.message}") from None
        return self

    def completion_config(self, **fields: Any) -> CompletionConfig:
        """The configured defaults of every call as a `CompletionConfig` (model, temperature,
        max_tokens, timeouts, IGNORED policy); *fields* override. Adapters merge each call's
        config over it (`agentport.core.merge_config`)."""
        base: dict[str, Any] = {name: getattr(self, name) for name in CALL_FIELDS}
        return CompletionConfig(**(base | fields))

    def options(self, backend: str) -> dict[str, Any]:
        """The `[llm.<backend>]` table (empty when absent)."""
        extra = self.model_extra or {}
        table = extra.get(backend, {})
        return dict(table) if isinstance(table, Mapping) else {}

    # dotted key ("backend", "openai_compat.base_url") -> (where it came from, project file?)
    _origins: dict[str, tuple[str, bool]] = PrivateAttr(default_factory=dict)

    def origin(self, key: str) -> str:
        """Where the dotted `[llm]` key was set: `argument`, `environment (...)`, a file path,
        or `defaults`."""
        return self._origins.get(key, ("defaults", False))[0]

    def from_project(self, key: str) -> bool:
        """True when the dotted `[llm]` key came from a project file (agentport.toml or
        pyproject.toml), so the user's environment keys must not follow it."""
        return self._origins.get(key, ("", False))[1]


def user_config_path() -> Path:
    """`$AGENTPORT_CONFIG_FILE`, else `$XDG_CONFIG_HOME/agentport/config.toml`."""
    explicit = os.environ.get("AGENTPORT_CONFIG_FILE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentport" / "config.toml"


class _NamedToml(TomlConfigSettingsSource):
    """A TOML source over bytes read once (`read_user_file`, `read_project_file`: a regular
    file, on one descriptor) that reports malformed files as one-line config errors."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        file: ProjectFile,
        header: tuple[str, ...] | None = None,
    ) -> None:
        self.file = file
        self.label = str(file.path)
        self.path = file.path
        self.known = frozenset(settings_cls.model_fields) | {"trusted_projects"}
        try:
            super().__init__(settings_cls, toml_file=file.path, toml_table_header=header)
        except tomllib.TOMLDecodeError as exc:
            raise ProviderError(ErrorKind.config, f"{self.label}: invalid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ProviderError(
                ErrorKind.config, f"{self.label}: not UTF-8 text (byte {exc.start})"
            ) from None
        except KeyError:
            # pydantic-settings raises when the file lacks the table (a pyproject.toml without
            # [tool.agentport]); such a file simply sets nothing.
            super().__init__(settings_cls, toml_file=None)

    def _parse(self, file_path: Any) -> dict[str, Any]:
        if self.file.data is None:  # no file, or one that appeared after it was judged
            return {}
        return tomllib.loads(self.file.data.decode("utf-8"))

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        data = self._parse(file_path)
        header = tuple(self.toml_table_header or ())
        if not header:
            data = canonical_tables(self.label, data)
        else:
            node: Any = data
            for key in header[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and isinstance(node.get(header[-1]), dict):
                node[header[-1]] = canonical_tables(self.label, node[header[-1]])
        top = self._node(data)
        if isinstance(top, dict):
            warn_unknown(self.label, header, top, self.known)
        return data

    def _node(self, data: dict[str, Any]) -> Any:
        """The part of the file this source reads (the top level, or `[tool.agentport]`)."""
        node: Any = data
        for key in self.toml_table_header or ():
            node = node.get(key) if isinstance(node, dict) else None
        return node


def warn_unknown(
    label: str, header: tuple[str, ...], data: Mapping[str, Any], known: frozenset[str]
) -> None:
    """One `UnknownConfigWarning` line per top-level table or key of a config file that no
    settings table reads (e.g. a typo `[lm]`), naming the file, the table and the closest
    known name."""
    import difflib
    import json
    import warnings

    prefix = "".join(f"{part}." for part in header)
    for key, value in data.items():
        if key in known:
            continue
        bare = key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else None
        shown = bare or json.dumps(key)  # a quoted TOML key stays on one line
        what = f"table [{prefix}{shown}]" if isinstance(value, Mapping) else f"key {prefix}{shown}"
        close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
        if close:
            name = close[0] if close[0] == "trusted_projects" else f"[{prefix}{close[0]}]"
            hint = f"; did you mean {name}?"
        elif key in LLMSettings.model_fields:
            hint = f"; did you mean {key} in the [{prefix}llm] table?"
        else:
            hint = f" (tables: {', '.join(sorted(known - {'trusted_projects'}))})"
        warnings.warn(f"{label}: unknown {what} ignored{hint}", UnknownConfigWarning, 3)


class _ProjectToml(_NamedToml):
    """A project file: unless it is trusted (`read_project_file`: its folder trusted, the
    file itself no link), only models and timeouts are kept."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        file: ProjectFile,
        header: tuple[str, ...] | None = None,
    ) -> None:
        self.dropped: list[str] = []
        super().__init__(settings_cls, file, header)
        warn_dropped(self.label, self.dropped, file.why)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        data: dict[str, Any] = super()._read_file(file_path)  # table names canonical
        if self.file.trusted:
            return data
        node = self._node(data)
        if isinstance(node, dict) and isinstance(node.get("llm"), Mapping):
            node["llm"], self.dropped = filter_untrusted(
                node["llm"], self.path.parent, known=LLMSettings.model_fields
            )
        if isinstance(node, dict) and isinstance(node.get("budget"), Mapping):
            node["budget"], dropped = narrow_budget(node["budget"], _user_budget(), _measure)
            self.dropped += dropped
        if isinstance(node, dict) and "temporal" in node:  # which cluster runs your calls
            node.pop("temporal")
            self.dropped.append("temporal")
        if isinstance(node, dict) and "web" in node:  # engine URL sees every query (docs/web.md)
            node.pop("web")
            self.dropped.append("web")
        return data


def _user_budget() -> dict[str, Any]:
    """The `[budget]` of the user's own file (raw), which a project's may only lower."""
    try:
        data = user_toml(user_config_path())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    table = canonical_tables("user config", data).get("budget")
    return dict(table) if isinstance(table, Mapping) else {}


def _measure(key: str, value: Any) -> float:
    from .policies import parse_duration

    return float(parse_duration(value)) if key == "wall" else float(value)


class TemporalSettings(BaseModel):
    """The `[temporal]` table.

    Attributes:
        address: the Temporal frontend, `HOST:PORT` (None: pass `--temporal`).
        namespace: the Temporal namespace.
        queue_prefix: task queues are `<prefix>.<backend>` and `<prefix>.workflows`.
        concurrency: calls of a backend one worker runs at once, by backend name
            (`{codex = 2}`); unnamed backends take their kind's default
            (`agentport.temporal.DEFAULT_CONCURRENCY`).
        cluster_concurrency: calls of a backend the whole cluster runs at once, by
            backend name (`{codex = 2}`), whatever the number of workers; unnamed
            backends have no cluster-wide cap (docs/deployment.md).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = None
    namespace: str = "default"
    queue_prefix: str = Field(default="agentport", min_length=1)
    concurrency: dict[str, int] = Field(default_factory=dict)
    cluster_concurrency: dict[str, int] = Field(default_factory=dict)

    @field_validator("concurrency", "cluster_concurrency")
    @classmethod
    def _caps(cls, value: dict[str, int]) -> dict[str, int]:
        from .catalog import resolve_backend

        for name, cap in value.items():
            if cap < 1:
                raise ValueError(f"{name}: must be >= 1")
            try:
                resolve_backend(name)
            except ProviderError as exc:
                raise ValueError(exc.message) from None
        return value


class Settings(BaseSettings):
    """All agentport settings: the `llm` table and the `temporal` table."""

    model_config = SettingsConfigDict(
        env_prefix="AGENTPORT_",
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="ignore",
        frozen=True,
    )

    llm: LLMSettings = LLMSettings()
    temporal: TemporalSettings = TemporalSettings()
    budget: BudgetSettings = BudgetSettings()  # the workflows' ceilings
    web: WebSettings = WebSettings()  # agentport's own search and fetch

    _cwd: ClassVar[Path | None] = None
    _sources: ClassVar[list[tuple[str, PydanticBaseSettingsSource]]] = []
    # dotted key of the budget / web / temporal tables -> where it came from (`origin`)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    def origin(self, dotted: str) -> str:
        """Where a dotted key was set (`budget.calls`, `web.searxng_url`,
        `temporal.concurrency.codex`, `llm.backend`): `argument`, `environment (VAR)`, a
        file path, or `defaults`."""
        table, _, key = dotted.partition(".")
        if table == "llm":
            return self.llm.origin(key)
        return self._origins.get(dotted, "defaults")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        cwd = cls._cwd or Path.cwd()
        user = user_config_path()
        if os.environ.get("AGENTPORT_CONFIG_FILE") and not user.exists():
            raise ProviderError(ErrorKind.config, f"AGENTPORT_CONFIG_FILE: {user}: file not found")
        folder = is_trusted(cwd, trusted_entries(user))
        # each file's trust is its own (a symlinked agentport.toml never vouches for the
        # pyproject.toml beside it): decided and read on one descriptor
        own = read_project_file(cwd / "agentport.toml", folder_trusted=folder, user_file=user)
        py = read_project_file(cwd / "pyproject.toml", folder_trusted=folder, user_file=user)
        named: list[tuple[str, PydanticBaseSettingsSource]] = [
            ("argument", init_settings),
            ("environment", env_settings),
            ("agentport.toml", _ProjectToml(settings_cls, own)),
            ("pyproject.toml", _ProjectToml(settings_cls, py, ("tool", "agentport"))),
            (str(user), _NamedToml(settings_cls, read_user_file(user))),
        ]
        cls._sources = named
        return tuple(source for _, source in named)


def _describe(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _lookup(data: Mapping[str, Any], loc: tuple[str | int, ...]) -> bool:
    node: Any = data
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _source_of(loc: tuple[str | int, ...]) -> str:
    for label, source in Settings._sources:
        try:
            data = source()
        except Exception:  # a source that fails to load cannot have supplied the value
            continue
        if _lookup(data, loc):
            if label == "environment":
                return "environment (AGENTPORT_" + "_".join(str(p).upper() for p in loc) + ")"
            return label
    return "defaults"


def _origins() -> dict[str, tuple[str, bool]]:
    """Dotted `[llm]` key -> (first source that set it, whether that is a project file)."""
    out: dict[str, tuple[str, bool]] = {}
    for label, source in Settings._sources:
        try:
            data = source()
        except Exception:  # a source that fails to load set nothing
            continue
        llm = data.get("llm") if isinstance(data, Mapping) else None
        if not isinstance(llm, Mapping):
            continue
        where = getattr(source, "label", label)
        project = isinstance(source, _ProjectToml)
        for key, value in llm.items():
            keys = [f"{key}.{sub}" for sub in value] if isinstance(value, Mapping) else [key]
            for dotted in keys:
                if label == "environment":
                    env = "AGENTPORT_LLM_" + dotted.replace(".", "_").upper()
                    out.setdefault(dotted, (f"environment ({env})", False))
                else:
                    out.setdefault(dotted, (where, project))
    return out


#: the tables besides `[llm]` whose keys `Settings.origin` knows
TABLES = ("budget", "web", "temporal")


def _table_origins() -> dict[str, str]:
    """Dotted `budget.` / `web.` / `temporal.` key -> the first source that set it (a
    sub-table such as `[temporal.concurrency]` gives one key per entry)."""
    out: dict[str, str] = {}
    for label, source in Settings._sources:
        try:
            data = source()
        except Exception:  # a source that fails to load set nothing
            continue
        where = getattr(source, "label", label)
        for table in TABLES:
            values = data.get(table) if isinstance(data, Mapping) else None
            if not isinstance(values, Mapping):
                continue
            for key, value in values.items():
                keys = [f"{key}.{sub}" for sub in value] if isinstance(value, Mapping) else [key]
                for dotted in keys:
                    env = f"environment (AGENTPORT_{table.upper()}_{str(key).upper()})"
                    out.setdefault(f"{table}.{dotted}", env if label == "environment" else where)
    return out


def _register_secrets(llm: LLMSettings) -> None:
    """Configured keys (`api_key`, tokens, secret-named `env` and `headers` entries) are
    redacted from every error, warning, report and log from now on."""
    for table in (llm.model_extra or {}).values():
        if not isinstance(table, Mapping):
            continue
        flat = {str(k): v for k, v in table.items()}
        for name in ("env", "headers"):
            if isinstance(flat.get(name), Mapping):
                flat |= {f"{name}.{k}": v for k, v in flat[name].items()}
        strings = {k: v.get_secret_value() if hasattr(v, "get_secret_value") else v
                   for k, v in flat.items()}  # fmt: skip
        register_secret(*secret_values({k: v for k, v in strings.items() if isinstance(v, str)}))
        auth = {k: v for k, v in strings.items() if k.lower() == "headers.authorization"}
        register_secret(*(v for v in auth.values() if isinstance(v, str)))


def _without_strangers_credentials(settings: Settings) -> Settings:
    """*settings* without the credentials another source would hand to an endpoint a
    project file chose (`agentport._trust.strip_strangers_credentials`)."""
    llm = settings.llm
    update, origins = strip_strangers_credentials(llm.model_extra or {}, llm._origins)
    if not update:
        return settings
    narrowed = llm.model_copy(update=update)
    narrowed._origins = origins
    return settings.model_copy(update={"llm": narrowed})


def load_settings(cwd: Path | None = None, **llm: Any) -> Settings:
    """Load settings from every source (see module docstring).

    Keyword arguments are explicit `[llm]` values (None values are dropped).
    Raises `ProviderError(ErrorKind.config)` naming the source and field on bad input.
    """
    explicit = {k: v for k, v in llm.items() if v is not None}
    Settings._cwd = cwd
    try:
        settings = Settings(llm=explicit) if explicit else Settings()
        settings.llm._origins = _origins()
        settings = _without_strangers_credentials(settings)
        settings._origins = _table_origins()
        _register_secrets(settings.llm)
        return settings
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        source = _source_of(loc)
        shown = "input" in err and not isinstance(err["input"], dict)
        got = f" (got {err['input']!r})" if shown else ""
        msg = str(err["msg"]).removeprefix("Value error, ")  # pydantic's, not the user's words
        raise ProviderError(ErrorKind.config, f"{source}: {_describe(loc)}: {msg}{got}") from None
    finally:
        Settings._cwd = None


def run_budget(spec: str | None, *, source: str = "--budget") -> Budget | None:
    """The budget of one workflow run: *spec* (`agentport.policies.parse_budget` syntax, e.g.
    `calls=40,wall=10m`; `agentport research --budget`, the MCP tools' `budget`) key by key
    over the configured `[budget]` table; `none` drops the table; None = the table alone.
    Raises `ValueError` (one line naming *source* and the key) or `ProviderError(config)`
    (naming the file and field)."""
    from .policies import merge_budgets, parse_budget

    configured = load_settings().budget.to_budget()
    if spec is None:
        return configured
    given = parse_budget(spec, source=source)
    return None if given is None else merge_budgets(configured, given)
