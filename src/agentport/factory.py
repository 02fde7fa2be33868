"""From `llm.backend` to a ready adapter or runtime.

`resolve_backend(name)` maps names and aliases to canonical names (the catalog owns them);
`create_llm_adapter` / `create_agent_runtime` load settings (see `agentport.config`), resolve
`auto`, import the backend module lazily and wrap adapters in the one retry policy.

`auto` picks the first available backend in catalog `auto_priority` order: an agent CLI whose
executable is on PATH, then backends whose Python extra is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
from pathlib import Path
from typing import Any, cast

from ._guard import ensure_real_backends_allowed
from .catalog import all_backends, get_capability, resolve_backend
from .config import LLMSettings, load_settings
from .core import AgentRuntime, BackendCapability, BackendKind, ErrorKind, LLMAdapter, ProviderError
from .retry import RetryingAdapter, RetryPolicy

__all__ = [
    "create_agent_runtime",
    "create_llm_adapter",
    "installed_version",
    "is_installed",
    "resolve_auto",
    "resolve_backend",
]


def is_installed(capability: BackendCapability) -> bool:
    """Executable on PATH (cli) and required Python modules importable."""
    if capability.executable and shutil.which(capability.executable) is None:
        return False
    return all(importlib.util.find_spec(m) is not None for m in capability.requires_modules)


def installed_version(capability: BackendCapability, timeout_s: float = 10.0) -> str | None:
    """`<executable> --version`'s first line, or None when absent or silent."""
    exe = capability.executable and shutil.which(capability.executable)
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=timeout_s,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def resolve_auto() -> str:
    """The first available backend in `auto` order, or `ProviderError(config)` saying how to
    configure one."""
    ranked = sorted(
        (c for c in all_backends() if c.auto_priority is not None),
        key=lambda c: cast(int, c.auto_priority),
    )
    for capability in ranked:
        if is_installed(capability):
            return capability.name
    tried = ", ".join(c.name for c in ranked) or "none registered"
    raise ProviderError(
        ErrorKind.config,
        "llm.backend is 'auto' but no backend is available (tried: "
        f'{tried}); set one with AGENTPORT_LLM_BACKEND=<name>, `[llm] backend = "<name>"` in '
        "agentport.toml, or install an agent CLI or `agentport[local]`",
    )


def _settings(backend: str | None, cwd: Path | None, overrides: dict[str, Any]) -> LLMSettings:
    llm = load_settings(cwd, backend=backend, **overrides).llm
    name = resolve_auto() if llm.backend.strip().lower() == "auto" else resolve_backend(llm.backend)
    return llm.model_copy(update={"backend": name})


def _load(capability: BackendCapability, hook: str) -> Any:
    missing = [m for m in capability.requires_modules if importlib.util.find_spec(m) is None]
    if missing:
        extra = f"pip install 'agentport[{capability.extra}]'" if capability.extra else ""
        raise ProviderError(
            ErrorKind.not_installed,
            f"backend {capability.name!r} needs {', '.join(missing)}; "
            f"{extra or capability.install_hint}",
            backend=capability.name,
        )
    if capability.kind is not BackendKind.test:
        ensure_real_backends_allowed(capability.name)
    return getattr(importlib.import_module(capability.module), hook)


def create_llm_adapter(
    backend: str | None = None,
    *,
    cwd: Path | None = None,
    retry: bool = True,
    **overrides: Any,
) -> LLMAdapter:
    """An `LLMAdapter` for *backend* (or `llm.backend` from configuration).

    `overrides` are `[llm]` settings (`model=`, `total_timeout_s=`, `openai_compat={...}`),
    highest priority. With `retry=True` the adapter is wrapped in the configured
    `RetryPolicy`. Raises `ProviderError` (config, not_installed) on bad configuration.
    """
    settings = _settings(backend, cwd, overrides)
    capability = get_capability(settings.backend)
    adapter = cast(LLMAdapter, _load(capability, "create_adapter")(capability, settings))
    if not retry or settings.retry_attempts <= 1:
        return adapter
    policy = RetryPolicy(
        attempts=settings.retry_attempts,
        base_delay_s=settings.retry_base_delay_s,
        max_delay_s=settings.retry_max_delay_s,
    )
    return RetryingAdapter(adapter, policy)


def create_agent_runtime(
    backend: str | None = None, *, cwd: Path | None = None, **overrides: Any
) -> AgentRuntime:
    """An `AgentRuntime` for *backend*; `ErrorKind.unsupported` for completion-only backends."""
    settings = _settings(backend, cwd, overrides)
    capability = get_capability(settings.backend)
    if not capability.supports_runtime:
        raise ProviderError(
            ErrorKind.unsupported,
            f"backend {capability.name!r} is completion-only; it has no AgentRuntime",
            backend=capability.name,
        )
    return cast(AgentRuntime, _load(capability, "create_runtime")(capability, settings))
