"""Shared pieces of every CLI spec's least-privilege mapping: the user's
environment opt-in, refusing a policy a CLI cannot enforce, and which parent variables a
backend may read.

A spec's `build` turns `CompletionConfig.tools` into the CLI's real flags or settings, or
raises `refuse(...)`: a safety parameter is never silently dropped.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core import ErrorKind, ProviderError, Sandbox, ToolPolicy
from ..transport import read_regular

__all__ = [
    "codex_config_env",
    "endpoint_passthrough",
    "inherit_env",
    "not_a_flag",
    "opencode_config_env",
    "policy_text",
    "refuse",
    "withheld_hint",
]


def inherit_env(options: Mapping[str, Any]) -> tuple[str, ...]:
    """`[llm.<backend>] inherit_env`: parent variable names (or `fnmatch` patterns such as
    `AWS_*`) the user lets through to the child. Raises `ProviderError(config)` naming the
    field when it is not a list of strings."""
    value = options.get("inherit_env", ())
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ProviderError(
            ErrorKind.config,
            f"inherit_env must be a list of variable names, got {type(value).__name__}",
            retryable=False,
        )
    names = tuple(str(v) for v in value)
    if any(not n or "=" in n for n in names):
        raise ProviderError(
            ErrorKind.config, f"inherit_env: not a variable name in {names!r}", retryable=False
        )
    return names


def endpoint_passthrough(options: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    """*names* (the CLI's own key and provider variables) when the CLI talks to its own
    provider; `()` when `[llm.<backend>] base_url` is set: a key from the environment is then
    never sent to that endpoint unless the user sets `api_key` or lists it in `inherit_env`."""
    return () if options.get("base_url") else tuple(names)


def policy_text(tools: ToolPolicy) -> str:
    """The policy in words, for error messages."""
    listed = "CLI default" if tools.allowed_tools is None else list(tools.allowed_tools)
    sandbox = "CLI default" if tools.sandbox is None else tools.sandbox.value
    return f"tools {listed}, sandbox {sandbox}"


def refuse(backend: str, tools: ToolPolicy, why: str) -> ProviderError:
    """`ProviderError(unsupported)`: *backend* cannot enforce *tools* (*why*). Safety
    parameters fail closed whatever `on_ignored` says."""
    return ProviderError(
        ErrorKind.unsupported,
        f"{backend} cannot enforce {policy_text(tools)}: {why}",
        backend=backend,
        retryable=False,
        details={"params": ["sandbox", "tool_restriction"]},
    )


def sandbox_at_most(tools: ToolPolicy, ceiling: Sandbox) -> bool:
    """True when the policy's sandbox is set and no wider than *ceiling*."""
    order = (Sandbox.read_only, Sandbox.workspace_write, Sandbox.full)
    return tools.sandbox is not None and order.index(tools.sandbox) <= order.index(ceiling)


def not_a_flag(what: str, value: str) -> str:
    """*value* unchanged, for a positional argument that has no `--opt=value` form. Raises
    `ProviderError(invalid_request)` when it starts with `-` (it would be read as a flag)."""
    if value.startswith("-"):
        raise ProviderError(
            ErrorKind.invalid_request,
            f"{what} {value[:40]!r} starts with '-' and would be read as a flag",
            retryable=False,
        )
    return value


_ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_VAR = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")

_CODEX_CONFIG_LIMIT = 4 * 1024 * 1024


def codex_config_env(home: str | None) -> tuple[str, ...]:
    """The variables codex's own user config names (`<CODEX_HOME>/config.toml`, default
    `~/.codex`): each `model_providers.<id>.env_key` and the variables of its
    `env_http_headers`. codex reads them itself, so they pass the allow-list (a custom
    provider set up the way codex's docs describe keeps working). An unreadable file names
    none."""
    root = Path(home).expanduser() if home else Path.home() / ".codex"
    try:  # a regular file only, bounded: a named pipe there must not block the call
        data, _ = read_regular(root / "config.toml", _CODEX_CONFIG_LIMIT)
        config = tomllib.loads(data.decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    names: list[str] = []
    providers = config.get("model_providers")
    for provider in providers.values() if isinstance(providers, dict) else ():
        if not isinstance(provider, dict):
            continue
        if isinstance(provider.get("env_key"), str):
            names.append(provider["env_key"])
        headers = provider.get("env_http_headers")
        if isinstance(headers, dict):
            names += [v for v in headers.values() if isinstance(v, str)]
    return tuple(n for n in names if n and "=" not in n)


def opencode_config_env(explicit: str | None) -> tuple[str, ...]:
    """The variables opencode's own config files substitute (`{env:NAME}`): the user's
    `~/.config/opencode/opencode.json[c]` and the file `OPENCODE_CONFIG` names."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "opencode"
    files = [base / "opencode.json", base / "opencode.jsonc", base / "config.json"]
    if explicit:
        files.append(Path(explicit).expanduser())
    names: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")[: 1 << 20]
        except (OSError, UnicodeDecodeError):
            continue
        names += _ENV_REF.findall(text)
    return tuple(dict.fromkeys(names))


def withheld_hint(
    error: ProviderError, backend: str, parent: Mapping[str, str], child: Mapping[str, str]
) -> ProviderError:
    """*error* with a note when its message or stderr names a variable the caller has but
    agentport kept from the CLI (the environment allow-list), and how to let it through."""
    text = f"{error.message}\n{error.stderr_tail or ''}"
    withheld = sorted({n for n in _VAR.findall(text) if n in parent and n not in child})
    if not withheld:
        return error
    names = ", ".join(withheld)
    listed = json.dumps(withheld)
    return error.replace(
        message=f"{error.message} (agentport withheld {names} from {backend}'s environment; "
        f"let it through with [llm.{backend}] inherit_env = {listed} or AGENTPORT_INHERIT_ENV)"
    )
