"""OpenAI Codex CLI (`codex exec --json`), as one `BackendSpec`.

Measured on codex-cli 0.171.0: stdin must be closed or fed (we feed the
prompt with `-`); the endpoint is a custom provider (`-c model_providers.<id>={...}`,
`wire_api = "responses"`; `OPENAI_BASE_URL` is NOT honoured); `--output-schema FILE` is sent as a
strict json_schema; the final answer is the last `agent_message`; `item.type == "error"` items
are warnings; `turn.failed` ends the run (exit 1); usage comes in `turn.completed`.

Options (`[llm.codex]`): `base_url` (Responses API base, e.g. `http://127.0.0.1:8080/v1`),
`api_key` or `api_key_env` (the variable holding the key), `provider` (id, default
`agentport`), `request_max_retries` and `stream_max_retries` (codex's own retries with
`base_url`, default 0: agentport's retry policy retries), `home` (`CODEX_HOME`),
`runtime_app_server` (default true: a runtime's turns run on `codex app-server`, for native
steer and interrupt; false: `codex exec`, the steer text queued, the process stopped),
`extra_args`, plus the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    McpServer,
    ProviderError,
    Sandbox,
    ToolPolicy,
    Usage,
)
from ..structured import strict_schema
from ._classify import kind_from_text
from ._codex_app import APPROVAL_POLICY, HELLO, AppTurn, exec_line, opening
from ._codex_catalog import catalog_flags, load_catalog, restrict
from ._endstate import unrecovered
from ._policy import codex_config_env, not_a_flag, refuse
from ._spec import (
    BackendSpec,
    CliCall,
    Invocation,
    RunOutcome,
    WarmTurns,
    as_dict,
    as_int,
    image_files,
    last_text,
)
from ._turn_control import CURRENT_TURN
from ._web_events import web_meta

__all__ = ["SPEC", "build", "classify", "decode", "prepare"]

_SANDBOX = {
    Sandbox.read_only: "read-only",
    Sandbox.workspace_write: "workspace-write",
    Sandbox.full: "danger-full-access",
}
_KEY_ENV = "CODEX_AGENTPORT_API_KEY"
_TOOL_ITEMS = {"command_execution", "mcp_tool_call", "file_change"}


def _toml(value: Any) -> str:
    # TOML basic strings accept JSON's escapes; numbers and booleans read the same.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))


# what codex reads from the parent environment when it talks to its own provider
_PASSTHROUGH = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME")


def tool_flags(tools: ToolPolicy, web_search: bool = False) -> list[str]:
    """The tool policy as codex flags: `--sandbox=read-only|workspace-write|
    danger-full-access` (default read-only); no tools -> the shell tool, web search, sub-agents
    apps and goals off (`-c features.shell_tool=false`, `-c web_search="disabled"`,
    `-c features.multi_agent=false`, `-c features.apps=false`, `-c features.goals=false`;
    0.171.0 still offers `view_image` and `request_user_input`, which run nothing). Commands
    codex does run see only the core environment
    (`-c shell_environment_policy.inherit="core"`) unless sandbox=full. Raises
    `ProviderError(unsupported)` for a non-empty tool list (codex has no allow-list).

    *web_search* (`CompletionConfig.web_search`) turns on live web search and nothing else:
    `-c web_search="live"` (the request then offers the Responses tool
    `{"type": "web_search", "external_web_access": true}`, run by the provider; codex itself
    fetches nothing). With no tools, shell, sub-agents, apps and goals stay off. Without it,
    no tools means `web_search="disabled"`; `ToolPolicy.cli_defaults()` leaves codex's own
    default (`cached`). Measured on codex-cli 0.171.0 against FakeModelServer.

    These flags hold only for models codex has no metadata for. For its catalog models
    (the default `gpt-6.2-sol` included) `build` also names a rewritten catalog
    (`_codex_catalog`), written by `prepare` before the spawn."""
    if tools.allowed_tools:
        raise refuse("codex", tools, "codex has no tool allow-list (use () or None)")
    sandbox = tools.sandbox or Sandbox.read_only
    flags = [f"--sandbox={_SANDBOX[sandbox]}"]
    if sandbox is not Sandbox.full:
        flags += ["-c", 'shell_environment_policy.inherit="core"']
    if tools.no_tools:
        flags += ["-c", "features.shell_tool=false"]
        flags += ["-c", "features.multi_agent=false", "-c", "features.apps=false"]
        flags += ["-c", "features.goals=false"]
    if web_search:
        flags += ["-c", 'web_search="live"']
    elif tools.no_tools:
        flags += ["-c", 'web_search="disabled"']
    return flags


def mcp_settings(servers: Sequence[McpServer]) -> tuple[list[str], dict[str, str]]:
    """The call's MCP servers as ONE `-c mcp_servers={...}`: the whole table, so no server
    of the user's `config.toml` is loaded (strict), and the child's environment that carries
    their secrets: argv is readable by every local user (`/proc/PID/cmdline`), so a stdio
    server's `env` is forwarded by name (`env_vars`) and an HTTP server's headers come from
    variables (`env_http_headers`). Each server is `required` (codex waits for it before the
    first model request) and its tools are approved (`default_tools_approval_mode`): the
    caller named them, and headless nothing can answer a prompt. No servers: no flags."""
    if not servers:
        return [], {}
    env: dict[str, str] = {}
    entries = []
    for server in servers:
        fields = [
            "required = true",
            f"startup_timeout_sec = {_toml(server.timeout_s)}",
            'default_tools_approval_mode = "approve"',
        ]
        if server.url is not None:
            fields.append(f"url = {_toml(server.url)}")
            headers = []
            for number, (header, value) in enumerate(server.plain_headers().items()):
                variable = f"AGENTPORT_MCP_{server.name.upper().replace('-', '_')}_{number}"
                env[variable] = value
                headers.append(f"{_toml(header)} = {_toml(variable)}")
            fields.append(f"env_http_headers = {{{', '.join(headers)}}}")
        else:
            fields.append(f"command = {_toml(server.command)}")
            fields.append(f"args = [{', '.join(_toml(a) for a in server.args)}]")
            for key, value in server.plain_env().items():
                if env.get(key, value) != value:
                    raise ProviderError(
                        ErrorKind.unsupported,
                        f"codex: two MCP servers set {key} to different values (codex "
                        "forwards a server's env by name from its own environment)",
                        retryable=False, request_sent=False,
                    )  # fmt: skip
                env[key] = value
            fields.append(f"env_vars = [{', '.join(_toml(k) for k in server.env)}]")
        entries.append(f"{_toml(server.name)} = {{{', '.join(fields)}}}")
    return ["-c", f"mcp_servers={{{', '.join(entries)}}}"], env


def user_servers_off(call: CliCall) -> list[str]:
    """`-c mcp_servers.<name>.enabled=false` for every MCP server of the user's
    `<CODEX_HOME>/config.toml` and the working folder's `.codex/config.toml` that the call
    did not name, when the call names servers of its own or allows no tools: codex merges a
    `-c mcp_servers={...}` into the configured table instead of replacing it (measured on
    codex-cli 0.171.0), so each one is turned off by name. Raises `unsupported` for a name
    a `-c` path cannot spell (codex splits the path at dots)."""
    config = call.config
    if not config.mcp_servers and config.tools.allowed_tools != ():
        return []
    user_env = dict(call.options.get("env") or {})
    home = call.options.get("home") or user_env.get("CODEX_HOME") or os.environ.get("CODEX_HOME")
    if not home:
        base = user_env.get("HOME") or os.environ.get("HOME") or str(Path.home())
        home = str(Path(base) / ".codex")
    named = {s.name for s in config.mcp_servers}
    flags: list[str] = []
    for path in (Path(str(home)) / "config.toml", call.cwd / ".codex" / "config.toml"):
        try:
            with path.open("rb") as handle:
                table = tomllib.load(handle).get("mcp_servers")
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        for name in table if isinstance(table, dict) else ():
            if name in named or f"mcp_servers.{name}.enabled=false" in flags:
                continue
            if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
                raise ProviderError(
                    ErrorKind.unsupported,
                    f"codex: cannot turn off the MCP server {name!r} of {path} for this call",
                    retryable=False, request_sent=False,
                )  # fmt: skip
            flags += ["-c", f"mcp_servers.{name}.enabled=false"]
    return flags


def _catalog_path(call: CliCall) -> Path | None:
    """Where `prepare` writes the rewritten model catalog, or None when the call needs none
    (`ToolPolicy.cli_defaults()` without web search: codex's own catalog and tools)."""
    if call.config.tools.no_tools or call.config.web_search:
        return call.run_dir / "model-catalog.json"
    return None


def _provider_flags(opts: Mapping[str, Any]) -> list[str]:
    """`-c model_provider=ID -c model_providers.ID={...}` for a configured `base_url`."""
    if not opts.get("base_url"):
        return []
    provider = str(opts.get("provider", "agentport"))
    fields = {
        "name": provider,
        "base_url": str(opts["base_url"]).rstrip("/"),
        "env_key": str(opts.get("api_key_env", _KEY_ENV)),
        "wire_api": "responses",
    }
    # agentport owns retries: codex's own are off unless the options say
    fields["request_max_retries"] = opts.get("request_max_retries", 0)
    fields["stream_max_retries"] = opts.get("stream_max_retries", 0)
    if "stream_idle_timeout_ms" in opts:
        fields["stream_idle_timeout_ms"] = opts["stream_idle_timeout_ms"]
    table = ", ".join(f"{k} = {_toml(v)}" for k, v in fields.items())
    return [
        "-c",
        f"model_provider={_toml(provider)}",
        "-c",
        f"model_providers.{provider}={{{table}}}",
    ]


def settings(call: CliCall, *, app_server: bool = False) -> tuple[list[str], Invocation]:
    """What `codex exec` and `codex app-server` are configured with, as flags (`tool_flags`,
    model, effort, the provider, `extra_args`, then the catalog so that no extra `-c` can
    bring the tools back), plus the child's environment and passthrough (an `Invocation`
    without argv). `app_server`: the forms `codex app-server` takes (it has no `--sandbox` /
    `--model`: `-c sandbox_mode=`, `-c model=`; and `-c approval_policy="never"`, which
    `exec` implies, or, with an approval hook, `_codex_app.APPROVAL_POLICY`: codex asks and
    the hook answers)."""
    opts = call.options
    flags = tool_flags(call.config.tools, call.config.web_search)
    servers, env = mcp_settings(call.config.mcp_servers)
    flags += servers + user_servers_off(call)
    if app_server:
        mode = flags[0].removeprefix("--sandbox=")
        policy = "never" if call.config.on_permission is None else APPROVAL_POLICY
        flags[:1] = ["-c", f"sandbox_mode={_toml(mode)}", "-c", f"approval_policy={_toml(policy)}"]
    passthrough: tuple[str, ...] = _PASSTHROUGH
    if call.config.model:
        model = call.config.model
        flags += ["-c", f"model={_toml(model)}"] if app_server else [f"--model={model}"]
    if call.config.reasoning_effort:
        flags += ["-c", f'model_reasoning_effort="{call.config.reasoning_effort}"']
    if opts.get("base_url"):
        key_env = str(opts.get("api_key_env", _KEY_ENV))
        flags += _provider_flags(opts)
        # the endpoint's key: the configured one, or the variable the user named; no other
        passthrough = (key_env,) if "api_key_env" in opts else ()
        if "api_key" in opts:
            env[key_env] = str(opts["api_key"])
    else:  # codex's own provider: the variables its own config names reach it
        home = opts.get("home") or os.environ.get("CODEX_HOME")
        passthrough += codex_config_env(str(home) if home else None)
    if opts.get("home"):
        env["CODEX_HOME"] = str(opts["home"])
    flags += [str(a) for a in opts.get("extra_args", ())]
    catalog = _catalog_path(call)
    if catalog is not None:
        flags += catalog_flags(catalog)
    return flags, Invocation((), env, None, passthrough)


def build(call: CliCall) -> Invocation:
    """argv: `codex exec --json --skip-git-repo-check --color never --cd=CWD [settings]
    [--output-schema=FILE] [--image=RUN_DIR/images/image-N.png ...] [resume ID] -`
    (`settings`; `=` forms so no caller text becomes a flag); the prompt goes through stdin;
    `prepare` writes the catalog file the settings name. A call that needs the app-server
    (`_on_app_server`) runs `app_build`'s process for itself instead."""
    if _on_app_server(call):
        app = app_build(call)
        return replace(app, stdin=HELLO + (app.stdin or b""))
    flags, base = settings(call)
    argv = [call.executable, "exec", "--json", "--skip-git-repo-check", "--color", "never"]
    argv += [f"--cd={call.cwd}", *flags]
    if call.schema is not None:
        path = call.run_dir / "output-schema.json"
        path.write_text(json.dumps(call.schema), encoding="utf-8")
        argv.append(f"--output-schema={path}")
    argv += [f"--image={path}" for path in image_files(call)]
    if call.session_id:
        argv += ["resume", not_a_flag("session id", call.session_id)]
    argv.append("-")
    return Invocation(tuple(argv), base.env, call.prompt.encode("utf-8"), base.passthrough)


async def prepare(call: CliCall, invocation: Invocation, env: Mapping[str, str]) -> None:
    """Write the rewritten model catalog `build` named (`_codex_catalog.restrict` of what
    `codex debug models` prints with the run's provider flags and environment): no tools ->
    no code mode, sub-agents or apply_patch for any model; web search -> the `web_search`
    tool offered for catalog models too. Raises `ProviderError(unsupported)` naming the model
    when codex cannot print its catalog or the model has tool metadata agentport does not
    know (fail closed)."""
    path = _catalog_path(call)
    if path is None:
        return
    model = call.config.model
    who = f"model {model!r}" if model else "codex's default model"
    flags = _provider_flags(call.options)
    catalog = await load_catalog(
        call.executable,
        flags,
        env,
        call.cwd,
        who,
        startup_timeout_s=call.config.startup_timeout_s,
        idle_timeout_s=call.config.idle_timeout_s,
        deadline=call.deadline,
    )
    tools = call.config.tools
    safe = restrict(
        catalog, no_tools=tools.no_tools, web_search=call.config.web_search, model=model
    )
    # a few KB into the run's private folder: faster in place than a hop to a worker thread
    path.write_text(json.dumps(safe), encoding="utf-8")


def _usage(raw: Any) -> Usage:
    u = as_dict(raw)
    return Usage(
        input_tokens=as_int(u.get("input_tokens")),
        output_tokens=as_int(u.get("output_tokens")),
        cached_tokens=as_int(u.get("cached_input_tokens")),
    )


def decode(obj: Any) -> AgentEvent | None:
    """One `codex exec --json` line -> an event (None for lifecycle lines we do not surface);
    an app-server message (no `type`: a call on the app-server) goes to `app_decode`."""
    kind = obj.get("type")
    if kind is None:
        return app_decode(obj)
    if kind == "thread.started":
        return AgentEvent(
            type=EventType.init, raw=obj, metadata={"session_id": obj.get("thread_id")}
        )
    if kind == "turn.completed":
        usage = _usage(obj.get("usage"))
        # no stop reason in `codex exec --json`: a completed turn is reported as "stop"
        end = EndSignal(terminal=True, finish_reason="stop")
        return AgentEvent(type=EventType.usage, raw=obj, metadata={"usage": usage}, end=end)
    if kind == "turn.failed":
        message = str(as_dict(obj.get("error")).get("message", "turn failed"))
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, is_error=True,
            end=EndSignal(terminal=True),
        )  # fmt: skip
    if kind == "error":
        message = str(obj.get("message", ""))
        if message.startswith("Reconnecting"):  # "Reconnecting... n/m": a retry in progress
            return AgentEvent(
                type=EventType.error, content=message, raw=obj, end=EndSignal(warning=message)
            )
        # the final error (turn.failed follows at once); alone, it ends the run after a grace
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, is_error=True,
            end=EndSignal(fatal=True),
        )  # fmt: skip
    if kind not in ("item.started", "item.completed"):
        return None
    item = as_dict(obj.get("item"))
    item_type = item.get("type")
    done = kind == "item.completed"
    if item_type == "agent_message" and done:
        return AgentEvent(type=EventType.text, content=str(item.get("text", "")), raw=obj)
    if item_type == "reasoning" and done:
        return AgentEvent(type=EventType.reasoning, content=str(item.get("text", "")), raw=obj)
    if item_type == "error" and done:  # e.g. unknown model metadata: a warning only
        message = str(item.get("message", ""))
        return AgentEvent(
            type=EventType.error, content=message, raw=obj, end=EndSignal(warning=message)
        )
    if item_type == "web_search":
        return _web_event(obj, item, done)
    if item_type in _TOOL_ITEMS:
        name = str(item.get("command") or item.get("tool") or item_type)
        meta = {"tool": item_type, "id": item.get("id")}
        if not done:
            return AgentEvent(type=EventType.tool_call, content=name, raw=obj, metadata=meta)
        # a command counts as a success only with exit code 0: `exit_code: null` on a
        # completed command_execution (killed, never reported) is a failure
        failed = item.get("status") not in (None, "completed") or (
            item_type == "command_execution" and item.get("exit_code") != 0
        )
        output = str(item.get("aggregated_output") or "")
        return AgentEvent(
            type=EventType.tool_result, content=output, raw=obj, is_error=failed, metadata=meta
        )
    return None


