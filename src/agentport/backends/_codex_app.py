"""codex's app-server (`codex app-server`: JSON-RPC 2.0 over stdio, without the `jsonrpc`
field) for one call, apart from the flags (`codex.settings`): the call's opening, the
per-call dialogue (`AppTurn`: the turn, the approvals it asks, steering and interrupting it)
and each message in the shape of a `codex exec --json` line (`exec_line`).

Protocol facts (codex-cli 0.171.0, `codex app-server generate-json-schema`, the v2 schema):
- `thread/start` {cwd}, `thread/resume` {threadId, cwd}, `thread/fork` {threadId, cwd}
  answer `{thread: {id}}`; `turn/start` {threadId, input} answers `{turn: {id}}` and
  `turn/started` / `turn/completed` {turn: {id, status}} frame the turn (status
  `completed | interrupted | failed`).
- `turn/steer` {threadId, expectedTurnId, input} adds user input to the running turn (an
  error when that turn is no longer the active one); `turn/interrupt` {threadId, turnId}
  ends it with status `interrupted`.
- With an `approval_policy` that asks, codex sends the requests
  `item/commandExecution/requestApproval` {threadId, turnId, itemId, command?, cwd?, reason?}
  and `item/fileChange/requestApproval` {threadId, turnId, itemId, reason?, grantRoot?},
  answered `{decision: "accept" | "decline" | ...}` ("decline": the agent goes on with the
  turn, the item completes with status `declined`).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable
from typing import Any

from ..core import (
    AgentEvent,
    Allow,
    Deny,
    EndSignal,
    EventType,
    PermissionKind,
    PermissionRequest,
    Sandbox,
    Usage,
    input_summary,
)
from ._approvals import decide, denied_event
from ._spec import CliCall, as_dict, as_int, image_files, json_line
from ._turn_control import CURRENT_TURN

__all__ = ["APPROVAL_POLICY", "HELLO", "AppTurn", "exec_line", "opening"]

THREAD, TURN = "agentport-thread", "agentport-turn"
_STEER, _INTERRUPT = "agentport-steer-", "agentport-interrupt"
#: The policy a call with an approval hook runs under (0.171.0 refuses "untrusted"): codex
#: asks before a command or a patch would leave its sandbox (the model asks for escalated
#: permissions); what runs inside the sandbox runs without asking.
APPROVAL_POLICY = "on-request"
#: Where `AppTurn` leaves the `permission_denied` event of a declined request, on the
#: request's own message, for `exec_line` (the adapter decodes the message after the reply).
_DENIED = "agentport.denied"
_ASKS = {
    "item/commandExecution/requestApproval": ("command_execution", PermissionKind.execute),
    "item/fileChange/requestApproval": ("file_change", PermissionKind.edit),
}
_ITEMS = {
    "agentMessage": "agent_message",
    "reasoning": "reasoning",
    "commandExecution": "command_execution",
    "mcpToolCall": "mcp_tool_call",
    "fileChange": "file_change",
    "webSearch": "web_search",
}
_ACTIONS = {"openPage": "open_page", "findInPage": "find_in_page"}

HELLO = json_line(
    {"id": "agentport-init", "method": "initialize",
     "params": {"clientInfo": {"name": "agentport", "version": "1"}}}
) + json_line({"method": "initialized"})  # fmt: skip


def opening(call: CliCall) -> bytes:
    """The call's thread: `thread/start` in the call's cwd; with a session id
    `thread/resume` of it, or `thread/fork` when the config forks it."""
    params: dict[str, Any] = {"cwd": str(call.cwd)}
    method = "thread/start"
    if call.session_id:
        method = "thread/fork" if call.config.fork_session else "thread/resume"
        params["threadId"] = call.session_id
    return json_line({"id": THREAD, "method": method, "params": params})


class AppTurn:
    """The dialogue of one call on an app-server: the answer to the thread is `turn/start`
    (the prompt as text input, images as `localImage`, the schema as `outputSchema`); an
    approval request is decided by the caller's hook (`_approvals.decide`: the policy first,
    the deadline) when the call sets one; any other request of codex's is answered with an
    error, never left waiting. Inside a runtime it offers the runtime native steering and
    interrupting of the running turn (`TurnControl`)."""

    def __init__(self, call: CliCall) -> None:
        self._call = call
        inputs: list[dict[str, Any]] = [{"type": "text", "text": call.prompt}]
        inputs += [{"type": "localImage", "path": str(path)} for path in image_files(call)]
        self._params: dict[str, Any] = {"input": inputs}
        if call.schema is not None:
            self._params["outputSchema"] = call.schema
        self._thread: str | None = None
        self._turn: str | None = None
        self._items: dict[str, dict[str, Any]] = {}
        self._steers: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._control = CURRENT_TURN.get()
        if self._control is not None:
            self._control.steer = self.steer
            self._control.interrupt = self.interrupt

    def replies(self, obj: dict[str, Any]) -> bytes | Awaitable[bytes] | None:
        """What stdin says next after *obj* (None: nothing)."""
        method, params = obj.get("method"), as_dict(obj.get("params"))
        if method is not None and "id" in obj:  # a request of codex's
            if method in _ASKS and self._call.config.on_permission is not None:
                return self._answer(obj)
            return json_line({"id": obj["id"], "error": {"code": -32601, "message": "not served"}})
        result = as_dict(obj.get("result"))
        thread = as_dict(result.get("thread")).get("id")
        if obj.get("id") == THREAD and thread:
            self._thread = str(thread)
            turn = {"threadId": self._thread, **self._params}
            return json_line({"id": TURN, "method": "turn/start", "params": turn})
        if obj.get("id") == TURN or method == "turn/started":
            self._turn = as_dict(result.get("turn") or params.get("turn")).get("id") or self._turn
        elif method == "turn/completed":
            self._turn = None
        elif method == "item/started":
            item = as_dict(params.get("item"))
            self._items[str(item.get("id"))] = item
        elif str(obj.get("id", "")).startswith(_STEER) and "error" in obj:
            text = self._steers.pop(str(obj["id"]), None)
            if text is not None and self._control is not None:
                self._control.refused.append(text)
        return None

    def steer(self, text: str) -> bytes | None:
        """`turn/steer` with *text* on the running turn, or None before codex named it or
        after it ended."""
        if self._thread is None or self._turn is None:
            return None
        rid = f"{_STEER}{next(self._ids)}"
        self._steers[rid] = text
        params = {
            "threadId": self._thread, "expectedTurnId": self._turn,
            "input": [{"type": "text", "text": text}],
        }  # fmt: skip
        return json_line({"id": rid, "method": "turn/steer", "params": params})

    def interrupt(self) -> bytes | None:
        """`turn/interrupt` of the running turn, or None when none runs."""
        if self._thread is None or self._turn is None:
            return None
        params = {"threadId": self._thread, "turnId": self._turn}
        return json_line({"id": _INTERRUPT, "method": "turn/interrupt", "params": params})

    async def _answer(self, obj: dict[str, Any]) -> bytes:
        tool, kind = _ASKS[str(obj["method"])]
        params = as_dict(obj.get("params"))
        item_id = str(params.get("itemId") or "")
        shown: dict[str, Any] = {
            k: params[k] for k in ("command", "cwd", "reason") if params.get(k)
        }
        if kind is PermissionKind.edit:  # the changes came with the item's start
            changes = self._items.get(item_id, {}).get("changes") or ()
            shown["files"] = [as_dict(c).get("path") for c in changes]
            if params.get("grantRoot"):
                shown["grantRoot"] = params["grantRoot"]
        request = PermissionRequest(
            backend="codex", tool=tool, kind=kind, input_summary=input_summary(shown),
            call_id=item_id or None,
        )  # fmt: skip
        config = self._call.config
        # under `on-request` codex asks only for what would leave its sandbox (a command the
        # model runs with escalated permissions, a patch outside the writable roots): that
        # is the caller's to allow only when the call's policy names no sandbox (the CLI's
        # defaults: the hook is its user) or the full one; a named sandbox holds
        allows = config.tools.sandbox in (None, Sandbox.full)
        decision = await decide(request, config, policy_allows=allows)
        if isinstance(decision, Deny):
            obj[_DENIED] = denied_event(request, decision.reason)
        answer = "accept" if isinstance(decision, Allow) else "decline"
        return json_line({"id": obj["id"], "result": {"decision": answer}})


def _item(item: dict[str, Any]) -> dict[str, Any] | None:
    """An app-server thread item in the shape of `codex exec --json`'s items."""
    kind = _ITEMS.get(str(item.get("type")))
    if kind is None:
        return None
    action = as_dict(item.get("action"))
    if action:
        action = {**action, "type": _ACTIONS.get(str(action.get("type")), action.get("type"))}
    text = item.get("text")
    if kind == "reasoning":
        text = "\n".join(str(t) for t in (item.get("summary") or item.get("content") or ()))
    return {
        "type": kind, "id": item.get("id"), "status": item.get("status"), "text": text,
        "command": item.get("command"), "tool": item.get("tool"),
        "aggregated_output": item.get("aggregatedOutput"), "exit_code": item.get("exitCode"),
        "query": item.get("query"), "action": action,
    }  # fmt: skip


