"""Gemini CLI (`gemini --output-format stream-json`), as one `BackendSpec`.

Measured on gemini-cli 0.61.0: a non-TTY stdin alone runs headless (we
feed the prompt there); an untrusted folder exits 55 before any request (we pass
`--skip-trust`); the endpoint is `GOOGLE_GEMINI_BASE_URL` + `GEMINI_API_KEY` with
`security.auth.selectedType = "gemini-api-key"` in `~/.gemini/settings.json`; retries are
`general.maxAttempts` there; the exit code on an API error is the HTTP status mod 256
(500→244, 429→173, 401→145), 1 for transport errors; stream-json ends with a `result` whose
`status` is `success` or `error`; assistant text comes as deltas; usage is in `result.stats`;
there is no schema flag (output_schema is TRANSLATED); like claude it loses the end of a
large output on a pipe, so it writes to a file the runner follows.

Web tools: `config.web_search` allows google_web_search (a grounded request:
`tools: [{googleSearch: {}}]`) and web_fetch (a `urlContext` request; the CLI fetches itself
only as a fallback, and refuses private and loopback hosts) in the policy file, and nothing
else; the decoder marks their tool_use events with `web` metadata.

Options (`[llm.gemini]`): `base_url`, `api_key`, `approval_mode` (used only when a call
leaves the sandbox to the CLI), `extra_args`, plus the generic `executable`, `env`,
`grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
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
from ._caller_tools import system_settings
from ._classify import kind_from_status, kind_from_text
from ._policy import endpoint_passthrough, refuse
from ._retry_notice import stderr_notice
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    as_dict,
    as_int,
    at_prompt,
    text_after_last_tool,
)
from ._web_events import web_meta

__all__ = ["SPEC", "build", "classify", "decode"]

_APPROVAL = {
    Sandbox.read_only: "default",
    Sandbox.workspace_write: "auto_edit",
    Sandbox.full: "yolo",
}
# gemini-cli 0.61.0 stderr, before each of its own retries (router 5 + main 10 by default):
# "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {...}",
# "Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed ..."
_RETRY_NOTICE = re.compile(r"^Attempt \d+ failed(?: with status (?P<status>\d{3}))?\b.*Retrying")
_HEADLESS_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
# Documented exit codes (0 ok, 1 general, 42 input, 53 turn limit) and observed ones (55).
_EXIT_KIND = {
    41: ErrorKind.auth_required,
    42: ErrorKind.invalid_request,
    44: ErrorKind.config,
    52: ErrorKind.config,
    53: ErrorKind.process_failed,
    55: ErrorKind.config,
}
# gemini exits with the HTTP status mod 256 (500 -> 244, 429 -> 173; gemini-cli 0.61.0)
_STATUS_BY_EXIT = {(s & 0xFF): s for s in (400, 401, 403, 404, 413, 429, 500, 502, 503, 504)}


# what gemini reads from the parent environment when it talks to its own provider
_PASSTHROUGH = (
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
)  # fmt: skip
_NO_SERVER = "agentport-no-mcp-server"
_SHELL = "run_shell_command"
_WRITES = frozenset({"write_file", "replace"})
WEB_TOOLS = ("google_web_search", "web_fetch")


def policy_toml(tools: ToolPolicy, *, web: bool = False) -> str | None:
    """A policy-engine file for *tools* (None: nothing to restrict), loaded with `--policy`
    (the user tier: above project and default policies). Every tool is denied at the top user
    priority; a listed tool is allowed just above it. Raises `ProviderError(unsupported)` for
    the shell tool under read_only or workspace_write and a write tool under read_only (an
    allow rule runs it without confirmation). Source: gemini-cli 0.61.0 policy engine
    (`[[rule]]` toolName / decision / priority; a denied tool is not offered to the model).
    *web* (`config.web_search`) allows google_web_search and web_fetch too (an allow rule
    offers web_fetch even in the default approval mode, which drops it headless); with the
    CLI's default tools (`None`) they are already offered."""
    allowed = tools.allowed_tools
    if allowed is None:
        return None
    if web:
        allowed = (*allowed, *(t for t in WEB_TOOLS if t not in allowed))
    named = set(allowed)
    if tools.sandbox in (Sandbox.read_only, Sandbox.workspace_write) and _SHELL in named:
        raise refuse("gemini", tools, "the shell tool can write anywhere (no OS sandbox)")
    if tools.sandbox is Sandbox.read_only and named & _WRITES:
        raise refuse("gemini", tools, "a write tool is listed under read_only")
    rules = ['[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 998\n']
    rules += [
        f'[[rule]]\ntoolName = {json.dumps(name)}\ndecision = "allow"\npriority = 999\n'
        for name in allowed
    ]
    return "\n".join(rules)


