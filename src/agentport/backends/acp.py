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

import hashlib
import json
from collections.abc import Sequence
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream
from returns.result import Failure, Result, Success

from ..core import (
    AgentEvent,
    BackendCapability,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    Deadline,
    ErrorKind,
    EventType,
    McpServer,
    Message,
    OpenedCall,
    ProviderError,
    RuntimeHandle,
    ToolFunction,
    TurnEvents,
    TurnRuntime,
    as_quota,
    complete_call,
    last_event,
    plan_call,
)
from ..structured import complete_constrained
from ..transport import (
    WarmPool,
    call_pool,
    check_binary,
    close_shared,
    empty_folder,
    pool_size,
    private_tempdir,
)
from ._acp_rpc import PROTOCOL_VERSION
from ._acp_session import Session, agent_env
from ._acp_wire import absolute_cwd, decode_update, permission_allowed, prompt_text, schema_or_plain
from ._caller_tools import caller_tools, with_server
from ._endstate import with_progress
from ._settings import BackendSettings

__all__ = [
    "PROTOCOL_VERSION",
    "AcpAdapter",
    "AcpRuntime",
    "create_adapter",
    "create_runtime",
    "decode_update",
    "permission_allowed",
]


# ---------------------------------------------------------------------- adapter and runtime


class AcpAdapter(ClosableAdapter):
    """`LLMAdapter` over an ACP agent. Options: see the module docstring.

    Cold (the default for a direct call): one process per call (spawn, initialize, session,
    prompt, teardown). Warm (`[llm] warm = N`, or inside `agentport.transport.warm_processes`
    when `warm` is unset, as the workflows run): up to N idle agents are kept after calls that
    succeeded; a call takes one and opens a fresh session on it (`session/new`: no
    conversation is shared between calls), so it skips the agent's start-up. An agent that saw
    any error, or served `DEFAULT_MAX_USES` calls, is closed instead. Adapters made with the
    same options share one pool (`agentport.transport.shared_pool`)."""

    def __init__(self, capability: BackendCapability, settings: BackendSettings) -> None:
        self.capability = capability
        self.options: dict[str, Any] = dict(settings.options)
        self.default_config = settings.defaults
        self.warm = settings.warm
        self.keeps_warm = True  # `[llm] warm` applies

    @property
    def backend(self) -> str:
        return self.capability.name

    def warm_pool(self) -> WarmPool[Session] | None:
        """The pool this call uses: a `warm_processes` block's, else the process-wide one, for
        this backend and options (adapters made alike share agents); None when warm agents
        are off (`warm = 0`, or unset outside a block)."""
        size = pool_size(self.warm)
        if not size:
            return None
        pool: WarmPool[Session] = call_pool(self._warm_key(), size)
        return pool

    def _warm_key(self) -> tuple[str, str]:
        # what a started agent depends on: its options (command line, limits) and environment;
        # hashed, so no key or token of the environment is kept in the pool registry
        started_with = {"options": self.options, "env": agent_env(self.options)}
        text = json.dumps(started_with, sort_keys=True, default=str)
        return self.capability.name, hashlib.sha256(text.encode()).hexdigest()

    async def aclose(self) -> None:
        """Close the idle warm agents of this backend and options outside any block (those of
        a `warm_processes` block close with the block)."""
        await close_shared(self._warm_key())

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        # unbounded frame: `_prompted` ends by the plan's deadline itself, so it can still
        # close (or keep) the agent and say how far the prompt got
        return await complete_call(
            self.capability, messages, config, self.default_config, self._opened, bounded=False
        )

    async def _opened(self, call: OpenedCall) -> Result[CompletionResponse, ProviderError]:
        """The call after its opening (merged once, checked): its `functions` served, then
        the structured-output loop over `_once`, every prompt sharing the plan's deadline."""
        async with caller_tools(self.capability, call.config) as served:
            return await complete_constrained(
                lambda convo: self._once(convo, served, call.deadline),
                call.messages,
                served,
                backend=self.backend,
            )

    async def _once(
        self, messages: Sequence[Message], config: CompletionConfig, deadline: Deadline
    ) -> Result[CompletionResponse, ProviderError]:
        try:  # the agent's executable: the one this process first ran, or a typed failure
            exe = Session(self.capability, self.options).command()[0]
        except ProviderError as exc:
            return Failure(exc.with_backend(self.backend))
        binary = await check_binary(self.backend, exe, self.options.get("on_binary_change", "fail"))
        if isinstance(binary, ProviderError):
            return Failure(binary)
        result = await self._prompted(messages, config, deadline)
        return result.map(lambda r: r.model_copy(update={"binary": binary}))

    async def _prompted(
        self, messages: Sequence[Message], config: CompletionConfig, deadline: Deadline
    ) -> Result[CompletionResponse, ProviderError]:
        # a kept agent's session has the MCP servers of the call that opened it
        pool = None if config.mcp_servers else self.warm_pool()
        session: Session | None = None
        result: Result[CompletionResponse, ProviderError] = Failure(_past(deadline))
        with ExitStack() as folders:
            cwd: Path | None = None  # warm, without a cwd of the call's: the agent's folder
            if config.cwd:
                cwd = absolute_cwd(config.cwd)
            elif pool is None:  # cold: a folder of this call's own
                cwd = absolute_cwd(folders.enter_context(private_tempdir("agentport-acp-")))
            async with anyio.create_task_group() as tg:
                try:
                    with anyio.move_on_after(deadline.remaining()):
                        try:
                            session = await pool.take() if pool is not None else None
                            if session is not None:
                                session = await self._resume(session, tg, config, cwd)
                            if session is None:
                                session = await self._start(pool, tg, config, cwd)
                            result = await session.prompt(prompt_text(messages), config, None)
                        except ProviderError as exc:
                            result = Failure(exc)
                finally:
                    if session is not None and (pool is None or isinstance(result, Failure)):
                        await session.aclose()  # shielded and bounded
                    tg.cancel_scope.cancel()  # stops reading the agent; a warm one stays
        if pool is not None and session is not None and isinstance(result, Success):
            await pool.give(session)
        if isinstance(result, Failure):
            error = result.failure()
            if session is not None and not error.stderr_tail:
                error = error.replace(stderr_tail=session.stderr_tail())
            error = with_progress(as_quota(error), session.events if session else [])
            return Failure(error.with_backend(self.backend))
        return result

    async def _start(
        self,
        pool: WarmPool[Session] | None,
        tg: TaskGroup,
        config: CompletionConfig,
        cwd: Path | None,
    ) -> Session:
        """A new agent and a session on it in *cwd* (the call's `cwd` or, cold, a folder of
        the call's own). A warm agent outlives the call: it runs in a folder of its own,
        which is also its sessions' folder when the call sets no `cwd` (`_resume`)."""
        session = Session(self.capability, self.options)
        if pool is None:
            assert cwd is not None
            try:
                await session.open(tg, config, cwd)
            except BaseException:  # cancelled or failed half-way: the caller never sees it
                await session.aclose()
                raise
            return session
        session.workdir = ExitStack()
        session.home = absolute_cwd(
            session.workdir.enter_context(private_tempdir("agentport-acp-w-"))
        )
        pool.started(session)
        try:
            await session.start(tg, config, session.home)
            await session.begin(config, cwd or session.home)
        except BaseException:
            await session.aclose()
            raise
        return session

    async def _resume(
        self, session: Session, tg: TaskGroup, config: CompletionConfig, cwd: Path | None
    ) -> Session | None:
        """A fresh session on a warm agent; None (the agent closed) when it cannot open one,
        as when it died while idle: the call then starts a new agent.

        Without a `cwd` of the call's, the session opens in the agent's own folder, emptied
        first (no file of an earlier call is left). One folder for all its sessions is what
        lets an agent reuse its per-folder set-up: opencode 1.18.33 answers `session/new` in
        0.01-0.02 s and the prompt in 0.17-0.23 s for a folder it has seen, against 0.5-1.0 s
        and 0.7-1.0 s for a new one."""
        assert session.home is not None  # a pooled agent was started by `_start`
        session.attach(tg)
        if cwd is None:
            empty_folder(session.home)
        try:
            await session.begin(config, cwd or session.home)
        except ProviderError:
            await session.aclose()
            return None
        return session


