"""`BackendSpec`: everything that differs between two agent CLIs, as data and pure functions.

A CLI backend module is one `BackendSpec` named `SPEC`; the factory hands it to the generic
adapter (`agentport.backends.CliAdapter` / `CliRuntime`), which does the rest. Composition, never
inheritance between backends, so each CLI's argv and parsing exist exactly once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core import (
    AgentEvent,
    CompletionConfig,
    ErrorKind,
    EventType,
    ImagePart,
    Message,
    MessageRole,
    OutputSchema,
    ProviderError,
)

if TYPE_CHECKING:
    from ._approval_server import ApprovalEndpoint

__all__ = [
    "BackendSpec",
    "CliCall",
    "Invocation",
    "RunOutcome",
    "UsageMode",
    "WarmTurns",
    "as_dict",
    "as_int",
    "as_status",
    "at_prompt",
    "image_files",
    "json_line",
    "last_text",
    "over_stdin_limit",
    "render_prompt",
    "text_after_last_tool",
]


UsageMode = Literal["per_request", "cumulative"]
"""What one usage report in a CLI's stream counts (`BackendSpec.usage_mode`)."""


@dataclass(frozen=True, slots=True)
class CliCall:
    """One run, as the spec's `build` sees it.

    Attributes:
        executable: resolved path of the CLI.
        prompt: the conversation rendered as one prompt (the system prompt folded in when the
            catalog says system_prompt is TRANSLATED; the schema instruction when TRANSLATED).
        system_prompt: the system prompt when the catalog says NATIVE, else None.
        config: the call's `CompletionConfig`.
        schema: the schema to hand to the CLI (already in its dialect) when output_schema is
            NATIVE, else None.
        options: the `[llm.<backend>]` table.
        run_dir: a private directory for files this run needs (removed afterwards).
        cwd: the working directory the CLI runs in.
        session_id: the session to resume, or None.
        deadline: `time.monotonic()` by which the whole attempt must end (auxiliary commands
            such as codex's catalog probe are bounded by it too); None = no deadline.
        images: the conversation's images, in order, when the catalog says images are
            NATIVE (else removed before the call, after the `on_ignored` warning).
        approvals: the call's approval server (`_approval_server`), when the call sets an
            approval hook and the catalog says approvals are NATIVE, else None.
    """

    executable: str
    prompt: str
    system_prompt: str | None
    config: CompletionConfig
    schema: dict[str, Any] | None
    options: Mapping[str, Any]
    run_dir: Path
    cwd: Path
    session_id: str | None = None
    deadline: float | None = None
    images: tuple[ImagePart, ...] = ()
    approvals: ApprovalEndpoint | None = None


@dataclass(frozen=True, slots=True)
class Invocation:
    """What to spawn: argv, environment additions (applied after the runner's cleaning), the
    bytes for stdin (None = stdin closed), and `passthrough`: the names (or `fnmatch`
    patterns) of parent variables this run needs beyond the allow-list (`child_env`), e.g. the
    CLI's own key variable when no endpoint is configured.

    `replies`: for a CLI that speaks a protocol on stdin (gjc's `--mode rpc`), a per-run
    function from each JSON object the CLI prints to the bytes to write to its stdin next (a
    prompt after the ack of a model switch), or None; with it, stdin stays open after `stdin`
    until the run ends (`ProcessRequest.stdin_more`). A reply may be awaitable (codex's
    approval answers wait on the caller's hook); the CLI's next lines wait for it."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    stdin: bytes | None = None
    passthrough: tuple[str, ...] = ()
    log_dir: Path | None = None  # the CLI's log folder, read for `BackendSpec.retry_notice`
    replies: Callable[[dict[str, Any]], bytes | Awaitable[bytes] | None] | None = None


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What `classify` sees once the process is gone."""

    exit_code: int | None
    stderr_tail: str
    events: Sequence[AgentEvent]
    noise: Sequence[str] = ()
    stdin_short: str | None = None  # `ProcessResult.stdin_short`: the prompt was not all read


def image_files(call: CliCall) -> list[Path]:
    """Write the call's images into `images/` of its private `run_dir` (`image-1.png`, ...),
    for a CLI that takes images as files; their paths, in order."""
    paths: list[Path] = []
    for number, image in enumerate(call.images, 1):
        path = call.run_dir / "images" / f"image-{number}{image.suffix}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(image.data)
        paths.append(path)
    return paths


