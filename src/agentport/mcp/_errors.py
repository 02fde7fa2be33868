"""Tool errors and path roots for the MCP server.

Every failure a tool reports is one line `<ErrorKind>: <message>` (agentport's `ErrorKind`
values, docs/errors.md), delivered as an MCP tool error (`isError: true`), never a traceback.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from ..core import ErrorKind, ProviderError, printable, redact
from ..transport import PathRefused
from ..transport import Roots as Beneath

__all__ = [
    "Progress",
    "Roots",
    "ToolFailure",
    "describe",
    "error_line",
    "guarded",
    "one_line",
    "tool_hints",
]

_log = logging.getLogger("agentport.mcp")


def _printable_record(record: logging.LogRecord) -> bool:
    """A log record's message and traceback terminal-safe and redacted: an unexpected
    error's text can be a server's or a file's."""
    record.msg, record.args = redact(printable(record.getMessage())), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(printable(record.exc_text))
    return True


_log.addFilter(_printable_record)
P = ParamSpec("P")
T = TypeVar("T")


def one_line(text: str, limit: int = 400) -> str:
    """*text* on one line (newlines folded, pydantic's help links dropped), terminal-safe
    (`core.printable`: a client may show it in a terminal), redacted, capped."""
    parts = [
        p.strip()
        for p in text.splitlines()
        if p.strip() and not p.strip().startswith("For further information")
    ]
    flat = redact(printable("; ".join(parts), newlines=False))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ToolFailure(Exception):
    """An expected tool failure: `kind` is an `ErrorKind`, `message` one line."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(f"{kind.value}: {one_line(message)}")
        self.kind = kind


def error_line(exc: ProviderError) -> str:
    """`<kind>: <backend>: <message> (<details>)` with the kind once: `str(exc)` reads
    `claude: not_installed: ...`, which a plain kind prefix turned into `not_installed:
    claude: not_installed: ...`."""
    text = one_line(str(exc))
    kind = exc.kind.value
    if exc.backend and text.startswith(f"{exc.backend}: {kind}: "):
        return f"{kind}: {exc.backend}: {text[len(exc.backend) + len(kind) + 4 :]}"
    return text if text.startswith(f"{kind}: ") else f"{kind}: {text}"


class Progress:
    """MCP progress for one request, as the spec requires it: the value strictly increases
    (a repeat is not sent), and a total is sent only when it is the real count (MCP's
    `total` is optional). A research job's count of calls is an upper bound while it runs
    (the plan's maximum, then fewer as claims are set aside), so running notifications
    carry no total and `finish(count)` sends `count/count` once the count is known."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.last = 0.0

    async def report(self, value: float, message: str, total: float | None = None) -> None:
        if value <= self.last:
            return
        self.last = value
        await self.ctx.report_progress(value, total, message)

    async def finish(self, count: float, message: str) -> None:
        """The last notification, `count` of `count`, when it is news (a value already sent
        cannot be sent again)."""
        await self.report(count, message, total=count)


def tool_hints(
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
) -> ToolAnnotations:
    """MCP tool annotations, every hint set explicitly (a client reading an absent hint
    assumes the worst: destructive, open-world): clients tell `apply` from `backends`."""
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


def describe(fn: Callable[..., Any]) -> str:
    """*fn*'s docstring as a tool description: dedented (no source indentation for the
    model to read), paragraphs kept."""
    return inspect.cleandoc(fn.__doc__ or "")


def guarded(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Wrap a tool: every exception becomes a one-line `ToolError` `<kind>: <message>`
    (cancellation passes through; unexpected errors are logged with their traceback on the
    server's stderr and reported as `server_error`)."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
        except ProviderError as exc:
            raise ToolError(error_line(exc)) from None
        except ToolError:
            raise
        except Exception as exc:
            from ..workflows.deeprefine import InputError

            if isinstance(exc, InputError | OSError):
                raise ToolError(f"invalid_request: {one_line(str(exc))}") from None
            _log.exception("agentport mcp: tool %s crashed", getattr(fn, "__name__", "?"))
            message = one_line(f"{type(exc).__name__}: {exc}")
            raise ToolError(f"server_error: internal error ({message})") from None

    return wrapper


class Roots:
    """The folders the server may read and write (given with `--root`, resolved at start).

    `check(path, what)` returns the path when it lies inside a root and raises
    `ToolFailure(invalid_request)` with one line otherwise. The decision is the path
    authority's (`transport._beneath`): a relative path is taken from the first root, `~` is
    expanded, and the normalised result must lie under a root and be walked there without
    passing a symbolic link (a link is refused, never followed, even one that stays inside).
    """

    def __init__(self, roots: Sequence[str | Path]) -> None:
        self.paths: tuple[Path, ...] = tuple(Path(r).expanduser().resolve() for r in roots)
        self._authority = Beneath(self.paths)

    def check(self, path: str, what: str) -> Path:
        if not path or not path.strip():
            raise ToolFailure(ErrorKind.invalid_request, f"{what}: the path is empty")
        if "\x00" in path:  # no file system takes it
            raise ToolFailure(ErrorKind.invalid_request, f"{what}: the path contains a NUL byte")
        if not self.paths:
            raise ToolFailure(
                ErrorKind.invalid_request,
                f"{what}: {path}: no roots: start the server with --root DIR to allow paths",
            )
        # only the server's own `~` is expanded: `~user` stays a literal name
        raw = Path.home() / path[2:] if path == "~" or path.startswith("~/") else Path(path)
        if not raw.is_absolute():
            raw = self.paths[0] / raw  # relative paths are relative to the first root
        try:
            return self._authority.locate(os.path.normpath(raw), what).check()
        except PathRefused as exc:
            raise ToolFailure(ErrorKind.invalid_request, f"{what}: {exc}") from None

    def describe(self) -> list[str]:
        return [str(r) for r in self.paths]


def flatten_sdk_error(text: str) -> str:
    """An SDK-made tool error (unknown tool, arguments that fail the schema) as one line
    `invalid_request: ...`; our own `<kind>: ...` lines keep their kind."""
    prefix = "Error executing tool "
    body = text
    if body.startswith(prefix) and ": " in body[len(prefix) :]:
        body = body[len(prefix) :]
        name, _, rest = body.partition(": ")
        if rest.split(":", 1)[0] in {k.value for k in ErrorKind}:
            return one_line(rest)
        return one_line(f"invalid_request: {name}: {rest}")
    if body.split(":", 1)[0] in {k.value for k in ErrorKind}:
        return one_line(body)
    return one_line(f"invalid_request: {body}")