def _warning(obj: dict[str, Any], message: str) -> AgentEvent:
    return AgentEvent(
        type=EventType.error, content=message, raw=obj, end=EndSignal(warning=message)
    )


def exec_line(obj: dict[str, Any]) -> dict[str, Any] | AgentEvent | None:
    """One app-server message as the `codex exec --json` line it stands for, or the event
    that has no such line, or None. `thread/started` names the session; `turn/completed`
    with status `completed` is the terminal event, any other status `turn.failed`; usage in
    `thread/tokenUsage/updated` (`total`: the thread's, so the call's; `last` is only the
    last model request's); a retried error (`willRetry`), a refused steer or interrupt (the
    turn had just ended) are warnings; a declined approval is its `permission_denied`
    event; an error answer to another of the call's requests ends the run."""
    method = obj.get("method")
    params = as_dict(obj.get("params"))
    denied = obj.get(_DENIED)
    if isinstance(denied, AgentEvent):
        return denied
    if method is None:
        rid, error = str(obj.get("id", "")), obj.get("error")
        if error is None:
            return None
        message = str(as_dict(error).get("message") or error)
        if rid.startswith(_STEER) or rid == _INTERRUPT:
            return _warning(obj, f"codex refused {rid.removeprefix('agentport-')}: {message}")
        return {"type": "turn.failed", "error": {"message": message}}
    if method == "thread/started":
        return {"type": "thread.started", "thread_id": as_dict(params.get("thread")).get("id")}
    if method == "thread/tokenUsage/updated":
        counts = as_dict(params.get("tokenUsage"))
        total = as_dict(counts.get("total") or counts.get("last"))
        usage = Usage(
            input_tokens=as_int(total.get("inputTokens")),
            output_tokens=as_int(total.get("outputTokens")),
            cached_tokens=as_int(total.get("cachedInputTokens")),
        )
        return AgentEvent(type=EventType.usage, raw=obj, metadata={"usage": usage})
    if method == "turn/completed":
        turn = as_dict(params.get("turn"))
        status = turn.get("status")
        if status == "completed":
            end = EndSignal(terminal=True, finish_reason="stop")
            return AgentEvent(type=EventType.usage, raw=obj, end=end)
        message = as_dict(turn.get("error")).get("message") or f"turn {status}"
        return {"type": "turn.failed", "error": {"message": message}}
    if method == "error":
        message = str(as_dict(params.get("error")).get("message", ""))
        if params.get("willRetry"):
            return _warning(obj, message)
        return {"type": "error", "message": message}
    if method in ("item/started", "item/completed"):
        item = _item(as_dict(params.get("item")))
        if item is not None:
            return {"type": method.replace("/", "."), "item": item}
    return None