SYSTEM_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"


def mcp_allow_rules(servers: Sequence[str]) -> list[str]:
    """Policy rules that allow every tool of the call's own MCP servers (`mcpName`: all the
    server's tools), above the deny-all rule of `policy_toml`: the caller named them."""
    return [
        f'\n[[rule]]\nmcpName = {json.dumps(name)}\ndecision = "allow"\npriority = 999\n'
        for name in servers
    ]


def build(call: CliCall) -> Invocation:
    """argv: `gemini --output-format stream-json --skip-trust [--model=M]
    [--approval-mode=A]`; the prompt goes through stdin. The sandbox picks the approval mode
    (read_only -> default: headless runs drop every mutating tool); the `approval_mode`
    option applies only when the call leaves the sandbox to the CLI (`sandbox=None`). A tool
    list (none by default) becomes a per-run policy file (`--policy=FILE`, `policy_toml`) and
    no MCP server is started (`--allowed-mcp-server-names=<none>`). Images are written to
    the run's folder, added as a workspace folder (`--include-directories`), and referenced
    at the end of the prompt as `@path`, which the CLI reads and sends as inline data."""
    opts, config = call.options, call.config
    argv = [call.executable, "--output-format", "stream-json", "--skip-trust"]
    if config.model:
        argv.append(f"--model={config.model}")
    sandbox = config.tools.sandbox
    approval = _APPROVAL[sandbox] if sandbox else opts.get("approval_mode")
    if approval:
        argv.append(f"--approval-mode={approval}")
    policy = policy_toml(config.tools, web=config.web_search)
    servers = [s.name for s in config.mcp_servers]
    if policy is not None:
        policy += "".join(mcp_allow_rules(servers))
        path = call.run_dir / "agentport-policy.toml"
        path.write_text(policy, encoding="utf-8")
        argv.append(f"--policy={path}")
    if policy is not None or servers:
        argv.append(f"--allowed-mcp-server-names={','.join(servers) or _NO_SERVER}")
    argv += [str(a) for a in opts.get("extra_args", ())]
    prompt, workspace = at_prompt(call)  # `@` escaped; images as `@path`
    argv += workspace
    env: dict[str, str] = {}
    if servers:
        path = system_settings(call, SYSTEM_SETTINGS_ENV, "/etc/gemini-cli/settings.json")
        env[SYSTEM_SETTINGS_ENV] = str(path)
    if opts.get("base_url"):
        env["GOOGLE_GEMINI_BASE_URL"] = str(opts["base_url"]).rstrip("/")
    if "api_key" in opts:
        env["GEMINI_API_KEY"] = str(opts["api_key"])
    return Invocation(
        tuple(argv), env, prompt.encode("utf-8"), endpoint_passthrough(opts, _PASSTHROUGH)
    )


def _usage(stats: Any) -> Usage:
    s = as_dict(stats)
    return Usage(
        input_tokens=as_int(s.get("input_tokens")),
        output_tokens=as_int(s.get("output_tokens")),
        cached_tokens=as_int(s.get("cached")),
    )


