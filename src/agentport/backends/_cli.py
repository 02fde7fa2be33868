"""The one generic CLI adapter: `CliAdapter` (`LLMAdapter.complete`), driven by a
`BackendSpec` and the backend's catalog entry (its `AgentRuntime` is `_cli_runtime.CliRuntime`).

Per call: check the parameters against the catalog (`check_params`), render the messages into
one prompt (the system prompt NATIVE or folded in, per the catalog), shape the schema (NATIVE:
`spec.native_schema`; TRANSLATED: instruction + validate-and-retry from `agentport.structured`),
`spec.build` the invocation, run it with `agentport.transport.run_process` (or, warm, as a turn
of a kept process: `_cli_warm`), `spec.decode` each line, then `spec.classify` the outcome.
Every `BackendSpec` runs through this one adapter, so no backend subclasses another.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Hashable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anyio.streams.memory import MemoryObjectReceiveStream
from returns.result import Failure, Result, Success

from ..core import (
    AgentEvent,
    BackendCapability,
    BillingRoute,
    ClosableAdapter,
    CompletionConfig,
    CompletionResponse,
    Deadline,
    ErrorKind,
    Message,
    MessageRole,
    Param,
    ParamSupport,
    ProviderError,
    RawInfo,
    Usage,
    as_quota,
    key_handed,
    plan_call,
    prepare_messages,
    route_for,
    span,
    trace_env,
)
from ..structured import (
    complete_with_choices,
    complete_with_schema,
    extract_json,
    restore_strict,
)
from ..transport import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_MAX_LINE_BYTES,
    LiveProcess,
    ProcessRequest,
    ProcessResult,
    WarmPool,
    call_pool,
    check_binary,
    child_env,
    close_shared,
    pool_size,
    private_tempdir,
    run_process,
)
from ._approval_server import ApprovalEndpoint, approval_server
from ._caller_tools import caller_tools
from ._cli_turn import CliTurn, Sink
from ._cli_warm import Launch, finish, run_turn
from ._endstate import (
    DEFAULT_ERROR_GRACE_S,
    reported_usage,
    settle,
    with_progress,
)
from ._policy import inherit_env, withheld_hint
from ._resume import honest_resume
from ._retry_notice import notice_error
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, over_stdin_limit, render_prompt
from ._web_events import web_activity

if TYPE_CHECKING:
    from ._settings import BackendSettings

__all__ = ["CliAdapter"]


class CliAdapter(ClosableAdapter):
    """`LLMAdapter` for any agent CLI described by a `BackendSpec`.

    Options (`[llm.<backend>]`, all optional): `executable` (path of the CLI), `env` (a table
    of extra environment variables), `inherit_env` (parent variables let through beyond the
    allow-list, names or `fnmatch` patterns: docs/security.md), `grace_s` (SIGTERM→SIGKILL
    seconds, default 3),
    `linger_s` (how long the CLI may run on after its final event, default 1),
    `error_grace_s` (how long it may stay silent after a fatal error line, default the spec's
    or 5),
    `max_line_bytes` (default 64 MiB), plus the backend's own options (see its docs page).
    How a run's last events decide its outcome: `agentport.backends._endstate`.

    Warm (`[llm] warm = N`, or inside `warm_processes`), for a spec with `warm` (claude): a
    call runs as a turn of a kept process with the same command line, after a fresh
    conversation was started on it (`_cli_warm`, docs/warm.md); a resumed session runs cold.
    """

    def __init__(
        self, spec: BackendSpec, capability: BackendCapability, settings: BackendSettings
    ) -> None:
        self.spec = spec
        self.capability = capability
        self.options: dict[str, Any] = dict(settings.options)
        self.default_config = settings.defaults
        self.warm = settings.warm
        self._warm_keys: set[Hashable] = set()

    @property
    def backend(self) -> str:
        return self.capability.name

    @property
    def keeps_warm(self) -> bool:
        """Whether `[llm] warm` applies: the CLI can serve many calls per process."""
        return self.spec.warm is not None

    def _warm_size(self, call: CliCall) -> int:
        """Idle processes to keep for this call (0: a process of its own, cold): the spec
        must say how one process serves many calls and that this call fits one, and a
        resumed session runs cold, and so does a call with MCP servers of its own (their
        config is the call's: a kept process would serve the next call with them)."""
        warm = self.spec.warm
        if warm is None or call.session_id is not None or not warm.fits(call):
            return 0
        if call.config.mcp_servers:
            return 0
        if call.approvals is not None:  # its approval server lives as long as the call
            return 0
        return pool_size(self.warm)

    async def aclose(self) -> None:
        """Close the idle warm processes this adapter's calls left outside any block (those of
        a `warm_processes` block close with the block)."""
        keys, self._warm_keys = self._warm_keys, set()
        for key in keys:
            await close_shared(key)

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
        """`complete`, also handing every decoded event to *sink* as it arrives; the call's
        `functions` are served for its length (`caller_tools`). The config and deadline are
        the call plan's (`agentport.core.plan_call`): the policy layer's attempt, or, called
        directly, one attempt of its own (`min(attempt_timeout_s, total_timeout_s)`)."""
        plan = plan_call(messages, config, self.default_config, limit="attempt")
        async with caller_tools(self.capability, plan.config) as served:
            return await self._run(messages, served, sink, plan.deadline)

    async def _run(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        sink: Sink | None,
        deadline: Deadline,  # re-prompts share it
    ) -> Result[CompletionResponse, ProviderError]:
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
            error = with_progress(error, events, self.spec.usage_mode)
        if env is not None:
            error = error.replace(usage=self._routed(error.usage, env, events or ()))
        return Failure(as_quota(error).with_backend(self.backend))

    async def _once(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        native_schema: bool,
        sink: Sink | None,
        deadline: Deadline,
    ) -> Result[CompletionResponse, ProviderError]:
        """`_run_once`, with the call's approval server around it when the call sets a hook
        and the catalog says approvals are NATIVE (claude's permission prompt tool)."""
        native = self.capability.support(Param.approvals) is ParamSupport.NATIVE
        if config.on_permission is None or not native or self.spec.asks_in_band:
            return await self._run_once(messages, config, native_schema, sink, deadline)

        async def emit(event: AgentEvent) -> None:
            if sink is not None:
                await sink(event)

        try:
            async with approval_server(self.backend, config, emit, config.cwd) as endpoint:
                return await self._run_once(
                    messages, config, native_schema, sink, deadline, endpoint
                )
        except ProviderError as exc:  # the server could not start (no `mcp` extra)
            return self._fail(exc)

    async def _run_once(
        self,
        messages: Sequence[Message],
        config: CompletionConfig,
        native_schema: bool,
        sink: Sink | None,
        deadline: Deadline,
        approvals: ApprovalEndpoint | None = None,
    ) -> Result[CompletionResponse, ProviderError]:
        """One CLI process: refuse what cannot start, build its invocation, run it through
        the runner, and judge what it printed (`_settle`)."""
        started = time.monotonic()
        exe = self.executable()
        refused = self._refused(config, started, deadline, exe)
        if refused is not None:
            return refused
        assert exe is not None
        # the binary this process first ran, or a typed failure: never a silent switch
        binary = await check_binary(self.backend, exe, self.options.get("on_binary_change", "fail"))
        if isinstance(binary, ProviderError):
            return self._fail(binary)
        grace = self.spec.error_grace_s or DEFAULT_ERROR_GRACE_S
        with ExitStack() as stack:
            run_dir = stack.enter_context(private_tempdir(f"agentport-{self.backend}-"))
            call = self._call(messages, config, native_schema, exe, run_dir, deadline)
            call = replace(call, approvals=approvals)
            warm = self._warm_size(call)
            decode = self.spec.warm.decode if warm and self.spec.warm else None
            turn = CliTurn(self.spec, sink, float(self.options.get("error_grace_s", grace)), decode)
            built = await self._build(call, warm=bool(warm))
            if isinstance(built, Failure):
                return built
            invocation, env = built
            pool: WarmPool[LiveProcess] | None = None
            if warm:
                launch = Launch.of(invocation, env, run_dir, call.cwd, config.cwd)
                key = (*self._options_key(), launch.key())
                self._warm_keys.add(key)
                pool = call_pool(key, warm)
            more = turn.dialogue(invocation, stack)
            with span(f"exec {Path(exe).name}", {"agentport.backend": self.backend}) as current:
                env.update(trace_env())  # the CLI continues this trace (OpenTelemetry)
                request = self._request(invocation, env, call, deadline, more)
                live = None
                if pool is None:
                    outcome = await run_process(request, turn.on_frame)
                else:  # a warm process starts without this call's trace context
                    outcome, live = await run_turn(pool, self.spec, launch, request, turn.on_frame)
                if current is not None:
                    found = {"process.pid": outcome.pid, "process.exit.code": outcome.exit_code}
                    current.set_attributes({k: v for k, v in found.items() if v is not None})
        await turn.emit(*turn.ledger.close())
        result = self._settle(outcome, turn, env, config, native_schema, started)
        # a resume either ran in the session asked for or is session_not_found
        result = honest_resume(
            self.backend,
            config.session_id,
            result,
            self.spec.unknown_session,
            fork=config.fork_session,
        )
        if isinstance(result, Success):
            result = Success(result.unwrap().model_copy(update={"binary": binary}))
        else:
            error = result.failure()
            failed = {**error.details, "binary": binary.model_dump(mode="json")}
            result = Failure(error.replace(details=failed))
        if pool is not None and live is not None:
            await finish(pool, live, isinstance(result, Success))
        return result

    def _options_key(self) -> tuple[str, str]:
        text = json.dumps(self.options, sort_keys=True, default=str)
        return self.backend, hashlib.sha256(text.encode()).hexdigest()

    def _refused(
        self, config: CompletionConfig, started: float, deadline: Deadline, exe: str | None
    ) -> Failure[ProviderError] | None:
        """The failure of a call that cannot start: its deadline is spent, or no CLI."""
        if deadline.reached(started):
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
        deadline: Deadline,
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
            deadline=deadline.end,
            images=tuple(image for m in messages for image in m.images),
        )

    async def _build(
        self, call: CliCall, warm: bool = False
    ) -> tuple[Invocation, dict[str, str]] | Failure[ProviderError]:
        """The spec's invocation and the child's environment (the allow-list, the user's
        `env`, the CLI's own namespace unless `base_url` is set), then the files the argv
        names (`BackendSpec.prepare`). Either may refuse: `unsupported`, `config`, and
        `invalid_request` for a prompt over the CLI's stdin limit."""
        user_env = {str(k): str(v) for k, v in dict(self.options.get("env") or {}).items()}
        try:
            build = self.spec.warm.build if warm and self.spec.warm else self.spec.build
            invocation = build(call)
            over_stdin_limit(self.spec, invocation.stdin)
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
        deadline: Deadline,
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
            total_timeout_s=deadline.remaining(),
            grace_s=float(self.options.get("grace_s", 3.0)),
            linger_s=float(self.options.get("linger_s", 1.0)),
            stdout_to_file=self.spec.stdout_to_file,
            max_line_bytes=int(self.options.get("max_line_bytes", DEFAULT_MAX_LINE_BYTES)),
            max_events=int(self.options.get("max_events", DEFAULT_MAX_EVENTS)),
            on_stderr_line=None if watcher is None else watcher(),
            log_dir=invocation.log_dir,
            deadline=deadline,
        )

    def _settle(
        self,
        outcome: ProcessResult,
        turn: CliTurn,
        env: Mapping[str, str],
        config: CompletionConfig,
        native_schema: bool,
        started: float,
    ) -> Result[CompletionResponse, ProviderError]:
        """The call's result from what the process did: the runner's own failure, the CLI's
        retry notice, or the end-state judgment (`settle`) of the events it printed."""
        events = turn.events
        if outcome.error is not None:
            error = outcome.error.replace(
                exit_code=outcome.exit_code,
                stderr_tail=outcome.stderr_tail[-4000:],
                details={**outcome.error.details, "pid": outcome.pid},
            )
            return self._fail(error, env, events)
        notice = next((e for e in events if e.end.retry_notice), None)
        if notice is not None:  # the CLI began its own retry: agentport owns retries
            stopped = notice_error(notice, outcome.exit_code, outcome.stderr_tail)
            stopped = stopped.replace(details={**stopped.details, "pid": outcome.pid})
            return self._fail(stopped, env, events)
        run = RunOutcome(
            outcome.exit_code, outcome.stderr_tail, events, outcome.noise, outcome.stdin_short()
        )
        shape = partial(self._shape, events, config) if native_schema else None
        end = settle(self.spec, run, turn.watch.pending, shape or (lambda text: text))
        if end.error is not None:
            error = end.error.replace(details={**end.error.details, "pid": outcome.pid})
            return self._fail(error, env, events)
        session = next(
            (e.metadata["session_id"] for e in events if e.metadata.get("session_id")), None
        )
        model = next((e.metadata["model"] for e in events if e.metadata.get("model")), None)
        return Success(
            CompletionResponse(
                content=end.text,
                model=(None if self._model_ignored else config.model) or model,
                usage=self._routed(
                    reported_usage(events, self.spec.usage_mode) or Usage(), env, events
                ),
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

    def _routed(self, usage: Usage, env: Mapping[str, str], events: Sequence[AgentEvent]) -> Usage:
        """*usage* with the route the facts give: what the CLI said (claude's init), else
        whether a provider key was handed to it, among the catalog's routes."""
        said = next(
            (
                BillingRoute(str(e.metadata["billing_route"]))
                for e in events
                if e.metadata.get("billing_route") in BillingRoute.__members__
            ),
            None,
        )
        route = route_for(self.capability.billing, key=key_handed(env), said=said)
        return usage.model_copy(update={"billing_route": route})

    def _shape(self, events: Sequence[AgentEvent], config: CompletionConfig, text: str) -> str:
        """The natively enforced value: the CLI's structured output event when it printed
        one, else the text mapped back from the strict schema subset where the spec says."""
        structured = next(
            (e.end.structured for e in reversed(events) if e.end.structured is not None), None
        )
        if structured is not None:
            return json.dumps(structured, ensure_ascii=False)
        if self.spec.restore_schema and config.output_schema is not None:
            value = extract_json(text)
            if value is not None:
                return json.dumps(restore_strict(value, config.output_schema))
        return text
