"""Goose (`goose run --output-format stream-json`), as one `BackendSpec`.

Not run here: built from goose's documentation and source (block/goose:
documentation/docs/guides/goose-cli-commands.md and environment-variables.md,
documentation/docs/getting-started/providers.md; crates/goose-cli/src/session/mod.rs for the
stream-json shapes), and tested
against a fake CLI that replays those shapes (`verified_against = None`).

Facts used: the prompt is read from stdin with `-i -`; `--system TEXT` adds system
instructions; `--max-turns N`; `--no-session` stores nothing, `--name NAME --resume` continues
a named session; stream-json is one object per line tagged `type` (`message`, `notification`,
`error`, `complete`) and a headless run ends with exactly one `error` or `complete` line;
failures also print `Error: …` to stderr and exit 1. The default `GOOSE_MODE` (smart_approve)
aborts a headless run at the first tool confirmation; agentport sets the mode from the tool
policy: no tools or read_only -> `chat` (no tools at all, the default), full -> `auto`. The
endpoint is provider `openai` with `OPENAI_HOST` (scheme://host:port) and `OPENAI_BASE_PATH`
(path + `chat/completions`).

Options (`[llm.goose]`): `base_url` (an OpenAI-compatible base such as
`http://127.0.0.1:8080/v1`), `api_key`, `provider` (default `openai` when `base_url` is set),
`mode` (a `GOOSE_MODE`, used only when a call leaves tools and sandbox to the CLI), `home`
(`GOOSE_PATH_ROOT`: isolated config/data/state), `context_limit` (`GOOSE_CONTEXT_LIMIT`, for
models goose does not know), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`linger_s`, `max_line_bytes`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
)
from ._classify import kind_from_text
from ._policy import endpoint_passthrough, refuse
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, text_after_last_tool

__all__ = ["SPEC", "build", "classify", "decode"]

# Session naming and tool-call summaries are extra model calls; the keyring can block headless.
_HEADLESS_ENV = {
    "GOOSE_DISABLE_SESSION_NAMING": "1",
    "GOOSE_DISABLE_TOOL_CALL_SUMMARY": "1",
    "GOOSE_DISABLE_KEYRING": "1",
}


def endpoint_env(base_url: str) -> dict[str, str]:
    """`OPENAI_HOST` / `OPENAI_BASE_PATH` for an OpenAI-compatible base URL.

    goose joins host and base path itself, so a host that carries a path would get
    `/v1/chat/completions` appended twice (a 404): the path goes into the base path.
    """
    parts = urlsplit(base_url.rstrip("/"))
    host = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.strip("/")
    return {
        "OPENAI_HOST": host,
        "OPENAI_BASE_PATH": f"{path}/chat/completions" if path else "v1/chat/completions",
    }


# what goose reads from the parent environment when it talks to its own provider
_PASSTHROUGH = (
    "GOOSE_PROVIDER", "GOOSE_MODEL", "GOOSE_PATH_ROOT", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
)  # fmt: skip


def goose_mode(tools: ToolPolicy, configured: object) -> str | None:
    """`GOOSE_MODE` for *tools*: `chat` (no tools at all) for no tools or read_only, `auto`
    for full, the `mode` option (or goose's own default) when the call leaves both to the
    CLI. Raises `ProviderError(unsupported)` for a tool list (goose has no allow-list flag)
    and for workspace_write (auto mode would let a shell write anywhere)."""
    if tools.allowed_tools:
        raise refuse("goose", tools, "goose has no tool allow-list flag")
    if tools.no_tools or tools.sandbox is Sandbox.read_only:
        return "chat"
    if tools.sandbox is Sandbox.workspace_write:
        raise refuse("goose", tools, "no mode limits writes to the working directory")
    if tools.sandbox is Sandbox.full:
        return "auto"
    return str(configured) if configured else None


def build(call: CliCall) -> Invocation:
    """argv: `goose run --output-format stream-json -q [--system=S] [--model=M]
    [--provider=P] [--max-turns=N] (--no-session | --name=ID --resume) -i -`; the prompt goes
    through stdin; `GOOSE_MODE` from the tool policy (`goose_mode`: default `chat`, no
    tools)."""
    opts, config = call.options, call.config
    argv = [call.executable, "run", "--output-format", "stream-json", "-q"]
    if call.system_prompt:
        argv.append(f"--system={call.system_prompt}")
    provider = opts.get("provider") or ("openai" if opts.get("base_url") else None)
    if provider:
        argv.append(f"--provider={provider}")
    if config.model:
        argv.append(f"--model={config.model}")
    if config.max_turns is not None:
        argv.append(f"--max-turns={config.max_turns}")
    if call.session_id:
        argv += [f"--name={call.session_id}", "--resume"]
    else:
        argv.append("--no-session")
    argv += [str(a) for a in opts.get("extra_args", ())]
    argv += ["-i", "-"]
    env: dict[str, str] = {}
    mode = goose_mode(config.tools, opts.get("mode"))
    if mode:
        env["GOOSE_MODE"] = mode
    if opts.get("base_url"):
        env.update(endpoint_env(str(opts["base_url"])))
    if "api_key" in opts:
        env["OPENAI_API_KEY"] = str(opts["api_key"])
    if opts.get("home"):
        env["GOOSE_PATH_ROOT"] = str(opts["home"])
    if opts.get("context_limit"):
        env["GOOSE_CONTEXT_LIMIT"] = str(opts["context_limit"])
    return Invocation(
        tuple(argv), env, call.prompt.encode("utf-8"), endpoint_passthrough(opts, _PASSTHROUGH)
    )


def _usage(obj: dict[str, Any]) -> Usage:
    cost = obj.get("cost_usd")
    return Usage(
        input_tokens=int(obj.get("input_tokens") or 0),
        output_tokens=int(obj.get("output_tokens") or 0),
        cached_tokens=int(obj.get("cache_read_input_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


def _tool_name(item: dict[str, Any]) -> str:
    # toolCall is a Result-like wrapper in goose's source ({"status","value":{name,arguments}})
    call = item.get("toolCall") or {}
    value = call.get("value") if isinstance(call.get("value"), dict) else call
    return str(value.get("name") or "tool") if isinstance(value, dict) else "tool"


def _tool_output(item: dict[str, Any]) -> tuple[str, bool]:
    result = item.get("toolResult") or {}
    if not isinstance(result, dict):
        return str(result), False
    failed = result.get("status") == "error"
    value = result.get("value", result.get("error", ""))
    if isinstance(value, list):  # MCP content items
        value = "".join(str(c.get("text", "")) for c in value if isinstance(c, dict))
    return str(value), failed


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event (None for notifications and user text)."""
    kind = obj.get("type")
    if kind == "complete":  # no stop reason in the stream: a `complete` line is "stop"
        end = EndSignal(terminal=True, finish_reason="stop")
        return AgentEvent(type=EventType.usage, raw=obj, metadata={"usage": _usage(obj)}, end=end)
    if kind == "error":
        error = str(obj.get("error") or "goose reported an error")
        return AgentEvent(
            type=EventType.error, content=error, raw=obj, is_error=True,
            end=EndSignal(terminal=True),
        )  # fmt: skip
    if kind != "message":
        return None
    body = obj.get("message") or {}
    items = [c for c in body.get("content") or [] if isinstance(c, dict)]
    for item in items:
        if item.get("type") == "toolRequest":
            name = _tool_name(item)
            return AgentEvent(
                type=EventType.tool_call, content=name, raw=obj,
                metadata={"tool": name, "id": item.get("id")},
            )  # fmt: skip
        if item.get("type") == "toolResponse":
            output, failed = _tool_output(item)
            return AgentEvent(
                type=EventType.tool_result, content=output, raw=obj, is_error=failed,
                metadata={"id": item.get("id")},
            )  # fmt: skip
    if body.get("role") == "user":
        return None
    text = "".join(str(i.get("text", "")) for i in items if i.get("type") == "text")
    if text:
        return AgentEvent(type=EventType.text, content=text, raw=obj)
    thinking = "".join(str(i.get("thinking", "")) for i in items if i.get("type") == "thinking")
    return AgentEvent(type=EventType.reasoning, content=thinking, raw=obj) if thinking else None


def classify(outcome: RunOutcome) -> ProviderError | None:
    """`complete` = success; an `error` line = the error (by its text); no terminal line ->
    the exit code (1 on failure, from goose's `main` returning `Err`) and stderr's `Error:`."""
    tail = outcome.stderr_tail[-4000:]
    terminal = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    if terminal is not None and not terminal.is_error:
        return None
    if terminal is not None:
        message = terminal.content
    else:
        lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
        message = next((ln for ln in reversed(lines) if ln.startswith("Error")), "")
        message = message or (lines[-1] if lines else "")
        if outcome.exit_code in (0, None):
            return ProviderError(
                ErrorKind.bad_output, message or "goose ended without a complete event",
                exit_code=outcome.exit_code, stderr_tail=tail,
            )  # fmt: skip
    if "approval required" in message.lower():
        return ProviderError(
            ErrorKind.config, message + " (set [llm.goose] mode = \"auto\" or a sandbox)",
            exit_code=outcome.exit_code, stderr_tail=tail, retryable=False,
        )  # fmt: skip
    kind = kind_from_text(message) or ErrorKind.process_failed
    return ProviderError(
        kind, message or f"goose failed (exit {outcome.exit_code})",
        exit_code=outcome.exit_code, stderr_tail=tail,
    )  # fmt: skip


SPEC = BackendSpec(
    name="goose",
    terminal_event="complete",
    build=build,
    decode=decode,
    classify=classify,
    final_text=text_after_last_tool,
    extra_env=_HEADLESS_ENV,
)