def decode(obj: Any) -> AgentEvent | None:
    """One stream-json line -> an event (None for the echoed user message)."""
    kind = obj.get("type")
    if kind == "init":
        init = {"session_id": obj.get("session_id"), "model": obj.get("model")}
        return AgentEvent(type=EventType.init, raw=obj, metadata=init)
    if kind == "message":
        if obj.get("role") != "assistant":
            return None
        return AgentEvent(type=EventType.text, content=str(obj.get("content", "")), raw=obj)
    if kind == "tool_use":
        meta = {
            "tool": obj.get("tool_name"),
            "id": obj.get("tool_id"),
            "input": obj.get("parameters"),
        } | _web_meta(obj.get("tool_name"), as_dict(obj.get("parameters")))
        return AgentEvent(
            type=EventType.tool_call, content=str(obj.get("tool_name")), raw=obj, metadata=meta
        )
    if kind == "tool_result":
        failed = obj.get("status") != "success"
        content = obj.get("output") or as_dict(obj.get("error")).get("message", "")
        return AgentEvent(
            type=EventType.tool_result, content=str(content), raw=obj, is_error=failed,
            metadata={"id": obj.get("tool_id")},
        )  # fmt: skip
    if kind == "error":
        message = str(obj.get("message", ""))
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, end=EndSignal(warning=message)
        )
    if kind == "result":
        failed = obj.get("status") != "success"
        message = str(as_dict(obj.get("error")).get("message", "")) if failed else ""
        # stream-json carries no finish reason: a successful result is "stop"
        end = EndSignal(terminal=True, finish_reason=None if failed else "stop")
        return AgentEvent(
            type=EventType.usage, content=message, raw=obj, is_error=failed,
            metadata={"usage": _usage(obj.get("stats"))}, end=end,
        )  # fmt: skip
    return None


def _web_meta(tool: Any, params: dict[str, Any]) -> dict[str, Any]:
    """`web` metadata of a google_web_search / web_fetch tool_use (the stream-json result
    line carries only a display text, so the call is marked where its query and urls are);
    {} for any other tool. web_fetch names its urls in `prompt`, as whitespace-separated
    tokens the way the CLI parses them (or in `url` when the user turned on direct
    fetching)."""
    if tool == "google_web_search":
        return web_meta("search", query=str(params.get("query", "")))
    if tool == "web_fetch":
        urls = [str(params["url"])] if isinstance(params.get("url"), str) else []
        tokens = str(params.get("prompt", "")).split()
        urls += [t for t in tokens if t.startswith(("http://", "https://")) and t not in urls]
        return web_meta("fetch", url=urls[0] if urls else "", urls=urls)
    return {}


def classify(outcome: RunOutcome) -> ProviderError | None:
    """Exit code first (HTTP status mod 256, then the documented codes), then the message:
    the `result` error's, else the stream's last `error` line, else stderr's."""
    tail = outcome.stderr_tail[-4000:]
    result = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    if result is not None and not result.is_error and outcome.exit_code in (0, None):
        return None
    if result is not None and not result.is_error and (outcome.exit_code or 0) < 0:
        return None  # we stopped it after its final event
    code = outcome.exit_code
    status = _STATUS_BY_EXIT.get(code) if code is not None and code > 1 else None
    # the CLI's own words first: the result's error, else the stream's last `error` line
    # (a safety block arrives only there), and only then stderr
    said = next((e.content for e in reversed(outcome.events) if e.type is EventType.error), "")
    message = (result.content if result is not None else "") or said or _stderr_error(tail)
    kind = kind_from_status(status)
    if kind is None and code in _EXIT_KIND:
        kind = _EXIT_KIND[code]
        if code == 55:
            message = message or "the working folder is not trusted (exit 55)"
    if kind is None:
        kind = kind_from_text(message) or (
            ErrorKind.process_failed if code not in (0, None) else ErrorKind.bad_output
        )
    return ProviderError(
        kind,
        message or f"gemini failed (exit {code})",
        status=status,
        exit_code=code,
        stderr_tail=tail,
    )


def _stderr_error(tail: str) -> str:
    # `-o json` prints {"error": {"message": ...}} on stderr; stream-json mostly does not.
    for line in reversed(tail.strip().splitlines()):
        line = line.strip()
        if line.startswith('"message"'):
            return line.split(":", 1)[1].strip().strip(",").strip('"')
    lines = tail.strip().splitlines()
    return lines[-1].strip() if lines else ""


SPEC = BackendSpec(
    name="gemini",
    terminal_event="result",
    build=build,
    decode=decode,
    classify=classify,
    final_text=text_after_last_tool,
    extra_env=_HEADLESS_ENV,
    stdout_to_file=True,  # on a pipe it cuts an 8 MiB answer short and exits 0
    # readStdin (0.61.0): 8 MiB of UTF-8, then "Warning: stdin input truncated", stdin closed
    stdin_limit_bytes=8 << 20,
    # retries are only `general.maxAttempts` in the user's settings.json: end the run at
    # the first "Attempt 1 failed with status 500. Retrying with backoff..." on stderr
    retry_notice=stderr_notice(_RETRY_NOTICE),
)
