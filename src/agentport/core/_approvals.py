"""Typed approvals: what an agent asks before it runs a tool (`PermissionRequest`), what the
caller answers (`Allow` or `Deny`), and how an answer becomes the option a protocol offers
(`choose_option`). Pure values and a pure rule; the backends ask the caller's hook
(`CompletionConfig.on_permission`) through `agentport.backends._approvals.decide`.

```python
from agentport.core import Allow, CompletionConfig, Deny, PermissionKind, PermissionRequest

def approve(request: PermissionRequest) -> Allow | Deny:
    if request.kind is PermissionKind.execute:
        return Deny("no commands in this run")
    return Allow()

config = CompletionConfig(tools=ToolPolicy.cli_defaults(), on_permission=approve)
```

The hook only narrows: a tool the call's `ToolPolicy` does not allow is denied before the
hook is asked. Source of the option kinds: the Agent Client Protocol's
`session/request_permission` (agentclientprotocol.com, `PermissionOptionKind`).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._redact import redact

__all__ = [
    "Allow",
    "Deny",
    "OptionKind",
    "PermissionDecision",
    "PermissionHook",
    "PermissionKind",
    "PermissionOption",
    "PermissionRequest",
    "choose_option",
    "input_summary",
    "permission_kind",
]

#: Longest `input_summary`, in characters (a tool's input may be a whole file's content).
SUMMARY_CHARS = 500


class PermissionKind(enum.StrEnum):
    """What the tool does: `read` (read, search, think), `edit` (edit, delete, move, write),
    `execute` (a command), `fetch` (the network), `other`."""

    read = "read"
    edit = "edit"
    execute = "execute"
    fetch = "fetch"
    other = "other"


class OptionKind(enum.StrEnum):
    """The kind of one answer a protocol offers (ACP `PermissionOptionKind`)."""

    allow_once = "allow_once"
    allow_always = "allow_always"
    reject_once = "reject_once"
    reject_always = "reject_always"


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One answer the agent offers: its id (sent back), its kind (None: a kind agentport
    does not know, never chosen) and its label."""

    option_id: str
    kind: OptionKind | None
    name: str = ""


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One tool call an agent asks permission for.

    Attributes:
        backend: the backend's canonical name (`acp`, `claude`, ...).
        tool: the tool's name or title as the agent gives it (`run_shell_command`, `Bash`).
        kind: what the tool does (`PermissionKind`).
        input_summary: the tool's input as compact JSON, at most `SUMMARY_CHARS` characters,
            redacted (no key or token of this process's environment).
        options: the answers the protocol offers (ACP); empty where the protocol has none.
        call_id: the agent's id of the tool call, when it gives one.
    """

    backend: str
    tool: str
    kind: PermissionKind
    input_summary: str = ""
    options: tuple[PermissionOption, ...] = ()
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Allow:
    """Run the tool."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the tool; *reason* is shown to the agent where the protocol carries one,
    and is in the `permission_denied` event."""

    reason: str = field(default="denied by the caller")


PermissionDecision = Allow | Deny
#: The caller's hook: sync or async, `(PermissionRequest) -> Allow | Deny`.
PermissionHook = Callable[[PermissionRequest], PermissionDecision | Awaitable[PermissionDecision]]

_KINDS: Mapping[str, PermissionKind] = {
    "read": PermissionKind.read, "search": PermissionKind.read, "think": PermissionKind.read,
    "edit": PermissionKind.edit, "delete": PermissionKind.edit, "move": PermissionKind.edit,
    "write": PermissionKind.edit, "execute": PermissionKind.execute,
    "fetch": PermissionKind.fetch,
}  # fmt: skip


def permission_kind(word: str | None) -> PermissionKind:
    """An ACP `ToolKind` (read, edit, delete, move, search, execute, think, fetch, other) as
    a `PermissionKind`; anything else is `other`."""
    return _KINDS.get(str(word or "").lower(), PermissionKind.other)


def input_summary(value: Any) -> str:
    """*value* as compact JSON (text as is), cut at `SUMMARY_CHARS`, redacted."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    return redact(text)


def choose_option(
    options: Sequence[PermissionOption], decision: PermissionDecision
) -> PermissionOption | None:
    """The option that carries *decision*, chosen by kind and never by position: `Allow` ->
    `allow_once`, else `allow_always`; `Deny` -> `reject_once`, else `reject_always`. None
    when no option has a matching kind: the caller then answers the way the protocol
    refuses (ACP: the `cancelled` outcome), never with an option of the other kind."""
    wanted = (
        (OptionKind.allow_once, OptionKind.allow_always)
        if isinstance(decision, Allow)
        else (OptionKind.reject_once, OptionKind.reject_always)
    )
    for kind in wanted:
        for option in options:
            if option.kind is kind:
                return option
    return None
