"""The one generic CLI adapter: `CliAdapter` (`LLMAdapter.complete`) and `CliRuntime`
(`AgentRuntime`), both driven by a `BackendSpec` and the backend's catalog entry.

Per call: check the parameters against the catalog (`check_params`), render the messages into
one prompt (the system prompt NATIVE or folded in, per the catalog), shape the schema (NATIVE:
`spec.native_schema`; TRANSLATED: instruction + validate-and-retry from `agentport.structured`),
`spec.build` the invocation, run it with `agentport.transport.run_process`, `spec.decode` each
line, then `spec.classify` the outcome. Source: DESIGN.md ("A backend is a spec", "AgentRuntime").
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from returns.result import Failure, Result, Success

from ..core import (
    AgentEvent,
    BackendCapability,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    EventStream,
    EventType,
    Message,
    MessageRole,
    Param,
    ParamSupport,
    ProviderError,
    RawInfo,
    RuntimeHandle,
    Usage,
    as_messages,
    as_quota,
    merge_config,
    prepare_messages,
    redact,
    until_consumer_leaves,
)
from ..core._telemetry import span, trace_env
from ..structured import (
    complete_with_choices,
    complete_with_schema,
    extract_json,
    restore_strict,
)
from ..transport import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_MAX_LINE_BYTES,
    Frame,
    ProcessRequest,
    ProcessResult,
    child_env,
    private_tempdir,
    run_process,
)
from ._endstate import (
    DEFAULT_ERROR_GRACE_S,
    RunWatch,
    ToolLedger,
    reported_usage,
    settle,
    with_progress,
)
from ._policy import inherit_env, withheld_hint
from ._retry_notice import notice_error
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome
from ._web_events import web_activity

if TYPE_CHECKING:  # settings arrive from the factory; config sits above backends
    from ..config import LLMSettings

__all__ = ["CliAdapter", "CliRuntime", "render_prompt"]

Sink = Callable[[AgentEvent], Awaitable[None]]


def render_prompt(messages: Sequence[Message], *, fold_system: bool) -> str:
    """One prompt from a conversation. A lone user message is passed as is; otherwise each
    message is labelled (`User:` / `Assistant:`). With `fold_system` the system messages lead
    as a `System instructions:` block (TRANSLATED system prompt)."""
    system = [m.content for m in messages if m.role is MessageRole.system]
    turns = [m for m in messages if m.role is not MessageRole.system]
    if len(turns) == 1 and turns[0].role is MessageRole.user:
        body = turns[0].content
    else:
        label = {MessageRole.user: "User", MessageRole.assistant: "Assistant"}
        body = "\n\n".join(f"{label[m.role]}: {m.content}" for m in turns)
        body += "\n\nReply to the last User message."
    if fold_system and system:
        return "System instructions:\n" + "\n\n".join(system) + "\n\n" + body
    return body


class CliAdapter:
    """`LLMAdapter` for any agent CLI described by a `BackendSpec`.

    Options (`[llm.<backend>]`, all optional): `executable` (path of the CLI), `env` (a table
    of extra environment variables), `inherit_env` (parent variables let through beyond the
    allow-list, names or `fnmatch` patterns: docs/security.md), `grace_s` (SIGTERM→SIGKILL
    seconds, default 3),
    `linger_s` (how long the CLI may run on after its final event, default 1),
    `error_grace_s` (how long it may stay silent after a fatal error line, default 5),
    `max_line_bytes` (default 64 MiB), plus the backend's own options (see its docs page).
    How a run's last events decide its outcome: `agentport.backends._endstate`.
    """

    def __init__(
        self, spec: BackendSpec, capability: BackendCapability, settings: LLMSettings
    ) -> None:
        self.spec = spec
        self.capability = capability
        self.options: dict[str, Any] = settings.options(capability.name)
        self.default_config = settings.completion_config()

    @property
    def backend(self) -> str:
        return self.capability.name

    @property
    def _model_ignored(self) -> bool:
        # a model the CLI cannot be told (zcode) is not the model that answered
        return self.capability.support(Param.model) is ParamSupport.IGNORED

    def executable(self) -> str | None:
        explicit = self.options.get("executable")
        if explicit:
            return str(explicit) if Path(str(explicit)).exists() else shutil.which(str(explicit))
        return shutil.which(self.capability.executable or self.capability.name)

    async def complete(
        self, messages: Sequence[Message], config: CompletionConfig | None = None
    ) -> Result[CompletionResponse, ProviderError]:
        return await self.run(messages, config)

    async def run(
        self,
        messages: Sequence[Message],
        config: CompletionConfig | None = None,
        sink: Sink | None = None,
    ) -> Result[CompletionResponse, ProviderError]:
        """`complete`, also handing every decoded event to *sink* as it arrives."""
        config = merge_config(config, self.default_config)
        deadline = time.monotonic() + config.attempt_budget_s  # re-prompts share it
        prepared = prepare_messages(self.capability, messages, config)
        if isinstance(prepared, Failure):
            return prepared
        messages, warnings = prepared.unwrap()
        if config.choices is not None:
            # no agent CLI constrains decoding to a list: instruction, match, re-prompt

            async def ask(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
                return await self._once(convo, config, False, sink, deadline)

            result = await complete_with_choices(ask, messages, config, backend=self.backend)
        elif config.output_schema is None:
            result = await self._once(messages, config, False, sink, deadline)
        else:
            native = (
                self.capability.support(Param.output_schema) is ParamSupport.NATIVE
                and self.spec.native_schema is not None
            )

            async def call(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
                return await self._once(convo, config, False, sink, deadline)

            async def enforced(convo: list[Message]) -> Result[CompletionResponse, ProviderError]:
                return await self._once(convo, config, True, sink, deadline)

            # NATIVE only when the schema fits the strict subset (decided in structured)
            result = await complete_with_schema(
                call,
                messages,
                config,
                native=enforced if native else None,
                backend=self.backend,
            )
        if warnings and isinstance(result, Success):
            response = result.unwrap()
            return Success(response.model_copy(update={"warnings": warnings + response.warnings}))
        return result

    def _fail(
        self,
        error: ProviderError,
        env: Mapping[str, str] | None = None,
        events: Sequence[AgentEvent] | None = None,
    ) -> Failure[ProviderError]:
        # an exhausted usage window the CLI reported: quota_exhausted + retry_at; a variable
        # the CLI asked for that the allow-list kept back: named, with how to pass it
        if env is not None:
            error = withheld_hint(error, self.backend, os.environ, env)
        if events is not None:  # the CLI ran: what it printed says how far the request got
            error = with_progress(error, events)
        return Failure(as_quota(error).with_backend(self.backend))

    async def _once(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        native_schema: bool,
        sink: Sink | None,
        deadline: float | None = None,
    ) -> Result[CompletionResponse, ProviderError]:
        """One CLI process: refuse what cannot start, build its invocation, run it through
        the runner, and judge what it printed (`_settle`)."""
        started = time.monotonic()
        exe = self.executable()
        refused = self._refused(config, started, deadline, exe)
        if refused is not None:
            return refused
        assert exe is not None
        turn = _Turn(
            self.spec, sink, float(self.options.get("error_grace_s", DEFAULT_ERROR_GRACE_S))
        )
        with ExitStack() as stack:
            run_dir = stack.enter_context(private_tempdir(f"agentport-{self.backend}-"))
            call = self._call(messages, config, native_schema, exe, run_dir, started, deadline)
            built = await self._build(call)
            if isinstance(built, Failure):
                return built
            invocation, env = built
            budget_s = config.attempt_budget_s if deadline is None else deadline - started
            more = turn.dialogue(invocation, stack)
            with span(f"exec {Path(exe).name}", {"agentport.backend": self.backend}) as current:
                env.update(trace_env())  # the CLI continues this trace (OpenTelemetry)
                request = self._request(invocation, env, call, budget_s, more)
                outcome = await run_process(request, turn.on_frame)
                if current is not None:
                    found = {"process.pid": outcome.pid, "process.exit.code": outcome.exit_code}
                    current.set_attributes({k: v for k, v in found.items() if v is not None})
        await turn.emit(*turn.ledger.close())
        return self._settle(outcome, turn, env, config, native_schema, started)

    def _refused(
        self, config: CompletionConfig, started: float, deadline: float | None, exe: str | None
    ) -> Failure[ProviderError] | None:
        """The failure of a call that cannot start: its deadline is spent, or no CLI."""
        if deadline is not None and deadline <= started:
            return self._fail(
                ProviderError(
                    ErrorKind.timeout,
                    f"total_timeout_s={config.total_timeout_s:g} ran out before a re-prompt",
                    timeout="total",
                    request_sent=False,
                )
            )
        if exe is None:
            return self._fail(
                ProviderError(
                    ErrorKind.not_installed,
                    f"{self.capability.executable!r} not found on PATH; "
                    f"{self.capability.install_hint}",
                    retryable=False,
                )
            )
        return None

    def _call(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        native_schema: bool,
        exe: str,
        run_dir: Path,
        started: float,
        deadline: float | None,
    ) -> CliCall:
        """What the spec builds from: the prompt (system folded in unless NATIVE), the native
        schema form when asked for, and a working folder inside the run's private folder
        unless the config names one."""
        system_native = self.capability.support(Param.system_prompt) is ParamSupport.NATIVE
        system = "\n\n".join(m.content for m in messages if m.role is MessageRole.system)
        schema = None
        if native_schema and config.output_schema is not None and self.spec.native_schema:
            schema = self.spec.native_schema(config.output_schema)
        cwd = config.cwd
        if cwd is None:
            cwd = run_dir / "work"
            cwd.mkdir()
        return CliCall(
            executable=exe,
            prompt=render_prompt(messages, fold_system=not system_native),
            system_prompt=(system or None) if system_native else None,
            config=config,
            schema=schema,
            options=self.options,
            run_dir=run_dir,
            cwd=cwd,
            session_id=config.session_id,
            deadline=started + config.attempt_budget_s if deadline is None else deadline,
            images=tuple(image for m in messages for image in m.images),
        )

    async def _build(
        self, call: CliCall
    ) -> tuple[Invocation, dict[str, str]] | Failure[ProviderError]:
        """The spec's invocation and the child's environment (the allow-list, the user's
        `env`, the CLI's own namespace unless `base_url` is set), then the files the argv
        names (`BackendSpec.prepare`). Either may refuse: `unsupported`, `config`."""
        user_env = {str(k): str(v) for k, v in dict(self.options.get("env") or {}).items()}
        try:
            invocation = self.spec.build(call)
            namespace = () if self.options.get("base_url") else self.capability.env_namespace
            env = child_env(
                os.environ,
                {**self.spec.extra_env, **user_env, **invocation.env},
                passthrough=(*invocation.passthrough, *namespace),
                inherit=inherit_env(self.options),
            )
            if self.spec.prepare is not None:  # may fail closed (codex's model catalog)
                await self.spec.prepare(call, invocation, env)
        except ProviderError as exc:
            return self._fail(exc)
        return invocation, env

    def _request(
        self,
        invocation: Invocation,
        env: dict[str, str],
        call: CliCall,
        budget_s: float,
        stdin_more: MemoryObjectReceiveStream[bytes] | None,
    ) -> ProcessRequest:
        """The runner's request: the call's timeouts and the backend's options."""
        config = call.config
        watcher = self.spec.retry_notice
        return ProcessRequest(
            argv=invocation.argv,
            env=env,
            cwd=call.cwd,
            stdin=invocation.stdin,
            stdin_more=stdin_more,
            startup_timeout_s=config.startup_timeout_s,
            idle_timeout_s=config.idle_timeout_s,
            total_timeout_s=budget_s,
            grace_s=float(self.options.get("grace_s", 3.0)),
            linger_s=float(self.options.get("linger_s", 1.0)),
            stdout_to_file=self.spec.stdout_to_file,
            max_line_bytes=int(self.options.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)),
            max_events=int(self.options.get("max_events", DEFAULT_MAX_EVENTS)),
            on_stderr_line=None if watcher is None else watcher(),
            log_dir=invocation.log_dir,
        )

    def _settle(
        self,
        outcome: ProcessResult,
        turn: _Turn,
        env: Mapping[str, str],
        config: CompletionConfig,
        native_schema: bool,
        started: float,
    ) -> Result[CompletionResponse, ProviderError]:
        """The call's result from what the process did: the runner's own failure, the CLI's
        retry notice, or the end-state judgment (`settle`) of the events it printed."""
        events = turn.events
        if outcome.error is not None:
            error = outcome.error
            error.exit_code = outcome.exit_code
            error.stderr_tail = redact(outcome.stderr_tail[-4000:])
            error.details = {**error.details, "pid": outcome.pid}
            return self._fail(error, env, events)
        notice = next((e for e in events if e.metadata.get("retry_notice")), None)
        if notice is not None:  # the CLI began its own retry: agentport owns retries
            stopped = notice_error(notice, outcome.exit_code, outcome.stderr_tail)
            stopped.details = {**stopped.details, "pid": outcome.pid}
            return self._fail(stopped, env, events)
        run = RunOutcome(outcome.exit_code, outcome.stderr_tail, events, outcome.noise)
        shape = partial(self._shape, events, config) if native_schema else None
        end = settle(self.spec, run, turn.watch.pending, shape or (lambda text: text))
        if end.error is not None:
            end.error.details = {**end.error.details, "pid": outcome.pid}
            return self._fail(end.error, env, events)
        session = next(
            (e.metadata["session_id"] for e in events if e.metadata.get("session_id")), None
        )
        model = next((e.metadata["model"] for e in events if e.metadata.get("model")), None)
        return Success(
            CompletionResponse(
                content=end.text,
                model=(None if self._model_ignored else config.model) or model,
                usage=reported_usage(events) or Usage(),
                finish_reason=end.finish_reason,
                warnings=end.warnings,
                backend=self.backend,
                duration_s=time.monotonic() - started,
                raw=RawInfo(
                    session_id=str(session) if session is not None else None,
                    exit_code=outcome.exit_code,
                    extra={"noise_lines": outcome.noise_count, "pid": outcome.pid}
                    | ({"web": web} if (web := web_activity(events)) else {}),
                ),
            )
        )

    def _shape(self, events: Sequence[AgentEvent], config: CompletionConfig, text: str) -> str:
        """The natively enforced value: the CLI's structured output event when it printed
        one, else the text mapped back from the strict schema subset where the spec says."""
        structured = next(
            (e.metadata["structured"] for e in reversed(events) if "structured" in e.metadata),
            None,
        )
        if structured is not None:
            return json.dumps(structured, ensure_ascii=False)
        if self.spec.restore_schema and config.output_schema is not None:
            value = extract_json(text)
            if value is not None:
                return json.dumps(restore_strict(value, config.output_schema))
        return text