def _web_event(obj: Any, item: dict[str, Any], done: bool) -> AgentEvent:
    """A `web_search` item (the provider's server-side search, codex-cli 0.171.0):
    `{"type": "web_search", "id", "query", "action": {"type": "search", "query"} |
    {"type": "open_page", "url"} | {"type": "find_in_page", "url", "pattern"}}`. A search
    is `web="search"` with its query; opening a page or finding in it is `web="fetch"` with
    its URL. codex does not pass the results on (only the action)."""
    action = as_dict(item.get("action"))
    query = str(action.get("query") or item.get("query") or "")
    meta: dict[str, Any] = {"tool": "web_search", "id": item.get("id")}
    if action.get("type") in ("open_page", "find_in_page") and action.get("url"):
        meta |= web_meta("fetch", url=str(action["url"]))
        content = str(action["url"])
    else:
        meta |= web_meta("search", query=query)
        content = query
    kind = EventType.tool_result if done else EventType.tool_call
    failed = done and item.get("status") not in (None, "completed")
    return AgentEvent(type=kind, content=content, raw=obj, is_error=failed, metadata=meta)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """`turn.completed` = success whatever the exit code; `turn.failed` = the error (by its
    message); otherwise a non-zero exit is `process_failed` with the stderr tail."""
    events = outcome.events
    if any(e.type is EventType.usage and e.end.terminal for e in events):
        return None
    failed = unrecovered(events)  # turn.failed, or a final `error` line nothing followed
    if failed is not None:
        kind = kind_from_text(failed.content) or ErrorKind.process_failed
        return ProviderError(
            kind,
            failed.content,
            exit_code=outcome.exit_code,
            stderr_tail=outcome.stderr_tail[-4000:],
        )
    if outcome.exit_code not in (0, None):
        last = outcome.stderr_tail.strip().splitlines()[-1:] or [f"exit code {outcome.exit_code}"]
        return ProviderError(
            ErrorKind.process_failed, last[0], exit_code=outcome.exit_code,
            stderr_tail=outcome.stderr_tail[-4000:], retryable=False,
        )  # fmt: skip
    return None


