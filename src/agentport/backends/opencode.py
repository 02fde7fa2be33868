"""OpenCode (`opencode run --format json`), as one `BackendSpec`.

Measured on opencode 1.18.33 (a Bun binary): the message comes on stdin
(or as words); the endpoint is a provider in the opencode config (`npm:
@ai-sdk/openai-compatible`, `options.baseURL`), which `OPENCODE_CONFIG_CONTENT` can carry
inline with no file written; the JSONL events are `step_start` / `text` (whole text parts, no
deltas) / `tool_use` / `step_finish` (per-call `tokens`) / `error`; there is no final result
line, so the answer is the text of the last step; an API failure is one `error` line
(`error.data.statusCode`, `message`) and exit 1. Surprise: each run first sends a
title-generation request (to `small_model`) before the real call; agentport points
`small_model` at the same model so no other provider is contacted.

Options (`[llm.opencode]`): `base_url` (an OpenAI-compatible base, e.g.
`http://127.0.0.1:8080/v1`; agentport then writes the provider config), `api_key`, `provider`
(id for that provider, default `agentport`), `agent` (`--agent`), `extra_args`, plus the
generic `executable`, `env`, `grace_s`, `max_line_bytes`. Without `base_url`, the user's own
opencode config is used and `model` must be `provider/model`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

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
from ._classify import kind_from_status, kind_from_text
from ._endstate import unrecovered
from ._policy import endpoint_passthrough, opencode_config_env, refuse
from ._retry_notice import LineWatch, stderr_notice
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_status,
    image_files,
)

__all__ = ["SPEC", "build", "classify", "decode"]

_KEY_ENV = "AGENTPORT_OPENCODE_API_KEY"
_HEADLESS_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # otherwise models.dev is fetched at start-up
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


# opencode 1.18.33 `--print-logs --log-level WARN`, on stderr, for each failed model request
# (no HTTP status in it; the final `error` event, which has one, follows a non-retried failure
# within milliseconds and then decides): `... level=ERROR ... message="stream error" ...
# error.error="AI_APICallError: fake: internal server error"`
_RETRY_NOTICE = re.compile(r'message="stream error".*?error\.error="(?P<text>.*)"\s*$')
# A stream that breaks after its body began is retried with no log line at WARN (measured on
# 1.18.33 against a cut stream: up to 6 requests over 70 s, then one `message=process` ERROR).
# At INFO every model request of the main agent logs `message=stream ... small=false`, and
# every step logs `message=process` before its request (`loop step=N`, `process`, `stream`):
# a second request line with no `process` line between is the CLI retrying.
_CHATTER = re.compile(r"\blevel=(INFO|DEBUG)\b")  # what never names a failure
_STEP = re.compile(r"\bmessage=process\b")
_REQUEST = re.compile(r"\bmessage=stream\b.*\bsmall=false\b")


def _retry_watch() -> LineWatch:
    """A watcher for one run's stderr: the `stream error` line names the failure; a repeated
    request line with no new step between ends the run as a retry with no logged reason."""
    named = stderr_notice(_RETRY_NOTICE)()
    requested = False

    def watch(line: str) -> ProviderError | None:
        nonlocal requested
        if (error := named(line)) is not None:
            return error
        if _STEP.search(line):
            requested = False
        elif _REQUEST.search(line):
            if requested:
                return ProviderError(
                    ErrorKind.network,
                    "the CLI's own retry was stopped at its first notice: opencode sent its "
                    "model request again without logging why (a stream cut after it began)",
                )
            requested = True
        return None

    return watch


def _model_ref(call: CliCall) -> str | None:
    model = call.config.model
    if not model:
        return None
    if "/" in model or not call.options.get("base_url"):
        return model
    return f"{call.options.get('provider', 'agentport')}/{model}"


# Every permission key opencode 1.x knows: each is set explicitly, so a broader rule in the
# user's own config cannot outlive ours when the two are merged (the last matching rule wins).
_PERMISSION_KEYS = (
    "read", "edit", "write", "patch", "multiedit", "glob", "grep", "list", "bash", "task",
    "skill", "lsp", "todoread", "todowrite", "webfetch", "websearch", "codesearch",
    "external_directory", "doom_loop",
)  # fmt: skip
_WRITES = ("edit", "write", "patch", "multiedit")
_AGENTS = ("build", "plan", "general", "explore")
# what opencode reads from the parent environment when it uses its own providers
_PASSTHROUGH = (
    "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
    "OPENROUTER_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY",
)  # fmt: skip


def permissions(tools: ToolPolicy) -> dict[str, str] | None:
    """The `permission` table for *tools* (None: the CLI's own defaults). `"*"` comes first
    (opencode applies the last matching rule). Raises `ProviderError(unsupported)` for a
    tool list that includes bash under a read-only or workspace sandbox (bash can write
    anywhere: opencode has no OS sandbox)."""
    allowed, sandbox = tools.allowed_tools, tools.sandbox
    if allowed is None and sandbox in (None, Sandbox.full):
        return None
    rules: dict[str, str] = {}
    if allowed is not None:
        rules["*"] = "deny"
        rules.update({key: "deny" for key in _PERMISSION_KEYS})
        rules.update({name: "allow" for name in allowed})
    if sandbox in (Sandbox.read_only, Sandbox.workspace_write):
        if allowed is not None and "bash" in allowed:
            raise refuse("opencode", tools, "bash can write anywhere (no OS sandbox)")
        rules["bash"] = rules["external_directory"] = rules["task"] = "deny"
        if sandbox is Sandbox.read_only:
            if allowed is not None and set(allowed) & set(_WRITES):
                raise refuse("opencode", tools, "a write tool is listed under read_only")
            rules.update({key: "deny" for key in _WRITES})
    return rules


def _user_mcp_names(call: CliCall) -> list[str]:
    """Names of the MCP servers in the user's opencode config files (`~/.config/opencode/
    opencode.json[c]`, the file `OPENCODE_CONFIG` names) and the working folder's
    `opencode.json[c]`. Raises `unsupported` when a file mentions `mcp` but cannot be read
    as JSON (with `//` line comments): its servers could not be turned off."""
    user_env = dict(call.options.get("env") or {})
    home = Path(user_env.get("HOME") or os.environ.get("HOME") or Path.home())
    xdg = user_env.get("XDG_CONFIG_HOME") or os.environ.get("XDG_CONFIG_HOME")
    base = (Path(xdg) if xdg else home / ".config") / "opencode"
    files = [base / "opencode.json", base / "opencode.jsonc", base / "config.json"]
    files += [call.cwd / "opencode.json", call.cwd / "opencode.jsonc"]
    explicit = user_env.get("OPENCODE_CONFIG") or os.environ.get("OPENCODE_CONFIG")
    files += [Path(explicit).expanduser()] if explicit else []
    names: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        try:
            table = json.loads(re.sub(r"(?m)^\s*//.*$", "", text)).get("mcp")
        except (ValueError, AttributeError):
            if '"mcp"' not in text:
                continue
            raise ProviderError(
                ErrorKind.unsupported,
                f"opencode: cannot read the MCP servers of {path} to turn them off",
                retryable=False, request_sent=False,
            ) from None  # fmt: skip
        names += [n for n in (table if isinstance(table, dict) else ()) if n not in names]
    return names


def mcp_config(call: CliCall) -> dict[str, Any]:
    """The `mcp` table of the run's config: the call's own servers (`local` with `command`
    and `environment`, `remote` with `url` and `headers`), and every server of the user's
    and the folder's config turned off (`enabled: false`): strict. The config travels in the
    child's environment (`OPENCODE_CONFIG_CONTENT`), never in argv. Empty when the call
    names no server."""
    servers = call.config.mcp_servers
    if not servers:
        return {}
    table: dict[str, Any] = {name: {"enabled": False} for name in _user_mcp_names(call)}
    for server in servers:
        timeout = int(server.timeout_s * 1000)
        if server.url is not None:
            table[server.name] = {"type": "remote", "url": server.url,
                                  "headers": server.plain_headers(), "enabled": True,
                                  "timeout": timeout}  # fmt: skip
        else:
            table[server.name] = {"type": "local", "command": [server.command, *server.args],
                                  "environment": server.plain_env(), "enabled": True,
                                  "timeout": timeout}  # fmt: skip
    return table


def build(call: CliCall) -> Invocation:
    """argv: `opencode run --format json [-m=PROVIDER/MODEL] [--agent=A]`; the message goes
    through stdin; a per-run config goes in `OPENCODE_CONFIG_CONTENT` (nothing written to the
    user's files): the tool policy as `permission` rules (globally and for the built-in
    agents; `OPENCODE_PERMISSION` too) and, with `base_url`, the provider, whose key travels
    in an env variable it references (`{env:...}`), never in argv."""
    opts = call.options
    argv = [call.executable, "run", "--format", "json"]
    # its 5xx/429 and cut-stream retry loop (about 75 s) has no setting and no event; only its
    # log shows each retry: logs on stderr at INFO, read by `retry_notice` (`_retry_watch`)
    argv += ["--print-logs", "--log-level", "INFO"]
    ref = _model_ref(call)
    if ref:
        argv.append(f"--model={ref}")
    if opts.get("agent"):
        argv.append(f"--agent={opts['agent']}")
    argv += [f"--file={path}" for path in image_files(call)]
    argv += [str(a) for a in opts.get("extra_args", ())]
    env: dict[str, str] = {}
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
    }
    rules = permissions(call.config.tools)
    servers = mcp_config(call)
    if servers:
        config["mcp"] = servers
        if rules is not None:  # the call's servers are a grant: their tools `<server>_*`
            rules |= {f"{s.name}_*": "allow" for s in call.config.mcp_servers}
    if rules is not None:
        config["permission"] = rules
        agents = (*_AGENTS, str(opts["agent"])) if opts.get("agent") else _AGENTS
        config["agent"] = {name: {"permission": rules} for name in agents}
        env["OPENCODE_PERMISSION"] = json.dumps(rules)
    if opts.get("base_url"):
        provider = str(opts.get("provider", "agentport"))
        model = call.config.model or "default"
        if "/" in model:
            model = model.split("/", 1)[1]
        options: dict[str, Any] = {"baseURL": str(opts["base_url"]).rstrip("/")}
        if "api_key" in opts:
            env[_KEY_ENV] = str(opts["api_key"])
            options["apiKey"] = "{env:" + _KEY_ENV + "}"
        config["provider"] = {
            provider: {
                "npm": "@ai-sdk/openai-compatible",
                "name": provider,
                "options": options,
                "models": {model: {"name": model, **_modalities(call)}},
            }
        }
        config["model"] = f"{provider}/{model}"
        # the title request goes to small_model: keep it on the same endpoint
        config["small_model"] = f"{provider}/{model}"
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    passthrough = endpoint_passthrough(opts, _PASSTHROUGH)
    if not opts.get("base_url"):  # opencode's own providers: the variables its config names
        passthrough += opencode_config_env(os.environ.get("OPENCODE_CONFIG"))
    return Invocation(tuple(argv), env, call.prompt.encode("utf-8"), passthrough)


