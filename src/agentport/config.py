"""Configuration: `llm.backend`, `llm.model`, timeouts, retries and per-backend options.

Resolved in this order (first wins, tables merged key by key):

1. explicit arguments (`load_settings(backend="codex")`, `create_llm_adapter("codex")`);
2. environment: `AGENTPORT_LLM_BACKEND`, `AGENTPORT_LLM_MODEL`, `AGENTPORT_LLM_TOTAL_TIMEOUT_S`, …;
3. `./agentport.toml`, table `[llm]`;
4. `./pyproject.toml`, table `[tool.agentport.llm]`;
5. the user's file: `$AGENTPORT_CONFIG_FILE`, else `$XDG_CONFIG_HOME/agentport/config.toml`
   (default `~/.config/agentport/config.toml`), table `[llm]`;
6. defaults (`backend = "auto"`).

Per-backend options live in a sub-table named after the backend, e.g. `[llm.openai_compat]`
`base_url = "http://127.0.0.1:8080/v1"`; each backend validates its own table.

Bad input raises `ProviderError(ErrorKind.config)` with one line naming the source and field.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .core import CompletionConfig, ErrorKind, IgnoredPolicy, ProviderError

__all__ = ["LLMSettings", "Settings", "load_settings", "user_config_path"]


class LLMSettings(BaseModel):
    """The `[llm]` table.

    Attributes:
        backend: a backend name or alias, or `auto`.
        model: model id passed to the backend, or None for its default.
        startup_timeout_s / idle_timeout_s / total_timeout_s: see `CompletionConfig`.
        on_ignored: `warn` or `fail` when a call sets a parameter the backend IGNOREs.
        retry_attempts: total attempts for retryable failures (1 = no retry).
        retry_base_delay_s / retry_max_delay_s: exponential backoff bounds, in seconds.
        options: per-backend option tables (`[llm.<backend>]`), keyed by canonical name.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    backend: str = "auto"
    model: str | None = None
    startup_timeout_s: float = Field(default=120.0, gt=0)
    idle_timeout_s: float = Field(default=300.0, gt=0)
    total_timeout_s: float = Field(default=1800.0, gt=0)
    on_ignored: IgnoredPolicy = "warn"
    retry_attempts: int = Field(default=3, ge=1)
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    retry_max_delay_s: float = Field(default=30.0, ge=0)

    @model_validator(mode="after")
    def _only_backend_tables(self) -> LLMSettings:
        from .catalog import resolve_backend

        for key, value in (self.model_extra or {}).items():
            if not isinstance(value, Mapping):
                raise ValueError(f"unknown setting {key!r}")
            try:
                resolve_backend(key)  # a table must be named after a backend
            except ProviderError as exc:
                raise ValueError(f"table [llm.{key}]: {exc.message}") from None
        return self

    def completion_config(self, **fields: Any) -> CompletionConfig:
        """A `CompletionConfig` carrying these settings' model, timeouts and IGNORED policy;
        *fields* override."""
        base: dict[str, Any] = {
            "model": self.model,
            "startup_timeout_s": self.startup_timeout_s,
            "idle_timeout_s": self.idle_timeout_s,
            "total_timeout_s": self.total_timeout_s,
            "on_ignored": self.on_ignored,
        }
        return CompletionConfig(**(base | fields))

    def options(self, backend: str) -> dict[str, Any]:
        """The `[llm.<backend>]` table (empty when absent)."""
        extra = self.model_extra or {}
        table = extra.get(backend, {})
        return dict(table) if isinstance(table, Mapping) else {}


def user_config_path() -> Path:
    """`$AGENTPORT_CONFIG_FILE`, else `$XDG_CONFIG_HOME/agentport/config.toml`."""
    explicit = os.environ.get("AGENTPORT_CONFIG_FILE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentport" / "config.toml"


class _NamedToml(TomlConfigSettingsSource):
    """A TOML source that reports malformed files as one-line config errors."""

    def __init__(
        self,
        settings_cls: type[BaseSettings],
        path: Path,
        header: tuple[str, ...] | None = None,
        label: str | None = None,
    ) -> None:
        self.label = label or str(path)
        self.path = path
        if path.exists() and not path.is_file():
            raise ProviderError(ErrorKind.config, f"{self.label}: is not a file")
        try:
            super().__init__(settings_cls, toml_file=path, toml_table_header=header)
        except tomllib.TOMLDecodeError as exc:
            raise ProviderError(ErrorKind.config, f"{self.label}: invalid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ProviderError(
                ErrorKind.config, f"{self.label}: not UTF-8 text (byte {exc.start})"
            ) from None
        except OSError as exc:
            raise ProviderError(
                ErrorKind.config, f"{self.label}: cannot read: {exc.strerror}"
            ) from None
        except KeyError:
            # pydantic-settings raises when the file lacks the table (a pyproject.toml without
            # [tool.agentport]); such a file simply sets nothing.
            super().__init__(settings_cls, toml_file=None)


class Settings(BaseSettings):
    """All agentport settings; today only the `llm` table."""

    model_config = SettingsConfigDict(
        env_prefix="AGENTPORT_",
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="ignore",
        frozen=True,
    )

    llm: LLMSettings = LLMSettings()

    _cwd: ClassVar[Path | None] = None
    _sources: ClassVar[list[tuple[str, PydanticBaseSettingsSource]]] = []

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
        named: list[tuple[str, PydanticBaseSettingsSource]] = [
            ("argument", init_settings),
            ("environment", env_settings),
            ("agentport.toml", _NamedToml(settings_cls, cwd / "agentport.toml")),
            (
                "pyproject.toml",
                _NamedToml(settings_cls, cwd / "pyproject.toml", header=("tool", "agentport")),
            ),
            (str(user), _NamedToml(settings_cls, user)),
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


def load_settings(cwd: Path | None = None, **llm: Any) -> Settings:
    """Load settings from every source (see module docstring).

    Keyword arguments are explicit `[llm]` values (None values are dropped).
    Raises `ProviderError(ErrorKind.config)` naming the source and field on bad input.
    """
    explicit = {k: v for k, v in llm.items() if v is not None}
    Settings._cwd = cwd
    try:
        return Settings(llm=explicit) if explicit else Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        source = _source_of(loc)
        got = (
            f" (got {err['input']!r})"
            if "input" in err and not isinstance(err["input"], dict)
            else ""
        )
        raise ProviderError(
            ErrorKind.config, f"{source}: {_describe(loc)}: {err['msg']}{got}"
        ) from None
    finally:
        Settings._cwd = None