class _Turn:
    """One CLI process as the adapter follows it: the decoded events in order, the end-state
    watch, the tool ledger (abandoned tool results go to the sink, not into `events`), and
    the stdin dialogue of a CLI answered frame by frame (`Invocation.replies`)."""

    def __init__(self, spec: BackendSpec, sink: Sink | None, error_grace_s: float) -> None:
        self.spec = spec
        self.sink = sink
        self.events: list[AgentEvent] = []
        self.watch = RunWatch(error_grace_s)
        self.ledger = ToolLedger()
        self._replies: Callable[[dict[str, Any]], bytes | None] | None = None
        self._more: MemoryObjectSendStream[bytes] | None = None

    def dialogue(
        self, invocation: Invocation, stack: ExitStack
    ) -> MemoryObjectReceiveStream[bytes] | None:
        """More stdin for a CLI that is answered frame by frame (closed with *stack*), else
        None: stdin then closes after the invocation's bytes."""
        if invocation.replies is None:
            return None
        self._replies = invocation.replies
        more, answer = anyio.create_memory_object_stream[bytes](16)
        self._more = stack.enter_context(more)
        return stack.enter_context(answer)

    async def emit(self, *out: AgentEvent) -> None:
        if self.sink is not None:
            for event in out:
                await self.sink(event)

    async def on_frame(self, frame: Frame) -> bool | float:
        event = None
        if frame.is_json and isinstance(frame.value, dict):
            reply = None if self._replies is None else self._replies(frame.value)
            if reply is not None and self._more is not None:
                self._more.send_nowait(reply)  # the CLI's protocol: what stdin says next
            event = self.spec.decode(frame.value)
        if event is not None:
            if event.metadata.get("terminal"):
                await self.emit(*self.ledger.close())  # the turn ends: close what never did
            self.ledger.observe(event)
            self.events.append(event)
            await self.emit(event)
        return self.watch.feed(event)