# ---- `codex app-server` (JSON-RPC over stdio; `_codex_app`): warm processes (one thread per
# call), calls with an approval hook, and a runtime's turns (native steer, interrupt, fork).
#
# Measured on codex-cli 0.171.0 against FakeModelServer
# (tests/contract/test_codex_warm_contract.py):
# `initialize`, `initialized` and `thread/start` may be written at once; a new thread's model
# request carries nothing of an earlier thread; the items, errors and failure messages are
# those of `codex exec --json` in camelCase.


def app_build(call: CliCall) -> Invocation:
    """`codex app-server [settings]` (the app-server forms) with, as the call's turn, its
    thread (`_codex_app.opening`: start, resume or fork) answered with `turn/start`, and the
    call's dialogue (`_codex_app.AppTurn`: approvals, steering). Without `hello` (a warm
    process wrote it at its start; `build` adds it for a process of the call's own)."""
    flags, base = settings(call, app_server=True)
    argv = (call.executable, "app-server", *flags)
    turn = AppTurn(call)
    return Invocation(argv, base.env, opening(call), base.passthrough, replies=turn.replies)


def _on_app_server(call: CliCall) -> bool:
    """A call that needs the app-server: one with an approval hook (`codex exec` never
    asks), a fork (`thread/fork`), or a runtime's turn (steer and interrupt are app-server
    methods; option `runtime_app_server = false`: they run `codex exec`). Raises
    `unsupported` for an approval hook with `extra_args` the app-server does not take."""
    if call.config.on_permission is not None:
        if not _app_server_fits(call):
            raise ProviderError(
                ErrorKind.unsupported,
                "codex: approvals are asked on `codex app-server`, which takes only "
                "`-c KEY=VALUE` extra_args",
                retryable=False, request_sent=False,
            )  # fmt: skip
        return True
    if call.config.fork_session:  # `thread/fork`: `codex exec` has no fork
        return True
    if not call.options.get("runtime_app_server", True):
        return False
    return CURRENT_TURN.get() is not None and _app_server_fits(call)


