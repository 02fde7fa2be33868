"""Shared pieces of every CLI spec's least-privilege mapping (issue 15): the user's
environment opt-in, refusing a policy a CLI cannot enforce, and which parent variables a
backend may read.

A spec's `build` turns `CompletionConfig.tools` into the CLI's real flags or settings, or
raises `refuse(...)`: a safety parameter is never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core import ErrorKind, ProviderError, Sandbox, ToolPolicy

__all__ = ["endpoint_passthrough", "inherit_env", "not_a_flag", "policy_text", "refuse"]


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
