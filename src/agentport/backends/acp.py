"""Any agent that speaks the Agent Client Protocol (ACP) over stdio: `complete()` and an
`AgentRuntime` from one small JSON-RPC 2.0 client.

Configuration: `[llm.acp] command = ["gemini", "--acp"]` (the agent's command line, a list or
one shell-like string); optional `env` (a table added to the agent's environment), `cwd`
handling as for CLIs (a neutral temporary directory unless the call sets `cwd`),
`mcp_servers` (passed to `session/new`), `auth_method` (an `authMethods` id to `authenticate`
with when `session/new` answers auth_required), `grace_s` (SIGTERM→SIGKILL seconds, default 3),
`max_line_bytes`.

Protocol (agentclientprotocol.com, protocol version 1; checked against gemini-cli 0.61.0
`--acp`): `initialize` (we offer no fs/terminal capabilities) -> `session/new {cwd,
mcpServers}` (or `session/load` when the caller resumes and the agent's `initialize` answer
says `loadSession`) -> `session/set_model` when a model is asked for and the agent listed
`models` -> `session/prompt` (text blocks), while the agent streams `session/update`
notifications and may ask `session/request_permission`; the prompt's answer carries
`stopReason`. Permission requests are answered from the call's `ToolPolicy` (see
`permission_allowed`); requests for client capabilities we did not offer get -32601.

Modules: `_acp_wire` (pure parts), `_acp_rpc` (the connection, and why our own client).
Errors: a JSON-RPC error whose code is an HTTP status is classified by status; -32000 is
auth_required; -32601 unsupported; -32602 invalid_request; otherwise by message text
(`rpc_error`). An agent that exits is process_failed with its stderr tail.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure, Result, Success

from ..config import LLMSettings
from ..core import (
    AgentEvent,
    BackendCapability,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventStream,
    EventType,
    Message,
    ProviderError,
    RawInfo,
    RuntimeHandle,
    ToolPolicy,
    as_messages,
    as_quota,
    merge_config,
    until_consumer_leaves,
)
from ..transport import DEFAULT_MAX_LINE_BYTES, child_env, private_tempdir
from ._acp_rpc import PROTOCOL_VERSION, AgentConnection, RpcFailure
from ._acp_wire import (
    absolute_cwd,
    choose_option,
    decode_update,
    permission_allowed,
    prompt_text,
    schema_or_plain,
    usage_of,
)
from ._endstate import ToolLedger, refusal_error, with_progress
from ._policy import inherit_env
from ._spec import text_after_last_tool

__all__ = [
    "PROTOCOL_VERSION",
    "AcpAdapter",
    "AcpRuntime",
    "create_adapter",
    "create_runtime",
    "decode_update",
    "permission_allowed",
]

Sink = Callable[[AgentEvent], Awaitable[None]]


# ---------------------------------------------------------------------- sessions and turns


@dataclass(slots=True)
class _Turn:
    """What one `session/prompt` collects."""

    sink: Sink | None
    events: list[AgentEvent] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    tools: ToolLedger = field(default_factory=ToolLedger)  # calls with no result yet


class _Session:
    """An initialised agent with one ACP session; runs prompts one at a time."""

    def __init__(self, capability: BackendCapability, options: Mapping[str, Any]) -> None:
        self.capability = capability
        self.options = options
        self.agent: AgentConnection | None = None
        self.init: dict[str, Any] = {}
        self.session_id: str | None = None
        self.models: dict[str, Any] = {}
        self.model: str | None = None
        self.cwd: Path | None = None
        self._turn: _Turn | None = None
        self._tools = ToolPolicy()
        self.events: list[AgentEvent] = []  # the last turn's, kept after it ends

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
        """Spawn the agent, `initialize`, then open (or load) the session."""
        user_env = {str(k): str(v) for k, v in dict(self.options.get("env") or {}).items()}
        agent = AgentConnection(
            self.command(),
            child_env(os.environ, user_env, inherit=inherit_env(self.options)),
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
        if config.session_id:
            await self.load(config.session_id, config)
        else:
            await self._new(config)

    @property
    def capabilities(self) -> dict[str, Any]:
        """The agent's `agentCapabilities` from its `initialize` answer."""
        caps = self.init.get("agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    async def _new(self, config: CompletionConfig) -> None:
        assert self.agent is not None
        assert self.cwd is not None
        params = {"cwd": str(self.cwd), "mcpServers": list(self.options.get("mcp_servers", []))}
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
                    "mcpServers": list(self.options.get("mcp_servers", [])),
                },
                limit_s=config.startup_timeout_s,
                which="startup",
            )
        finally:
            self._turn = replay
        self.session_id = session_id

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
        if method != "session/update" or turn is None or not isinstance(params, dict):
            return
        if params.get("sessionId") not in (None, self.session_id):
            return
        update = params.get("update")
        event = decode_update(update) if isinstance(update, dict) else None
        if event is None:
            return
        turn.events.append(event)
        turn.tools.observe(event)
        await self._emit(turn, event)

    async def _emit(self, turn: _Turn, event: AgentEvent) -> None:
        if turn.sink is not None:
            try:
                await turn.sink(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                turn.sink = None  # the consumer stopped reading: stop the turn
                turn.scope.cancel()

    async def _on_request(self, method: str, params: Any) -> Any:
        if method != "session/request_permission" or not isinstance(params, dict):
            raise RpcFailure(-32601, f"method not found: {method}")
        raw_call = params.get("toolCall")
        tool_call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        allowed = permission_allowed(tool_call, self._tools, self.cwd or Path.cwd())
        option = choose_option(params.get("options") or [], allowed)
        if self._turn is not None:
            self._turn.permissions.append(
                {"tool": tool_call.get("title"), "kind": tool_call.get("kind"),
                 "allowed": allowed, "option": option}
            )  # fmt: skip
        if option is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option}}

    async def prompt(
        self, text: str, config: CompletionConfig, sink: Sink | None
    ) -> Result[CompletionResponse, ProviderError]:
        """One `session/prompt` turn (the caller bounds it with the total timeout)."""
        assert self.agent is not None
        started = time.monotonic()
        if config.model:
            await self._set_model(config.model, config)
        self._tools = config.tools
        turn = self._turn = _Turn(sink)
        self.events = turn.events
        params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
        result: Any = None
        with turn.scope:
            try:
                result = await self.agent.request(
                    "session/prompt", params, limit_s=config.idle_timeout_s
                )
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
        if turn.scope.cancelled_caught:
            return Failure(ProviderError(
                ErrorKind.process_failed, "the consumer stopped reading; the turn was cancelled",
                retryable=False,
            ))  # fmt: skip
        for closed in turn.tools.close():  # the turn ended: a call with no result is abandoned
            await self._emit(turn, closed)
        result = result if isinstance(result, dict) else {}
        stop = str(result.get("stopReason") or "end_turn")
        if stop == "max_turn_requests":
            return Failure(ProviderError(
                ErrorKind.process_failed, "the agent reached its turn limit (max_turn_requests)",
                retryable=False,
            ))  # fmt: skip
        if stop == "refusal":  # the same rule as every CLI backend (_endstate)
            return Failure(refusal_error(text_after_last_tool(turn.events), None))
        if stop == "cancelled":
            return Failure(ProviderError(ErrorKind.process_failed, "the turn was cancelled"))
        answer = text_after_last_tool(turn.events)
        if not answer.strip():
            return Failure(ProviderError(ErrorKind.bad_output, "the agent ended its turn "
                                         "without an answer"))  # fmt: skip
        warnings: tuple[str, ...] = ()
        if stop == "max_tokens":
            warnings = ("the answer was cut at the token limit (stopReason max_tokens)",)
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
                    },
                ),
            )
        )

    async def close(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()

    def stderr_tail(self) -> str:
        return self.agent.stderr_tail[-4000:] if self.agent is not None else ""


# ---------------------------------------------------------------------- adapter and runtime


class AcpAdapter:
    """`LLMAdapter` over an ACP agent: one process per call (spawn, initialize, session,
    prompt, teardown). Options: see the module docstring."""

    def __init__(self, capability: BackendCapability, settings: LLMSettings) -> None:
        self.capability = capability
        self.options: dict[str, Any] = settings.options(capability.name)
        self.default_config = settings.completion_config()

    @property
    def backend(self) -> str:
        return self.capability.name

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        config = merge_config(config, self.default_config)
        return await schema_or_plain(
            self.capability, messages, config, lambda convo: self._once(convo, config)
        )

    async def _once(
        self, messages: Sequence[Message], config: CompletionConfig
    ) -> Result[CompletionResponse, ProviderError]:
        session = _Session(self.capability, self.options)
        result: Result[CompletionResponse, ProviderError] = Failure(
            ProviderError(ErrorKind.timeout, f"still running after {config.total_timeout_s:g}s",
                          timeout="total")
        )  # fmt: skip
        with private_tempdir("agentport-acp-") as tmp:
            cwd = absolute_cwd(config.cwd or tmp)
            async with anyio.create_task_group() as tg:
                try:
                    with anyio.move_on_after(config.total_timeout_s):
                        try:
                            await session.open(tg, config, cwd)
                            result = await session.prompt(prompt_text(messages), config, None)
                        except ProviderError as exc:
                            result = Failure(exc)
                finally:
                    await session.close()
                    tg.cancel_scope.cancel()
        if isinstance(result, Failure):
            error = result.failure()
            if not error.stderr_tail:
                error.stderr_tail = session.stderr_tail()
            error = with_progress(as_quota(error), session.events)
            return Failure(error.with_backend(self.backend))
        return result


class AcpRuntime:
    """`AgentRuntime` over an ACP agent: ONE agent process and ONE ACP session for the whole
    `async with` block; each `send` is a `session/prompt` in that session (turns run one at a
    time). The agent starts with the first `send`, so its failures arrive as `error` events.
    A config with another `session_id` loads that session first (`session/load`).
    """

    def __init__(
        self, capability: BackendCapability, settings: LLMSettings, buffer: int = 64
    ) -> None:
        self.capability = capability
        self.options: dict[str, Any] = settings.options(capability.name)
        self.default_config = settings.completion_config()
        self._handle = RuntimeHandle(backend=capability.name)
        self._buffer = buffer
        self._tg: TaskGroup | None = None
        self._session: _Session | None = None
        self._workdir: ExitStack | None = None
        self._lock = anyio.Lock()

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def __aenter__(self) -> Self:
        self._workdir = ExitStack()
        self._handle.cwd = self._workdir.enter_context(private_tempdir("agentport-acp-rt-"))
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        tg, self._tg = self._tg, None
        try:
            tg.cancel_scope.cancel()  # a running turn sends session/cancel on its way out
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            await self._drop_session()  # shielded and bounded
            if self._workdir is not None:
                self._workdir.close()
                self._workdir = None

    def send(
        self, prompt: str | Sequence[Message], config: CompletionConfig | None = None
    ) -> AsyncIterator[AgentEvent]:
        if self._tg is None:
            raise RuntimeError("use `async with` before send()")
        send, receive = anyio.create_memory_object_stream[AgentEvent](self._buffer)
        self._tg.start_soon(self._turn, as_messages(prompt), config, send)
        return EventStream(receive)

    async def _ensure(self, config: CompletionConfig) -> _Session:
        assert self._tg is not None
        if self._session is None:
            session = _Session(self.capability, self.options)
            self._session = session
            cwd = absolute_cwd(config.cwd or self._handle.cwd or ".")
            try:
                await session.open(self._tg, config, cwd)
            except BaseException:
                await self._drop_session()  # never reuse a half-opened agent
                raise
            self._handle.session_id = session.session_id
        elif config.session_id and config.session_id != self._session.session_id:
            await self._session.load(config.session_id, config)
            self._handle.session_id = config.session_id
        return self._session

    async def _turn(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        async with send, self._lock:
            finished = False
            with until_consumer_leaves():  # the caller closed the stream: the turn just ends
                await self._turn_events(messages, config, send)
                finished = True
            if not finished:
                await self._drop_session()  # an agent left mid-prompt is not reused

    async def _turn_events(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        config = merge_config(config, self.default_config)

        async def sink(event: AgentEvent) -> None:
            await send.send(event)

        async def once(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
            with anyio.move_on_after(config.total_timeout_s) as total:
                try:
                    session = await self._ensure(config)
                    if session.session_id:
                        await sink(AgentEvent(
                            type=EventType.init,
                            metadata={"session_id": session.session_id},
                        ))  # fmt: skip
                    return await session.prompt(prompt_text(convo), config, sink)
                except ProviderError as exc:
                    return Failure(exc.with_backend(self.capability.name))
            assert total.cancelled_caught
            return Failure(ProviderError(
                ErrorKind.timeout, f"still running after {config.total_timeout_s:g}s",
                timeout="total", backend=self.capability.name,
            ))  # fmt: skip

        result = await schema_or_plain(self.capability, messages, config, once)
        if isinstance(result, Failure):
            error = result.failure()
            if isinstance(error, ProviderError) and error.kind in (
                ErrorKind.timeout,
                ErrorKind.process_failed,
            ):
                await self._drop_session()  # a stuck or dead agent is not reused
            final = AgentEvent(
                type=EventType.error, content=str(error), is_error=True,
                metadata={"error": error},
            )  # fmt: skip
        else:
            response = result.unwrap()
            final = AgentEvent(
                type=EventType.final,
                content=response.content,
                metadata={"response": response, "usage": response.usage},
            )
        await send.send(final)

    async def _drop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def create_adapter(capability: BackendCapability, settings: LLMSettings) -> AcpAdapter:
    return AcpAdapter(capability, settings)


def create_runtime(capability: BackendCapability, settings: LLMSettings) -> AcpRuntime:
    return AcpRuntime(capability, settings)
