"""codex's model catalog, rewritten so that a restricted tool policy holds for every model.

Why (measured on codex-cli 0.171.0 against FakeModelServer): codex reads per-model
metadata from a model catalog (`codex debug models` prints it; `-c model_catalog_json=FILE`
replaces it). For its default model `gpt-6.2-sol`, and every other catalog model but one,
the metadata says `tool_mode = "code_mode_only"`, `multi_agent_version = "v2"`,
`apply_patch_tool_type = "freeform"` and `use_responses_lite = true`. The request then
carries its tools in an `additional_tools` input item instead of the Responses `tools`
field: `exec` (a JavaScript isolate whose nested tools include `apply_patch`),
`collaboration.spawn_agent` and its siblings, and no `web_search` even with
`web_search="live"`. No `features.*` flag removes them (all 73 enabled features were turned
off one by one: only `sleep_tool` and `view_image` change anything).

What each catalog field does to the request (same measurements):
`tool_mode = null` removes `exec` (code mode) and puts the nested tools at top level;
`multi_agent_version = null` removes the `collaboration` namespace (`spawn_agent`, ...);
`apply_patch_tool_type = null` removes `apply_patch`; `experimental_supported_tools = []`
removes `clock`, `request_user_input_async`, `send_message_to_user_async`;
`use_responses_lite = false` moves the tools back into the `tools` field and makes
`web_search="live"` offer `{"type": "web_search"}`. With all of them and the flags of
`codex.tool_flags`, `gpt-6.2-sol` gets `request_user_input` and `view_image` only (plus
`web_search` when asked), the same as a model codex has no metadata for.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core import ErrorKind, ProviderError, TimeoutWhich
from ..transport import ProcessRequest, run_capture

__all__ = ["catalog_flags", "load_catalog", "restrict"]

# fields set on every model when the policy gives no tools
NO_TOOLS: dict[str, Any] = {
    "tool_mode": None,
    "multi_agent_version": None,
    "apply_patch_tool_type": None,
    "experimental_supported_tools": [],
    "supports_search_tool": False,
    "node_repl_disabled": True,
    "use_responses_lite": False,
}
# ... and when the call asks for web search (`web_search` is not offered in "lite" requests)
WEB: dict[str, Any] = {"use_responses_lite": False}
# tool-related fields known to add no tool once `NO_TOOLS` and `codex.tool_flags` apply
_KNOWN = set(NO_TOOLS) | {
    "web_search_tool_type",  # the shape of web_search, offered only with web_search="live"
    "shell_type",  # the shell tool; features.shell_tool=false removes it
    "multi_agent_reasoning_effort",
    "node_repl_auto_review_required",
    "supports_parallel_tool_calls",
    "allow_only_codex_cloud_agent_orchestrator",
    "allow_only_chatgpt_workspace_executor",
}
_TOOLISH = re.compile(r"tool|agent|repl|patch|shell|exec|browser|computer|sandbox|mcp")
_MAX_BYTES = 64 * 1024 * 1024
_TIMEOUT_S = 60.0
_cache: dict[tuple[Any, ...], dict[str, Any]] = {}


def catalog_flags(path: Path) -> list[str]:
    """`-c model_catalog_json="PATH"` (codex reads it at startup, replacing its catalog)."""
    return ["-c", f"model_catalog_json={json.dumps(str(path))}"]


def restrict(
    catalog: Mapping[str, Any], *, no_tools: bool, web_search: bool, model: str | None
) -> dict[str, Any]:
    """*catalog* (`{"models": [{"slug": ..., ...}, ...]}`, the shape `codex debug models`
    prints) with `NO_TOOLS` set on every model when *no_tools*, `WEB` when *web_search*;
    order and every other field kept, so codex's default model stays the same.

    Raises `ProviderError(unsupported)` naming the model when the catalog is not that shape,
    or when the entry of *model* (every entry when *model* is None: codex picks) has a
    tool-related field this module does not know with a value that is not empty/false/null:
    a newer codex may have added a tool we cannot turn off, so the call fails closed."""
    who = f"model {model!r}" if model else "codex's default model"
    models = catalog.get("models")
    if not isinstance(models, list) or not models or not all(isinstance(m, dict) for m in models):
        raise _unsupported(who, "its model catalog is not a non-empty list of models")
    changes = (NO_TOOLS if no_tools else {}) | (WEB if web_search else {})
    out = [{**m, **changes} for m in models]
    if no_tools:
        for entry in out:
            if model and entry.get("slug") != model:
                continue
            unknown = sorted(
                k for k, v in entry.items() if _TOOLISH.search(k) and k not in _KNOWN and v
            )
            if unknown:
                name = f"model {entry.get('slug')!r}"
                raise _unsupported(name, f"unknown tool fields in its metadata: {unknown}")
    return {**catalog, "models": out}


async def load_catalog(
    executable: str,
    flags: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    who: str,
    *,
    startup_timeout_s: float = _TIMEOUT_S,
    idle_timeout_s: float = _TIMEOUT_S,
    deadline: float | None = None,
) -> dict[str, Any]:
    """codex's model catalog: `EXECUTABLE debug models FLAGS` (the same provider flags and
    environment as the run, so it is the catalog the run would use), parsed; cached per
    executable (path, size, mtime), flags and `CODEX_HOME`/`HOME` for the process's life.

    The probe runs through the one runner (guardian, process-group kill) within the call's
    own limits: *startup_timeout_s* / *idle_timeout_s* and the whole-call *deadline*
    (`time.monotonic()`), each capped at 60 s. Raises `ProviderError(timeout)` naming the
    probe when it runs over one of them, `ProviderError(unsupported)` naming *who* when codex
    cannot print the catalog (an older codex, a broken install): without it the tools
    cannot be turned off."""
    try:
        stat = os.stat(executable)  # one syscall: faster in place than a worker thread
        key: tuple[Any, ...] = (executable, stat.st_size, stat.st_mtime_ns, tuple(flags))
    except OSError:
        key = (executable, tuple(flags))
    key += (env.get("CODEX_HOME", ""), env.get("HOME", ""))
    if key in _cache:
        return _cache[key]
    total = _TIMEOUT_S if deadline is None else min(_TIMEOUT_S, deadline - time.monotonic())
    if total <= 0:
        raise _probe_timeout("the call's deadline ran out before it started", "total")
    request = ProcessRequest(
        argv=[executable, "debug", "models", *flags],
        env=env,
        cwd=cwd,
        startup_timeout_s=min(startup_timeout_s, _TIMEOUT_S),
        idle_timeout_s=min(idle_timeout_s, _TIMEOUT_S),
        total_timeout_s=total,
        grace_s=1.0,
        linger_s=0.0,
    )
    done, stdout = await run_capture(request, _MAX_BYTES)
    if done.error is not None and done.error.kind is ErrorKind.timeout:
        raise _probe_timeout(str(done.error), done.error.timeout or "total")
    if done.error is not None:
        raise _unsupported(who, f"`codex debug models` did not run ({done.error})")
    if done.exit_code != 0:
        tail = done.stderr_tail.strip().splitlines()[-1:] or ["no output"]
        raise _unsupported(who, f"`codex debug models` failed: {tail[0][:200]}")
    try:
        catalog = json.loads(stdout)
    except (ValueError, RecursionError):
        raise _unsupported(who, "`codex debug models` printed no JSON") from None
    if not isinstance(catalog, dict):
        raise _unsupported(who, "`codex debug models` printed no JSON object")
    _cache[key] = catalog
    return catalog


def _probe_timeout(why: str, which: TimeoutWhich) -> ProviderError:
    return ProviderError(
        ErrorKind.timeout,
        f"codex's model-catalog probe (`codex debug models`) was stopped: {why}; no call made",
        backend="codex",
        timeout=which,
    )


def _unsupported(who: str, why: str) -> ProviderError:
    return ProviderError(
        ErrorKind.unsupported,
        f"codex cannot turn off the tools of {who}: {why}; no call made "
        "(opt in to codex's own tools with ToolPolicy.cli_defaults())",
        backend="codex",
        retryable=False,
        details={"params": ["sandbox", "tool_restriction"]},
    )