def _modalities(call: CliCall) -> dict[str, Any]:
    """A custom model takes images only when its entry says so (opencode reads `--file`
    images with a synthetic Read, then answers "this model does not support image input")."""
    if not call.images:
        return {}
    return {"attachment": True, "modalities": {"input": ["text", "image"], "output": ["text"]}}


def _usage(part: dict[str, Any]) -> Usage:
    tokens = as_dict(part.get("tokens"))
    cache = as_dict(tokens.get("cache"))
    cost = part.get("cost")
    return Usage(
        input_tokens=int(tokens.get("input") or 0),
        output_tokens=int(tokens.get("output") or 0),
        cached_tokens=int(cache.get("read") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


# AI SDK finish reasons of a step -> finish_reason ("other" is a normal stop)
_FINISH = {"stop": "stop", "length": "length", "content-filter": "refusal"}


def decode(obj: Any) -> AgentEvent | None:
    """One `--format json` line -> an event. `step_start` carries the session id; each
    `step_finish` carries that model call's usage (the run's is their sum: `usage_mode`)."""
    kind = obj.get("type")
    part = as_dict(obj.get("part"))
    if kind == "step_start":
        # an init event only ever stands for a `step_start`: `final_text` counts steps by it
        return AgentEvent(
            type=EventType.init, raw=obj, metadata={"session_id": obj.get("sessionID")}
        )
    if kind == "text":
        return AgentEvent(type=EventType.text, content=str(part.get("text", "")), raw=obj)
    if kind == "reasoning":
        return AgentEvent(type=EventType.reasoning, content=str(part.get("text", "")), raw=obj)
    if kind == "tool_use":
        state = as_dict(part.get("state"))
        meta = {"tool": part.get("tool"), "id": part.get("callID"), "input": state.get("input")}
        status = state.get("status")
        if status in ("pending", "running"):
            name = str(part.get("tool"))
            return AgentEvent(type=EventType.tool_call, content=name, raw=obj, metadata=meta)
        failed = status == "error"
        output = state.get("output") if not failed else state.get("error")
        # 1.18.33 prints one line per finished tool (call and result together)
        return AgentEvent(
            type=EventType.tool_result, content=str(output or ""), raw=obj, is_error=failed,
            metadata=meta,
        )  # fmt: skip
    if kind == "step_finish":
        reason = part.get("reason")
        meta = {"usage": _usage(part), "reason": reason}
        # opencode's loop goes on after "tool-calls" / "unknown"; any other reason ends it
        if isinstance(reason, str) and reason not in ("tool-calls", "unknown"):
            if reason == "error":
                text = "the model call finished with reason error"
                return AgentEvent(
                    type=EventType.usage, content=text, raw=obj, is_error=True, metadata=meta,
                    end=EndSignal(terminal=True),
                )  # fmt: skip
            end = EndSignal(terminal=True, finish_reason=_FINISH.get(reason, "stop"))
            return AgentEvent(type=EventType.usage, raw=obj, metadata=meta, end=end)
        return AgentEvent(type=EventType.usage, raw=obj, metadata=meta)
    if kind == "error":
        error = as_dict(obj.get("error"))
        data = as_dict(error.get("data"))
        message = str(data.get("message") or error.get("name") or "opencode error")
        # exit 1 follows at once; if the CLI goes silent instead, it ends after the grace
        end = EndSignal(fatal=True, status=as_status(data.get("statusCode")))
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, is_error=True,
            metadata={"name": error.get("name")}, end=end,
        )  # fmt: skip
    return None


def final_text(events: Any) -> str:
    """The text parts of the last model step (each step starts with `step_start`)."""
    out: list[str] = []
    for event in events:
        if event.type is EventType.init:
            out.clear()
        elif event.type is EventType.text:
            out.append(event.content)
    return "".join(out)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The final state decides: an `error` line that no finished step follows (HTTP status
    first, then its message); a final step that ended the run is success whatever came
    before (an earlier error was recovered) and whatever the exit code; otherwise a non-zero
    exit is `process_failed` with the stderr tail, and exit 0 is success."""
    tail = outcome.stderr_tail[-4000:]
    failed = unrecovered(outcome.events)
    if any(e.end.terminal and not e.is_error for e in outcome.events):
        return None
    if failed is not None:
        status = failed.end.status
        kind = kind_from_status(status) or kind_from_text(failed.content)
        if kind is None:
            kind = ErrorKind.process_failed
        return ProviderError(
            kind, failed.content, status=status, exit_code=outcome.exit_code, stderr_tail=tail
        )
    if (outcome.exit_code or 0) > 0:
        said = [ln for ln in tail.strip().splitlines() if not _CHATTER.search(ln)]
        line = (said or [f"exit code {outcome.exit_code}"])[-1]
        return ProviderError(
            kind_from_text(line) or ErrorKind.process_failed, line,
            exit_code=outcome.exit_code, stderr_tail=tail,
        )  # fmt: skip
    return None


SPEC = BackendSpec(
    name="opencode",
    # each `step_finish` carries that step's model request's tokens
    usage_mode="per_request",
    terminal_event="step_finish",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
    extra_env=_HEADLESS_ENV,
    stdout_to_file=True,  # Bun exits without flushing a pipe: an 8 MiB answer arrived cut short
    retry_notice=_retry_watch,
)
