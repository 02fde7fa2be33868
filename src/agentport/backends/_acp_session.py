"""One ACP agent process and its session (`Session`), and what one `session/prompt` collects
(`Turn`): the part of the ACP backend (`agentport.backends.acp`) that speaks the protocol.
Source and protocol steps: the `acp` module docstring and docs/backends/acp.md.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from returns.result import Failure, Result, Success

from ..core import (
    AgentEvent,
    Allow,
    BackendCapability,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventType,
    PermissionKind,
    PermissionRequest,
    ProviderError,
    RawInfo,
    ToolPolicy,
    choose_option,
    permission_kind,
)
from ..transport import DEFAULT_MAX_LINE_BYTES, child_env
from ._acp_rpc import PROTOCOL_VERSION, AgentConnection, RpcFailure
from ._acp_wire import (
    decode_update,
    permission_allowed,
    permission_request,
    usage_of,
)
from ._approvals import decide, denied_error, denied_event
from ._caller_tools import acp_server
from ._endstate import ToolLedger, refusal_error
from ._policy import inherit_env
from ._resume import not_loaded
from ._spec import text_after_last_tool

__all__ = ["Session", "Sink", "Turn", "agent_env"]

Sink = Callable[[AgentEvent], Awaitable[None]]

#: After `session/prompt` answers, the turn keeps taking updates until the agent has been
#: quiet this long (seconds; `[llm.acp] late_quiet_s`) ...
LATE_QUIET_S = 0.1
#: ... for at most this long: an agent still talking then is named in the answer's warnings.
LATE_MAX_S = 1.0
_log = logging.getLogger("agentport.acp")
#: An agent's own words for a turn it ended on a refused permission, not the model's answer:
#: copilot 1.0.102 `--acp` answers a `reject_once` with this text and stopReason end_turn.
_GAVE_UP = re.compile(r"\s*(?:Info:\s*)?Operation cancelled by user\.?\s*", re.IGNORECASE)


def agent_env(options: Mapping[str, Any]) -> dict[str, str]:
    """The agent's environment: this process's, through the allow-list, plus `[llm.acp] env`."""
    user_env = {str(k): str(v) for k, v in dict(options.get("env") or {}).items()}
    return child_env(os.environ, user_env, inherit=inherit_env(options))


@dataclass(slots=True)
class Turn:
    """What one `session/prompt` collects."""

    sink: Sink | None
    events: list[AgentEvent] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    tools: ToolLedger = field(default_factory=ToolLedger)  # calls with no result yet
    denied: list[tuple[PermissionRequest, str]] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)  # tool call ids the agent asked about
    interrupted: bool = False  # `Session.interrupt` asked the agent to end it
    ended: anyio.Event = field(default_factory=anyio.Event)


def unasked_warnings(turn: Turn, config: CompletionConfig) -> tuple[str, ...]:
    """With an approval hook: one warning per tool call (other than a read) the agent ran
    without asking (its own configuration allows it: opencode's `permission` defaults to
    allow), so a hook that was never asked is never taken for one that allowed."""
    if config.on_permission is None:
        return ()
    return tuple(
        f"the agent ran {e.content or e.metadata.get('id')!r} without asking permission: "
        "the approval hook was not asked (the agent's own configuration allows the tool)"
        for e in turn.events
        if e.type is EventType.tool_call
        and str(e.metadata.get("id")) not in turn.asked
        and permission_kind(e.metadata.get("tool")) is not PermissionKind.read
    )


class Session:
    """An initialised agent with one ACP session at a time; runs prompts one at a time.

    `open` = `start` (spawn, `initialize`) + `begin` (`session/new` or `session/load`). A warm
    agent (`agentport.transport.WarmPool`) is started once and `begin`s a fresh session for
    each call that takes it, after `attach`ing that call's task group to read it."""

    def __init__(self, capability: BackendCapability, options: Mapping[str, Any]) -> None:
        self.capability = capability
        self.options = options
        self.agent: AgentConnection | None = None
        self.init: dict[str, Any] = {}
        self.session_id: str | None = None
        self.models: dict[str, Any] = {}
        self.model: str | None = None
        self.cwd: Path | None = None
        self._turn: Turn | None = None
        self._tools = ToolPolicy()
        self._config = CompletionConfig()  # the running prompt's: its hook and deadline
        self.events: list[AgentEvent] = []  # the last turn's, kept after it ends
        self.uses = 0  # calls served (a warm pool recycles the agent after its max_uses)
        self.workdir: ExitStack | None = None  # a warm agent's own folder, closed with it
        self.home: Path | None = None  # that folder
        self.late_dropped = 0  # updates that came after their turn's drain (logged)

    @property
    def backend(self) -> str:
        return self.capability.name

    def command(self) -> list[str]:
        raw = self.options.get("command")
        if isinstance(raw, str):
            argv = shlex.split(raw)
        elif isinstance(raw, list | tuple):
            argv = [str(a) for a in raw]
        else:
            argv = []
        if not argv:
            raise ProviderError(
                ErrorKind.config,
                "[llm.acp] command is required: the agent's command line, e.g. "
                'command = ["gemini", "--acp"]',
                retryable=False,
            )
        exe = argv[0]
        found = exe if os.sep in exe and Path(exe).exists() else shutil.which(exe)
        if found is None:
            raise ProviderError(
                ErrorKind.not_installed,
                f"ACP agent {exe!r} not found on PATH; install it or set [llm.acp] command",
                retryable=False,
            )
        return [found, *argv[1:]]

    async def open(self, tg: TaskGroup, config: CompletionConfig, cwd: Path) -> None:
        """Spawn the agent in *cwd*, `initialize`, then open (or load) the session."""
        await self.start(tg, config, cwd)
        await self.begin(config, cwd)

    async def start(self, tg: TaskGroup, config: CompletionConfig, cwd: Path) -> None:
        """Spawn the agent with *cwd* as its working folder and `initialize` it."""
        agent = AgentConnection(
            self.command(),
            agent_env(self.options),
            cwd,
            grace_s=float(self.options.get("grace_s", 3.0)),
            max_line_bytes=int(self.options.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)),
            on_request=self._on_request,
        )
        self.agent, self.cwd = agent, cwd
        agent.on_notify = self._on_notify
        await agent.start(tg)
        self.init = (
            await agent.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": False, "writeTextFile": False},
                        "terminal": False,
                    },
                },
                limit_s=config.startup_timeout_s,
                which="startup",
            )
            or {}
        )
        version = self.init.get("protocolVersion")
        if isinstance(version, int) and version != PROTOCOL_VERSION:
            raise ProviderError(
                ErrorKind.unsupported,
                f"the ACP agent speaks protocol version {version}; agentport speaks "
                f"{PROTOCOL_VERSION}",
                retryable=False,
            )

    async def begin(self, config: CompletionConfig, cwd: Path) -> None:
        """A fresh session in *cwd* (`session/new`), or the caller's (`session/load`)."""
        self.cwd, self.session_id, self.models, self.model = cwd, None, {}, None
        self.events = []
        if config.session_id and config.fork_session:
            await self.fork(config.session_id, config)
        elif config.session_id:
            await self.load(config.session_id, config)
        else:
            await self._new(config)

    def attach(self, tg: TaskGroup) -> None:
        """Read a started agent in *tg* (a warm agent taken by a new call)."""
        assert self.agent is not None
        self.agent.attach(tg)

    def alive(self) -> bool:
        return self.agent is not None and self.agent.alive()

    def kill(self) -> None:
        if self.agent is not None:
            self.agent.kill()
        self._drop_workdir()

    async def aclose(self) -> None:
        await self.close()
        self._drop_workdir()

    def _drop_workdir(self) -> None:
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            workdir.close()

    @property
    def capabilities(self) -> dict[str, Any]:
        """The agent's `agentCapabilities` from its `initialize` answer."""
        caps = self.init.get("agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    def _servers(self, config: CompletionConfig) -> list[Any]:
        """The `mcpServers` of `session/new` / `session/load`: the call's own servers
        (`CompletionConfig.mcp_servers`, its served functions among them) when it names any,
        else the `mcp_servers` option (ACP's own shape, passed as given)."""
        if config.mcp_servers:
            return [acp_server(s) for s in config.mcp_servers]
        return list(self.options.get("mcp_servers", []))

    async def _new(self, config: CompletionConfig) -> None:
        assert self.agent is not None
        assert self.cwd is not None
        params = {"cwd": str(self.cwd), "mcpServers": self._servers(config)}
        try:
            answer = await self.agent.request(
                "session/new", params, limit_s=config.startup_timeout_s, which="startup"
            )
        except ProviderError as exc:
            method = self.options.get("auth_method")
            if exc.kind is not ErrorKind.auth_required or not method:
                raise
            await self.agent.request(
                "authenticate", {"methodId": str(method)}, limit_s=config.startup_timeout_s,
                which="startup",
            )  # fmt: skip
            answer = await self.agent.request(
                "session/new", params, limit_s=config.startup_timeout_s, which="startup"
            )
        answer = answer or {}
        self.session_id = str(answer.get("sessionId") or "")
        models = answer.get("models")
        self.models = models if isinstance(models, dict) else {}
        if not self.session_id:
            raise ProviderError(ErrorKind.bad_output, "session/new answered without a sessionId")

    async def load(self, session_id: str, config: CompletionConfig) -> None:
        """Resume *session_id* with `session/load` (needs `loadSession` in `initialize`)."""
        assert self.agent is not None
        assert self.cwd is not None
        if not self.capabilities.get("loadSession"):
            raise ProviderError(
                ErrorKind.unsupported,
                "this ACP agent cannot resume sessions (no loadSession in its initialize answer)",
                retryable=False,
            )
        replay, self._turn = self._turn, None  # the agent replays history: not this turn's
        try:
            await self.agent.request(
                "session/load",
                {
                    "sessionId": session_id,
                    "cwd": str(self.cwd),
                    "mcpServers": self._servers(config),
                },
                limit_s=config.startup_timeout_s,
                which="startup",
            )
        except ProviderError as exc:  # the agent refused to load it: never a silent new one
            raise not_loaded(session_id, exc) from None
        finally:
            self._turn = replay
        self.session_id = session_id

    async def fork(self, session_id: str, config: CompletionConfig) -> None:
        """Go on in a copy of *session_id* under a new id (`session/fork`, an unstable ACP
        method: needs `sessionCapabilities.fork` in the agent's `initialize` answer, else
        `unsupported`). A refused fork is `session_not_found`, as for `load`."""
        assert self.agent is not None
        assert self.cwd is not None
        offered = self.capabilities.get("sessionCapabilities")
        if not isinstance(offered, dict) or not isinstance(offered.get("fork"), dict):
            raise ProviderError(
                ErrorKind.unsupported,
                "this ACP agent cannot fork sessions (no sessionCapabilities.fork in its "
                "initialize answer)",
                retryable=False, details={"params": ["fork"], "session_id": session_id},
            )  # fmt: skip
        params = {
            "sessionId": session_id,
            "cwd": str(self.cwd),
            "mcpServers": self._servers(config),
        }
        replay, self._turn = self._turn, None  # history the agent replays: not a turn's
        try:
            answer = await self.agent.request(
                "session/fork", params, limit_s=config.startup_timeout_s, which="startup"
            )
        except ProviderError as exc:
            raise not_loaded(session_id, exc) from None
        finally:
            self._turn = replay
        forked = str((answer or {}).get("sessionId") or "")
        if forked in ("", session_id):
            raise ProviderError(
                ErrorKind.bad_output,
                f"session/fork of {session_id!r} answered {forked or 'no sessionId'!r}",
                retryable=False,
            )
        self.session_id = forked

    async def _set_model(self, model: str, config: CompletionConfig) -> None:
        assert self.agent is not None
        if model == self.model:
            return
        if not self.models:
            raise ProviderError(
                ErrorKind.unsupported,
                "this ACP agent offers no model selection (no models in its session/new "
                "answer); choose the model in [llm.acp] command",
                retryable=False,
            )
        await self.agent.request(
            "session/set_model",
            {"sessionId": self.session_id, "modelId": model},
            limit_s=config.idle_timeout_s,
        )
        self.model = model

    async def _on_notify(self, method: str, params: Any) -> None:
        turn = self._turn
        if method != "session/update" or not isinstance(params, dict):
            return
        if turn is None or params.get("sessionId") not in (None, self.session_id):
            # after its turn's drain (or for a session that is over): never lost in silence
            self.late_dropped += 1
            _log.warning(
                "ACP agent %s sent a session/update after its turn ended; dropped (%d so far)",
                self.backend, self.late_dropped,
            )  # fmt: skip
            return
        update = params.get("update")
        event = decode_update(update) if isinstance(update, dict) else None
        if event is None:
            return
        turn.events.append(event)
        turn.tools.observe(event)
        await self._emit(turn, event)

    async def _emit(self, turn: Turn, event: AgentEvent) -> None:
        if turn.sink is not None:
            try:
                await turn.sink(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                turn.sink = None  # the consumer stopped reading: stop the turn
                turn.scope.cancel()

    async def _on_request(self, method: str, params: Any) -> Any:
        """Answer `session/request_permission`: the call's `ToolPolicy` first, then the
        caller's hook (`decide`); the option is chosen by its kind, never by position
        (`choose_option`), and no option of the decision's kind is the `cancelled` outcome
        (a refusal). A denied call is a `permission_denied` event of the turn."""
        if method != "session/request_permission" or not isinstance(params, dict):
            raise RpcFailure(-32601, f"method not found: {method}")
        raw_call = params.get("toolCall")
        tool_call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        request = permission_request(self.backend, tool_call, params.get("options"))
        hook = self._config.on_permission is not None
        policy = permission_allowed(tool_call, self._tools, self.cwd or Path.cwd(), hook=hook)
        decision = await decide(request, self._config, policy_allows=policy)
        if self._turn is not None and self._turn.interrupted:
            return {"outcome": {"outcome": "cancelled"}}  # ACP: a cancelled turn's asks are
        option = choose_option(request.options, decision)
        allowed = isinstance(decision, Allow) and option is not None
        reason = "" if allowed else getattr(decision, "reason", "no allow option was offered")
        turn = self._turn
        if turn is not None:
            turn.asked.add(request.call_id or "")
            turn.permissions.append(
                {"tool": tool_call.get("title"), "kind": tool_call.get("kind"),
                 "allowed": allowed, "option": option.option_id if option else None,
                 "reason": reason}
            )  # fmt: skip
            if not allowed:
                turn.denied.append((request, reason))
                await self._emit(turn, denied_event(request, reason))
        if option is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option.option_id}}

    def interrupt(self, tg: TaskGroup, grace_s: float) -> bool:
        """Ask the agent to end the running prompt: `session/cancel`, after which ACP has the
        agent answer `session/prompt` with stopReason `cancelled` (the session stays open).
        An agent that has not ended it after *grace_s* seconds is not waited for any longer.
        The prompt then fails `interrupted`. False when no prompt is running."""
        turn = self._turn
        if turn is None or turn.interrupted or self.agent is None:
            return False
        turn.interrupted = True
        tg.start_soon(self._cancel, turn, grace_s)
        return True

    async def _cancel(self, turn: Turn, grace_s: float) -> None:
        assert self.agent is not None
        with suppress(ProviderError):  # the agent may be gone already
            await self.agent.notify("session/cancel", {"sessionId": self.session_id})
        with anyio.move_on_after(grace_s):
            await turn.ended.wait()
        turn.scope.cancel()  # the agent did not end it in time (a no-op when it did)

    async def _drain_late(self) -> bool:
        """Keep the turn open after `session/prompt` answered until the agent has been quiet
        for `late_quiet_s`, at most `LATE_MAX_S`: some agents send their last update a few
        ms after the answer (the same stdout carries both, in the agent's order). Quiet is
        a whole sleep in which the reader read nothing and was not busy dispatching (so a
        stalled host, or a slow consumer of a runtime's events, is not taken for silence).
        True if it was still talking at the bound."""
        agent = self.agent
        assert agent is not None
        raw = self.options.get("late_quiet_s", LATE_QUIET_S)
        number = isinstance(raw, int | float) and not isinstance(raw, bool)
        quiet_s = min(float(raw), LATE_MAX_S) if number and math.isfinite(raw) else LATE_QUIET_S
        if quiet_s <= 0:
            return False
        bound = time.monotonic() + LATE_MAX_S
        while True:
            seen = agent.reads
            await anyio.sleep(quiet_s)
            for _ in range(3):  # data that came during a stall: the reader's turn first
                await anyio.lowlevel.checkpoint()
            if agent.reads == seen and not agent.dispatching:
                return False
            if time.monotonic() >= bound:
                return True

    async def prompt(
        self, text: str, config: CompletionConfig, sink: Sink | None
    ) -> Result[CompletionResponse, ProviderError]:
        """One `session/prompt` turn (the caller bounds it with the total timeout)."""
        assert self.agent is not None
        started = time.monotonic()
        if config.model:
            await self._set_model(config.model, config)
        self._tools, self._config = config.tools, config
        turn = self._turn = Turn(sink)
        self.events = turn.events
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
        result: Any = None
        still_talking = False
        with turn.scope:
            try:
                result = await self.agent.request(
                    "session/prompt", params, limit_s=config.idle_timeout_s
                )
                still_talking = await self._drain_late()
            except BaseException:
                # ask the agent to stop (it may be gone already)
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(1.0),
                    suppress(ProviderError),
                ):
                    await self.agent.notify("session/cancel", {"sessionId": self.session_id})
                raise
            finally:
                self._turn = None
                turn.ended.set()
        result = result if isinstance(result, dict) else {}
        stop = str(result.get("stopReason") or "end_turn")
        if turn.interrupted and (stop == "cancelled" or turn.scope.cancelled_caught):
            return Failure(ProviderError(
                ErrorKind.interrupted,
                "the turn was interrupted (interrupt(): session/cancel); the session stays open",
                retryable=False,
                # confirmed: the agent ended the turn itself (stopReason cancelled)
                details={"session_id": self.session_id, "confirmed": stop == "cancelled"},
            ))  # fmt: skip
        if turn.scope.cancelled_caught:
            return Failure(ProviderError(
                ErrorKind.process_failed, "the consumer stopped reading; the turn was cancelled",
                retryable=False,
            ))  # fmt: skip
        for closed in turn.tools.close():  # the turn ended: a call with no result is abandoned
            await self._emit(turn, closed)
        said = text_after_last_tool(turn.events)
        stopped = stop == "cancelled" or not said.strip() or bool(_GAVE_UP.fullmatch(said))
        if turn.denied and stopped:  # the agent gave up on the denied call
            request, reason = turn.denied[-1]
            return Failure(denied_error(request, reason, self.backend))
        if stop == "max_turn_requests":
            return Failure(ProviderError(
                ErrorKind.process_failed, "the agent reached its turn limit (max_turn_requests)",
                retryable=False,
            ))  # fmt: skip
        if stop == "refusal":  # the same rule as every CLI backend (_endstate)
            return Failure(refusal_error(text_after_last_tool(turn.events), None))
        if stop == "cancelled":
            return Failure(ProviderError(ErrorKind.process_failed, "the turn was cancelled"))
        return self._response(turn, result, config, started, still_talking)

    def _response(
        self,
        turn: Turn,
        result: dict[str, Any],
        config: CompletionConfig,
        started: float,
        still_talking: bool,
    ) -> Result[CompletionResponse, ProviderError]:
        """The turn's answer (its text after the last tool call), with its warnings."""
        assert self.agent is not None
        stop = str(result.get("stopReason") or "end_turn")
        answer = text_after_last_tool(turn.events)
        if not answer.strip():
            return Failure(ProviderError(ErrorKind.bad_output, "the agent ended its turn "
                                         "without an answer"))  # fmt: skip
        warnings: tuple[str, ...] = ()
        if stop == "max_tokens":
            warnings = ("the answer was cut at the token limit (stopReason max_tokens)",)
        warnings += unasked_warnings(turn, config)
        if still_talking:
            warnings += (
                f"the agent was still sending updates {LATE_MAX_S:g}s after it answered "
                "session/prompt; the answer has what came until then",
            )
        return Success(
            CompletionResponse(
                content=answer,
                model=config.model or self.models.get("currentModelId"),
                usage=usage_of(result),
                finish_reason="length" if stop == "max_tokens" else "stop",
                warnings=warnings,
                backend=self.backend,
                duration_s=time.monotonic() - started,
                raw=RawInfo(
                    session_id=self.session_id,
                    exit_code=None,
                    extra={
                        "stop_reason": stop,
                        "permissions": turn.permissions,
                        "agent_info": self.init.get("agentInfo"),
                        "agent_capabilities": self.capabilities,
                        "pid": self.agent.process.pid if self.agent.process else None,
                        "agent_uses": self.uses,  # > 1: a warm agent (WarmPool) answered
                    },
                ),
            )
        )

    async def close(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()

    def stderr_tail(self) -> str:
        return self.agent.stderr_tail[-4000:] if self.agent is not None else ""