class CliRuntime:
    """`AgentRuntime` for any agent CLI described by a `BackendSpec`.

    An async context manager owning a task group; each `send` runs one CLI process in it and
    hands its events out through a bounded memory stream (`buffer` events: a slow consumer
    applies back-pressure). A fresh working directory lives as long as the runtime (unless the
    config sets `cwd`); later turns resume `handle.session_id` where the catalog says
    session_resume is NATIVE. Leaving the block cancels a running turn and kills its process.
    """

    def __init__(
        self,
        spec: BackendSpec,
        capability: BackendCapability,
        settings: LLMSettings,
        buffer: int = 64,
    ) -> None:
        self._adapter = CliAdapter(spec, capability, settings)
        self._handle = RuntimeHandle(backend=capability.name)
        self._buffer = buffer
        self._tg: TaskGroup | None = None
        self._workdir: ExitStack | None = None

    @property
    def handle(self) -> RuntimeHandle:
        return self._handle

    async def __aenter__(self) -> Self:
        self._workdir = ExitStack()
        prefix = f"agentport-{self._handle.backend}-rt-"
        self._handle.cwd = self._workdir.enter_context(private_tempdir(prefix))
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
        self._tg.cancel_scope.cancel()
        tg, self._tg = self._tg, None
        try:
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
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

    async def _turn(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        with until_consumer_leaves():  # the caller closed the stream: the turn just ends
            await self._turn_events(messages, config, send)

    async def _turn_events(
        self,
        messages: list[Message],
        config: CompletionConfig | None,
        send: MemoryObjectSendStream[AgentEvent],
    ) -> None:
        async with send:
            config = merge_config(config, self._adapter.default_config)
            update: dict[str, Any] = {}
            if config.cwd is None:
                update["cwd"] = self._handle.cwd
            resumable = self._adapter.capability.support(Param.session_resume)
            if (
                config.session_id is None
                and self._handle.session_id
                and resumable is ParamSupport.NATIVE
            ):
                update["session_id"] = self._handle.session_id
            config = config.model_copy(update=update)

            async def sink(event: AgentEvent) -> None:
                sid = event.metadata.get("session_id")
                if sid:
                    self._handle.session_id = str(sid)
                await send.send(event)

            result = await self._adapter.run(messages, config, sink)
            if isinstance(result, Failure):
                error = result.failure()
                final = AgentEvent(
                    type=EventType.error,
                    content=str(error),
                    is_error=True,
                    metadata={"error": error},
                )
            else:
                response = result.unwrap()
                final = AgentEvent(
                    type=EventType.final,
                    content=response.content,
                    metadata={"response": response, "usage": response.usage},
                )
            await send.send(final)
