"""pi coding agent (`pi -p --mode json`), as one `BackendSpec`.

Facts from cli-contracts.md §6 (pi-coding-agent 0.73.1): the prompt comes on stdin; custom
endpoints are providers in `models.json` of the agent folder (`PI_CODING_AGENT_DIR`, default
`~/.pi/agent`) with `api` = `openai-completions` | `openai-responses` | `anthropic-messages` |
`google-generative-ai`; the JSONL stream has `session`, `agent_*`, `turn_*`, `message_*`
(each `message_update` repeats the whole partial message), `tool_execution_*` and
`auto_retry_*`, and no final result line. Surprise: in `--mode json` pi **exits 0 on API
errors**; the failure is only the assistant message's `stopReason: "error"` + `errorMessage`
(`"500 …"`, `"401 …"`, `"Connection error."`, `"terminated"`), followed by `auto_retry_*`
events (401 is not retried). Retries are `retry.maxRetries` (agent level) and
`retry.provider.maxRetries` (SDK) in the agent folder's `settings.json`.

With `base_url`, agentport runs pi with a private agent folder (in the run directory) holding
a `models.json` provider `agentport` and a `settings.json` with short retries; without it,
your own agent folder and providers are used.

Options (`[llm.pi]`): `base_url`, `api_key`, `api` (default `openai-completions`),
`provider` (provider id; required without `base_url` unless `model` is `provider/model`),
`max_retries` (agent-level retries, default 0), `provider_max_retries` (SDK retries, default
0), `context_window` (default 128000), `max_output_tokens` (the model's `maxTokens`, default
8192), `system_prompt_mode` (`append` (default) or
`replace`), `extra_args`, plus the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..core import AgentEvent, ErrorKind, EventType, ProviderError, Usage
from ._classify import kind_from_status, kind_from_text
from ._node import blocking_stdio_env
from ._policy import endpoint_passthrough
from ._retry_notice import notice_event, status_in
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, text_after_last_tool

__all__ = ["SPEC", "build", "classify", "decode"]

_KEY_ENV = "AGENTPORT_PI_API_KEY"
_HEADLESS_ENV = {"PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
_STATUS = re.compile(r"^\s*(?P<status>[1-5]\d\d)\b")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _provider_and_model(call: CliCall) -> tuple[str | None, str | None]:
    opts, model = call.options, call.config.model
    provider = str(opts["provider"]) if opts.get("provider") else None
    if opts.get("base_url"):
        provider = provider or "agentport"
    if model and "/" in model and provider is None:
        provider, model = model.split("/", 1)
    return provider, model


def build(call: CliCall) -> Invocation:
    """argv: `pi -p --mode json --no-session [--provider P] [--model M]
    [--append-system-prompt FILE] [--tools L | --no-tools --no-extensions]`; the prompt goes
    through stdin, the system prompt through a file in the run directory; with
    `base_url`, `PI_CODING_AGENT_DIR` names a private folder with models.json + settings.json."""
    opts, config = call.options, call.config
    argv = [call.executable, "-p", "--mode", "json", "--no-session"]
    provider, model = _provider_and_model(call)
    env: dict[str, str] = {}
    if opts.get("base_url"):
        assert provider is not None
        agent_dir = call.run_dir / "pi-agent"
        agent_dir.mkdir(exist_ok=True)
        entry: dict[str, Any] = {
            "baseUrl": str(opts["base_url"]).rstrip("/"),
            "api": str(opts.get("api", "openai-completions")),
            # an env variable NAME: pi resolves it, so the key is in no file
            "apiKey": _KEY_ENV,
            "models": [
                {
                    "id": model or "default",
                    "contextWindow": int(opts.get("context_window", 128000)),
                    "maxTokens": int(opts.get("max_output_tokens", 8192)),
                }
            ],
        }
        env[_KEY_ENV] = str(opts.get("api_key", "none"))
        models = {"providers": {provider: entry}}
        (agent_dir / "models.json").write_text(json.dumps(models), encoding="utf-8")
        settings = {
            "retry": {
                "maxRetries": int(opts.get("max_retries", 0)),  # agentport owns retries
                "provider": {"maxRetries": int(opts.get("provider_max_retries", 0))},
            }
        }
        (agent_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
        model = model or "default"
    # pi's parser takes the argument after a value flag as the value whatever it looks like
    # (`args[++i]`) and knows no `--flag=value` form: separate values are safe here.
    if provider:
        argv += ["--provider", provider]
    if model:
        argv += ["--model", model]
    if call.system_prompt:
        # a file: pi reads an existing path's contents, so the text itself never goes in argv
        # (a system prompt that names a file would pull that file in)
        path = call.run_dir / "system-prompt.md"
        path.write_text(call.system_prompt, encoding="utf-8")
        replace = opts.get("system_prompt_mode") == "replace"
        argv += ["--system-prompt" if replace else "--append-system-prompt", str(path)]
    allowed = config.tools.allowed_tools
    if allowed is not None:
        # no tools: no built-ins and no extension that could register one
        argv += ["--tools", ",".join(allowed)] if allowed else ["--no-tools", "--no-extensions"]
    argv += [str(a) for a in opts.get("extra_args", ())]
    env.update(blocking_stdio_env(call.run_dir, opts.get("env")))
    keys = ("PI_CODING_AGENT_DIR", *_provider_keys(provider))
    return Invocation(
        tuple(argv), env, call.prompt.encode("utf-8"), endpoint_passthrough(opts, keys)
    )


# pi reads each provider's key from its own variable; only the chosen provider's is passed.
_PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY",),
    "github-copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
}


def _provider_keys(provider: str | None) -> tuple[str, ...]:
    if provider is None:
        return ()
    return _PROVIDER_KEYS.get(provider, (f"{provider.upper().replace('-', '_')}_API_KEY",))


def _usage(message: dict[str, Any]) -> Usage:
    u = _dict(message.get("usage"))
    cost = _dict(u.get("cost")).get("total")
    return Usage(
        input_tokens=int(u.get("input") or 0),
        output_tokens=int(u.get("output") or 0),
        cached_tokens=int(u.get("cacheRead") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, list):
        return str(content or "")
    return "".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def decode(obj: Any) -> AgentEvent | None:
    """One `--mode json` line -> an event. Text arrives as `text_delta` events; the answer is
    the text of the last assistant `message_end` (`final_text`); a clean `agent_end` is
    terminal; an assistant `message_end` with `stopReason: "error"` is an error event (pi may
    still retry: the run goes on until the process exits)."""
    kind = obj.get("type")
    if kind == "session":
        return AgentEvent(type=EventType.init, raw=obj, metadata={"session_id": obj.get("id")})
    if kind == "message_update":
        update = _dict(obj.get("assistantMessageEvent"))
        if update.get("type") == "text_delta":
            return AgentEvent(type=EventType.text, content=str(update.get("delta", "")), raw=obj)
        if update.get("type") == "toolcall_end":
            tool = _dict(update.get("toolCall"))
            call = {"tool": tool.get("name"), "id": tool.get("id"), "input": tool.get("arguments")}
            return AgentEvent(
                type=EventType.tool_call, content=str(tool.get("name")), raw=obj, metadata=call
            )
        return None
    if kind == "tool_execution_end":
        result = _dict(obj.get("result"))
        return AgentEvent(
            type=EventType.tool_result, content=_text(result), raw=obj,
            is_error=bool(obj.get("isError")),
            metadata={"id": obj.get("toolCallId"), "tool": obj.get("toolName")},
        )  # fmt: skip
    if kind == "message_end":
        message = _dict(obj.get("message"))
        if message.get("role") != "assistant":
            return None
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            text = str(message.get("errorMessage") or f"pi reported stopReason {stop}")
            # an auto_retry_start follows at once when pi retries; silence ends the run
            return AgentEvent(
                type=EventType.error, content=text, raw=obj, is_error=True,
                metadata={"fatal": True},
            )  # fmt: skip
        meta: dict[str, Any] = {"usage": _usage(message), "model": message.get("model")}
        if stop != "toolUse":
            meta["final_text"] = _text(message)
            meta["finish_reason"] = "length" if stop == "length" else "stop"
        return AgentEvent(type=EventType.usage, raw=obj, metadata=meta)
    if kind == "agent_end":
        messages = obj.get("messages")
        last = _dict(messages[-1]) if isinstance(messages, list) and messages else {}
        if last.get("stopReason") in ("error", "aborted"):
            return None  # an auto-retry may follow
        return AgentEvent(type=EventType.usage, raw=obj, metadata={"terminal": True})
    if kind == "auto_retry_start":  # pi's own retry begins: agentport owns retries
        text = str(obj.get("errorMessage") or "pi auto-retry")
        return notice_event(obj, text, status=status_in(text.split(" ", 1)[0]))
    if kind == "auto_retry_end" and not obj.get("success"):
        text = str(obj.get("finalError") or "pi gave up retrying")
        return AgentEvent(
            type=EventType.error, content=text, raw=obj, is_error=True, metadata={"fatal": True}
        )
    return None


def final_text(events: Sequence[AgentEvent]) -> str:
    """Fallback when no `message_end` carried the answer: the deltas after the last tool."""
    return text_after_last_tool(events)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The last assistant outcome decides: an error (`stopReason: "error"` or a failed
    auto-retry) -> HTTP status from the message's leading number, else its wording; a
    non-zero exit without one (text mode, bad flags) -> `process_failed`."""
    tail = outcome.stderr_tail[-4000:]
    last = next(
        (e for e in reversed(outcome.events) if e.is_error or "final_text" in e.metadata), None
    )
    if last is not None and last.is_error:
        found = _STATUS.match(last.content)
        status = int(found.group("status")) if found else None
        kind = kind_from_status(status) or kind_from_text(last.content)
        return ProviderError(
            kind or ErrorKind.process_failed, last.content, status=status,
            exit_code=outcome.exit_code, stderr_tail=tail,
        )  # fmt: skip
    if (outcome.exit_code or 0) > 0:
        line = (tail.strip().splitlines() or [f"exit code {outcome.exit_code}"])[-1]
        return ProviderError(
            kind_from_text(line) or ErrorKind.process_failed, line,
            exit_code=outcome.exit_code, stderr_tail=tail,
        )  # fmt: skip
    return None


SPEC = BackendSpec(
    name="pi",
    terminal_event="agent_end",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
    extra_env=_HEADLESS_ENV,
)