def app_decode(obj: Any) -> AgentEvent | None:
    """One `codex app-server` message -> an event: `_codex_app.exec_line`, then `decode`
    of the `exec` line it stands for (the raw message kept)."""
    line = exec_line(as_dict(obj))
    if line is None or isinstance(line, AgentEvent):
        return line
    event = decode(line)
    return None if event is None else event.model_copy(update={"raw": obj})


def _app_server_fits(call: CliCall) -> bool:
    """Warm only when `extra_args` are `-c KEY=VALUE` pairs (an `exec` flag may not exist
    for `app-server`); other calls run cold."""
    args = [str(a) for a in call.options.get("extra_args", ())]
    return len(args) % 2 == 0 and all(a in ("-c", "--config") for a in args[0::2])


WARM = WarmTurns(build=app_build, reset=None, hello=HELLO, decode=app_decode, fits=_app_server_fits)


SPEC = BackendSpec(
    name="codex",
    terminal_event="turn.completed",
    build=build,
    decode=decode,
    classify=classify,
    final_text=last_text,
    native_schema=strict_schema,
    restore_schema=True,
    prepare=prepare,
    warm=WARM,
    # `exec resume ID` of an unknown ID: "thread/resume failed: no rollout found for thread
    # id ID" on stderr, exit 1, no model request
    unknown_session=re.compile(r"no rollout found for thread id|thread/resume failed", re.I),
    asks_in_band=True,
)