def at_prompt(call: CliCall) -> tuple[str, list[str]]:
    """The prompt for the Gemini CLI family (gemini, qwen), and the flags it needs.

    Both CLIs read any `@path` in a prompt (even inside a word) and send that workspace
    file's content to the model (measured: gemini 0.61, qwen 0.15 and 0.24). Under a call
    that restricts tools that read is a privilege the call did not grant, and the `@` may
    come from untrusted text (a fetched page, a refined document): every `@` is escaped as
    `\\@`, which both CLIs leave as text. With the CLI's own tool defaults
    (`allowed_tools=None`) the prompt is the caller's, as the CLI would take it.

    Then the call's images: `@path` references to the files `image_files` writes (the CLI
    reads each and sends it as inline data; a blank in the path escaped, since the parser
    ends a path there) and `--include-directories` for their folder."""
    prompt = call.prompt
    if call.config.tools.allowed_tools is not None:
        prompt = _UNESCAPED_AT.sub(r"\\@", prompt)
    if not call.images:
        return prompt, []
    paths = image_files(call)
    refs = " ".join("@" + str(path).replace(" ", "\\ ") for path in paths)
    return prompt + "\n\n" + refs, [f"--include-directories={paths[0].parent}"]


_UNESCAPED_AT = re.compile(r"(?<!\\)@")


def as_dict(value: Any) -> dict[str, Any]:
    """*value* when it is a JSON object, else `{}`: decoders read fields of shapes a CLI
    upgrade may change without crashing."""
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    """*value* as an int (token counts), 0 when missing or not a number."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    return 0


def as_status(value: Any) -> int | None:
    """*value* as an HTTP status (an int that is no bool), else None: the status a CLI
    reported for a failure (`EndSignal.status`)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_line(message: Mapping[str, Any]) -> bytes:
    """*message* as one line of a CLI's JSON-lines stdin (ASCII-escaped JSON, then a newline):
    a warm process's turn or reset, an RPC request."""
    return (json.dumps(message) + "\n").encode("utf-8")


def last_text(events: Sequence[AgentEvent]) -> str:
    """The content of the last text event (codex: the last `agent_message`)."""
    return next((e.content for e in reversed(events) if e.type is EventType.text), "")


def text_after_last_tool(events: Sequence[AgentEvent]) -> str:
    """Text events after the last tool call/result, concatenated (gemini streams deltas)."""
    out: list[str] = []
    for event in events:
        if event.type in (EventType.tool_call, EventType.tool_result):
            out.clear()
        elif event.type is EventType.text:
            out.append(event.content)
    return "".join(out)