class AcpRuntime(TurnRuntime):
    """`AgentRuntime` over an ACP agent: ONE agent process and ONE ACP session for the whole
    `async with` block; each `send` is a `session/prompt` in that session (turns run one at a
    time). The agent starts with the first `send`, so its failures arrive as `error` events.
    A config with another `session_id` loads that session first (`session/load`).
    """

    def __init__(
        self, capability: BackendCapability, settings: BackendSettings, buffer: int = 64
    ) -> None:
        super().__init__(buffer)
        self.capability = capability
        self._settings = settings
        self.options: dict[str, Any] = dict(settings.options)
        self.default_config = settings.defaults
        self._handle = RuntimeHandle(backend=capability.name)
        self._fork_from: tuple[str, Path | None] | None = None  # (session, its cwd)
        #: the functions the session was opened with, and the MCP server that serves them
        self._functions: tuple[tuple[ToolFunction, ...], McpServer] | None = None
        self._session: Session | None = None
        self._lock = anyio.Lock()

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def _open(self, stack: AsyncExitStack) -> None:
        self._handle.cwd = stack.enter_context(private_tempdir("agentport-acp-rt-"))
        stack.push_async_callback(self._drop_session)  # shielded and bounded
        # a running turn sends session/cancel on its way out, when the task group closes
        await super()._open(stack)

    def interrupt(self) -> bool:
        """End the running turn: `session/cancel` (ACP has the agent end the prompt turn with
        stopReason `cancelled`); its event stream ends with an `error` event of kind
        `interrupted`, and the next `send` goes on in the same session with the same agent.
        An agent that has not ended the turn after `grace_s` (default 3) seconds is not
        waited for. False when no turn was running."""
        session = self._session
        if self._tg is None or session is None:
            return False
        return session.interrupt(self._tg, float(self.options.get("grace_s", 3.0)))

    def fork(self) -> AcpRuntime:
        """A new runtime (enter it with `async with`) whose first turn continues a copy of
        this session under a new id (`session/fork`) on an agent of its own, in this
        runtime's working folder. `ValueError` before this session has an id; the first turn
        fails `unsupported` when the agent does not offer `sessionCapabilities.fork`."""
        if not self._handle.session_id:
            raise ValueError("fork() needs a session: run a turn first")
        forked = AcpRuntime(self.capability, self._settings, self._buffer)
        forked._fork_from = (self._handle.session_id, self._handle.cwd)
        return forked

    async def _serving(self, config: CompletionConfig) -> CompletionConfig:
        """*config* with its `functions` served for the runtime's life (the agent keeps the
        servers of `session/new` for the session): the first turn's functions are the
        session's; a later turn may repeat them or name none, others are `unsupported`."""
        if not config.functions:
            return config
        if self._functions is None:
            assert self._tg is not None
            try:
                server = await self._tg.start(self._serve, config.functions)
            except ImportError as exc:  # the mcp extra is missing
                raise ProviderError(ErrorKind.config, str(exc), retryable=False) from None
            self._functions = (config.functions, server)
        functions, server = self._functions
        if config.functions != functions:
            raise ProviderError(
                ErrorKind.unsupported,
                "an ACP runtime serves the functions of its first turn for the whole session "
                "(session/new takes the MCP servers once): open a new runtime for others",
                retryable=False, request_sent=False, details={"params": ["functions"]},
            )  # fmt: skip
        return with_server(config, server)

    @staticmethod
    async def _serve(
        functions: tuple[ToolFunction, ...], *, task_status: TaskStatus[McpServer]
    ) -> None:
        from ..transport import serve_functions

        async with serve_functions(functions) as server:
            task_status.started(server)
            await anyio.sleep_forever()  # until the runtime's task group closes

    async def _ensure(self, config: CompletionConfig) -> Session:
        assert self._tg is not None
        if self._session is None:
            session = Session(self.capability, self.options)
            self._session = session
            if self._fork_from is not None:  # this runtime's first session forks its source
                (source, folder), self._fork_from = self._fork_from, None
                update = {"session_id": source, "fork_session": True}
                config = config.model_copy(update=update)
                if folder is not None and "cwd" not in config.model_fields_set:
                    self._handle.cwd = folder
            cwd = absolute_cwd(config.cwd or self._handle.cwd or ".")
            try:
                await session.open(self._tg, config, cwd)
            except BaseException:
                await self._drop_session()  # never reuse a half-opened agent
                raise
            self._handle.session_id = session.session_id
        elif config.session_id and config.fork_session:
            await self._session.fork(config.session_id, config)
            self._handle.session_id = self._session.session_id
        elif config.session_id and config.session_id != self._session.session_id:
            await self._session.load(config.session_id, config)
            self._handle.session_id = config.session_id
        return self._session

    async def _turn(
        self, messages: list[Message], config: CompletionConfig | None, send: TurnEvents
    ) -> None:
        async with self._lock:
            try:
                await self._turn_events(messages, config, send)
            except* anyio.BrokenResourceError:  # the caller stopped reading mid-prompt
                await self._drop_session()  # an agent left mid-prompt is not reused
                raise

    async def _turn_events(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        plan = plan_call(messages, config, self.default_config)  # the turn's merge and deadline
        config, deadline = plan.config, plan.deadline

        async def sink(event: AgentEvent) -> None:
            await send.send(event)

        async def once(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
            with anyio.move_on_after(deadline.remaining()) as total:
                try:
                    served = await self._serving(config)
                    session = await self._ensure(served)
                    if session.session_id:
                        await sink(AgentEvent(
                            type=EventType.init,
                            metadata={"session_id": session.session_id},
                        ))  # fmt: skip
                    return await session.prompt(prompt_text(convo), served, sink)
                except ProviderError as exc:
                    return Failure(exc.with_backend(self.capability.name))
            assert total.cancelled_caught
            return Failure(_past(deadline, self.capability.name))

        result = await schema_or_plain(self.capability, messages, config, once)
        if isinstance(result, Failure):
            error = result.failure()
            if isinstance(error, ProviderError) and error.kind in (
                ErrorKind.timeout,
                ErrorKind.process_failed,
            ):
                await self._drop_session()  # a stuck or dead agent is not reused
        final = last_event(result)
        await send.send(final)

    async def _drop_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _past(deadline: Deadline, backend: str = "") -> ProviderError:
    """The timeout of a prompt still running at the call's *deadline*, naming its limit
    (`total_timeout_s`, or a retry policy's `attempt_timeout_s`)."""
    return ProviderError(
        ErrorKind.timeout,
        f"still running at the call's deadline ({deadline.words()})",
        timeout="attempt" if deadline.limit == "attempt" else "total",
        backend=backend,
    )


def create_adapter(capability: BackendCapability, settings: BackendSettings) -> AcpAdapter:
    return AcpAdapter(capability, settings)


def create_runtime(capability: BackendCapability, settings: BackendSettings) -> AcpRuntime:
    return AcpRuntime(capability, settings)