@dataclass(frozen=True, slots=True)
class WarmTurns:
    """How one process of a CLI serves call after call, for warm processes (docs/warm.md).

    Attributes:
        build: `CliCall -> Invocation` of the long-lived process: its argv and env (they must
            not depend on the prompt: with the files it writes into `run_dir` they are the
            pool's key) and, as stdin, the call's turn (one input line; stdin then stays open
            for the next, and `replies` may answer what the CLI prints during the turn).
        reset: the input line that starts a fresh conversation on a process that served a
            call (claude: `/clear`; pi: `new_session`), sent before the next call's turn;
            None when every turn opens a conversation of its own (codex: a thread per call).
        reset_end: a stdout JSON object -> True when it ends the reset's output.
        reset_done: a stdout JSON object -> True when it confirms the reset; a reset whose
            output ends without one closes the process.
        hello: bytes written once, as soon as the process started (codex app-server's
            `initialize`); its answers are read with the first turn.
        decode: the turn's lines -> events, when they are not what `BackendSpec.decode` reads
            (codex app-server's JSON-RPC; same conventions).
        fits: whether a call can run warm at all (pi: not with images, which are `@file`
            arguments); the others run cold.
    """

    build: Callable[[CliCall], Invocation]
    reset: bytes | None
    reset_end: Callable[[Any], bool] = lambda obj: True
    reset_done: Callable[[Any], bool] = lambda obj: True
    hello: bytes = b""
    decode: Callable[[Any], AgentEvent | None] | None = None
    fits: Callable[[CliCall], bool] = lambda call: True


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """One agent CLI.

    Attributes:
        name: the catalog name; the catalog entry says which params are NATIVE/TRANSLATED.
        build: `CliCall -> Invocation` (argv, env, stdin).
        decode: a parsed stdout JSON line -> `AgentEvent`, or None to skip it. How the run
            ends goes in the event's typed `end` (`EndSignal`): `terminal` (the run's last
            event: stop reading), `final_text` (the CLI's own final answer), `structured` (a
            natively enforced JSON value), `warning` (a non-fatal note), `finish_reason`
            (`stop` / `length` / `refusal`, only where the CLI says so), `fatal` on an
            `is_error` event (the run ends after `error_grace_s` unless the CLI goes on),
            `status` / `kind` of a failure the CLI reported. The rules these feed:
            `_endstate.py`. `metadata` holds what callers read: `session_id`, `model`, `usage`
            (a `Usage`), and on tool events `tool`, `input`, `id` (pairs a call with its
            result; an unpaired call is closed as abandoned) and the `web` keys.
        final_text: events -> the answer, when no event carries `final_text`.
        classify: the error table: `RunOutcome -> ProviderError | None` (None = success).
        native_schema: the schema in the CLI's dialect (used when output_schema is NATIVE and
            `structured.native_schema_gaps` finds nothing the strict subset cannot express).
        restore_schema: undo `strict_schema` on the answer (`restore_strict`).
        extra_env: environment this CLI always needs headless (auto-updaters off, ...).
        stdout_to_file: the CLI loses the end of large outputs on a pipe; the runner gives it
            a file to follow instead (`ProcessRequest.stdout_to_file`).
        retry_notice: makes, for each run, a watcher of its stderr lines (a line -> the
            failure it announces, or None), for a CLI that says on stderr that it is about to
            retry ("Attempt 1 failed with status 500. Retrying...", or a second request line
            with no new step between): the run ends there with that failure, since agentport
            owns retries. One watcher per run, so it may keep state across lines. A
            decoder marks a retry notice on stdout with `EndSignal(retry_notice=True)` (plus
            `terminal`; `status` and `retry_after` when known: `notice_event`) instead.
        prepare: an async step after `build` and before the spawn, given the call, the
            invocation and the child's environment: it may write files into `run_dir` that
            the argv names (codex: its rewritten model catalog) or raise `ProviderError`
            (e.g. `unsupported` to fail closed). None = nothing to prepare.
        terminal_event: the event a complete run of this CLI always ends with (codex
            `turn.completed`, claude `result`, ...), which its decoder marks `terminal`; a run
            whose answer came without it is never a clean success (`_endstate.settle` adds
            `MISSING_TERMINAL`). None: the CLI has no such event (plain text, one final print).
        warm: how one process serves many calls (`WarmTurns`), or None: one process per call.
        error_grace_s: how long this CLI may stay silent after a fatal error line before the
            run ends (the `error_grace_s` option overrides it); None: 5 s
            (`_endstate.DEFAULT_ERROR_GRACE_S`).
        usage_mode: what a usage report of this CLI's stream counts: `"cumulative"` (the
            run's total so far: the last report is the run's) or `"per_request"` (one model
            request's: the run spent their sum). Decided from the CLI's recorded stream of a
            run with a tool step (two requests); `_endstate.reported_usage` applies it.
        stdin_limit_bytes: the most bytes of stdin this CLI reads before it cuts the prompt
            and answers the rest (gemini-cli and qwen-code: 8 MiB, then "Warning: stdin input
            truncated"); a longer prompt is refused before the spawn (`over_stdin_limit`).
            None: no known limit (a cut the runner sees still fails the run).
        unknown_session: what the CLI prints (stderr or its error event) when asked to
            resume a session it does not have; such a failure becomes `session_not_found`
            (`_resume.honest_resume`). None: only the generic wordings are recognised.
        asks_in_band: approvals are asked in the CLI's own protocol on stdin (codex's
            app-server: `Invocation.replies` answers them), not through agentport's
            approval MCP server (claude's permission prompt tool).
    """

    name: str
    build: Callable[[CliCall], Invocation]
    decode: Callable[[Any], AgentEvent | None]
    classify: Callable[[RunOutcome], ProviderError | None]
    final_text: Callable[[Sequence[AgentEvent]], str] = last_text
    native_schema: Callable[[OutputSchema], dict[str, Any]] | None = None
    restore_schema: bool = False
    extra_env: Mapping[str, str] = field(default_factory=dict)
    stdout_to_file: bool = False
    retry_notice: Callable[[], Callable[[str], ProviderError | None]] | None = None
    prepare: Callable[[CliCall, Invocation, Mapping[str, str]], Awaitable[None]] | None = None
    terminal_event: str | None = None
    warm: WarmTurns | None = None
    error_grace_s: float | None = None
    stdin_limit_bytes: int | None = None
    usage_mode: UsageMode = "cumulative"
    unknown_session: re.Pattern[str] | None = None
    asks_in_band: bool = False


def over_stdin_limit(spec: BackendSpec, stdin: bytes | None) -> None:
    """Raise `invalid_request` when *stdin* is longer than *spec*'s `stdin_limit_bytes`: the
    CLI would read a prefix and answer it as if it were the whole prompt."""
    limit = spec.stdin_limit_bytes
    if limit is not None and stdin is not None and len(stdin) > limit:
        raise ProviderError(
            ErrorKind.invalid_request,
            f"the prompt is {len(stdin)} bytes; {spec.name} reads at most {limit} bytes of "
            "stdin and would answer the cut prompt",
            retryable=False, request_sent=False,
        )  # fmt: skip


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
