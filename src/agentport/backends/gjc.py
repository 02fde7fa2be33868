"""gajae-code (`gjc --mode rpc`), as one `BackendSpec`.

Not run here: gajae-code is on neither npm nor PyPI, so `verified_against = None`. Built from
the protocol ouroboros 0.59.9 drives (reference/ouroboros.md §4.12, its `GjcRuntime` and
`providers/gjc_rpc_protocol.py`), and its shared part checked against a real binary of the
same protocol: pi-coding-agent 0.73.1's `--mode rpc` (the commands `prompt` / `set_model`,
their `response` acks and the agent events are pi's; tests/test_gjc_contract.py drives real pi
through this spec).

Facts used: `gjc --mode rpc --no-session` reads one JSON command a line on stdin and prints
one JSON object a line: `{"type":"ready"}` once it listens; `{"id","type":"response",
"command","success","error"?}` acknowledging each command; the agent events `agent_start`,
`turn_start`, `message_start` / `message_update` / `message_end`, `tool_execution_*`,
`turn_end`, `agent_end` (pi's shapes: `_pi_events`), possibly wrapped in protocol-v2
envelopes `{"type":"event","protocol_version":2,"seq","frame_id","payload":{"event_type",
"event"}}`. Frames that ask the host for something (`workflow_gate`,
`extension_ui_request`, `host_tool_call`, `host_tool_cancel`, `host_uri_request`,
`host_uri_cancel`) would wait for an answer agentport does not give headless: they end the
run as `unsupported`. Measured on pi's rpc mode: commands are handled concurrently (a `prompt`
sent right behind a `set_model` is acked before the switch is), so the prompt is sent only
after the switch's ack, as ouroboros does; and the CLI exits at stdin's EOF, dropping a turn
in progress, so stdin stays open until `agent_end` (`Invocation.replies`). gjc removed its
`--mode rpc` once and brought it back (Q00/ouroboros#2301): a build without it fails with its
own usage error (`process_failed`).

Tools: the rpc mode has no tool or sandbox setting that ouroboros passes or documents, so only
the CLI's own tool set is accepted (`ToolPolicy.cli_defaults()` or full); every other policy,
the default no-tools one included, is refused (`unsupported`) before the CLI starts.

Options (`[llm.gjc]`): `provider` (the provider of a bare `model`; else `model` is
`provider/model`), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`max_line_bytes`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..core import AgentEvent, ErrorKind, EventType, ProviderError, Sandbox, ToolPolicy
from . import _pi_events
from ._policy import refuse
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome, as_dict

__all__ = ["SPEC", "build", "classify", "decode", "tool_flags", "unwrap"]

_HOST_FRAMES = frozenset(
    {
        "workflow_gate",
        "extension_ui_request",
        "host_tool_call",
        "host_tool_cancel",
        "host_uri_request",
        "host_uri_cancel",
    }
)
_MODEL_ID = "agentport-model"
_PROMPT_ID = "agentport-prompt"


def tool_flags(tools: ToolPolicy) -> list[str]:
    """gjc's rpc mode takes no tool or sandbox setting: only the CLI's own tool set holds.
    Raises `ProviderError(unsupported)` for any other policy (the default no-tools one
    included)."""
    if tools.allowed_tools is None and tools.sandbox in (None, Sandbox.full):
        return []
    raise refuse(
        "gjc",
        tools,
        "gjc --mode rpc has no tool or sandbox setting; only ToolPolicy.cli_defaults() (its "
        "own tools) can be honoured",
    )


def _model(call: CliCall) -> tuple[str, str] | None:
    model = call.config.model
    if not model:
        return None
    provider = call.options.get("provider")
    if provider:
        return str(provider), model
    if "/" in model:
        head, tail = model.split("/", 1)
        return head, tail
    raise ProviderError(
        ErrorKind.config,
        f"gjc switches models by provider and id: give model as 'provider/{model}' or set "
        "[llm.gjc] provider",
        retryable=False,
    )


def _line(command: dict[str, Any]) -> bytes:
    return (json.dumps(command, ensure_ascii=False) + "\n").encode("utf-8")


def build(call: CliCall) -> Invocation:
    """argv: `gjc --mode rpc --no-session [extra_args]`; stdin: a `set_model` command when a
    model is asked for (the `prompt` command follows its ack), else the `prompt` at once."""
    tool_flags(call.config.tools)
    argv = [call.executable, "--mode", "rpc", "--no-session"]
    argv += [str(a) for a in call.options.get("extra_args", ())]
    prompt = _line({"id": _PROMPT_ID, "type": "prompt", "message": call.prompt})
    model = _model(call)
    if model is None:
        return Invocation(tuple(argv), {}, prompt, replies=_after(None, prompt))
    provider, model_id = model
    switch = _line(
        {"id": _MODEL_ID, "type": "set_model", "provider": provider, "modelId": model_id}
    )
    keys = _pi_events.provider_keys(provider)
    return Invocation(tuple(argv), {}, switch, keys, replies=_after(_MODEL_ID, prompt))


def _after(ack: str | None, prompt: bytes) -> Callable[[dict[str, Any]], bytes | None]:
    """The run's stdin dialogue: the prompt once the model switch *ack* succeeded (sent at
    once when None); nothing more after that (stdin stays open until the run ends)."""
    sent = ack is None

    def reply(obj: dict[str, Any]) -> bytes | None:
        nonlocal sent
        frame = unwrap(obj)
        if sent or frame.get("type") != "response" or frame.get("id") != ack:
            return None
        sent = True
        return prompt if frame.get("success") else None

    return reply


def unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """A protocol-v2 envelope's event (its `event_type` as `type`), else *obj* itself."""
    if obj.get("type") != "event":
        return obj
    payload = as_dict(obj.get("payload"))
    inner = as_dict(payload.get("event"))
    return inner if "type" in inner else {**inner, "type": payload.get("event_type")}


# an error no later frame can recover from: the run ends on it without `error_grace_s`
_FINAL = {"fatal": True, "terminal": True}


def decode(obj: Any) -> AgentEvent | None:
    """One frame -> an event: a failed command ack or a host request is a fatal error that
    ends the run at once (`terminal`: nothing can follow it; a refused `set_model` means the
    prompt is never sent, and agentport never answers a host request); the agent events
    decode as pi's (`_pi_events.decode`: text deltas, tool calls and results, the
    assistant's `message_end` with usage and answer, a clean `agent_end` terminal)."""
    frame = unwrap(obj)
    kind = frame.get("type")
    if kind == "response":
        if frame.get("success") is not False:
            return None
        text = f"gjc refused {frame.get('command')}: {frame.get('error') or 'no reason given'}"
        return AgentEvent(
            type=EventType.error, content=text, raw=obj, is_error=True, metadata=dict(_FINAL)
        )
    if kind in _HOST_FRAMES:
        error = ProviderError(
            ErrorKind.unsupported,
            f"gjc asked the host for {kind}, which agentport does not answer headless",
            retryable=False,
        )
        meta = {**_FINAL, "error": error}
        return AgentEvent(
            type=EventType.error, content=error.message, raw=obj, is_error=True, metadata=meta
        )
    return _pi_events.decode(frame)


def classify(outcome: RunOutcome) -> ProviderError | None:
    """A host request -> `unsupported`; otherwise pi's table (`_pi_events.classify`): the last error
    (a failed ack, `stopReason: "error"`, a failed auto-retry) by its leading HTTP status or
    its wording, a non-zero exit by stderr's last line."""
    for event in reversed(outcome.events):
        error = event.metadata.get("error")
        if isinstance(error, ProviderError):
            error.exit_code = outcome.exit_code
            error.stderr_tail = outcome.stderr_tail[-4000:]
            return error
    return _pi_events.classify(outcome)


SPEC = BackendSpec(
    name="gjc",
    # pi's events: each assistant `message_end` is one model request's usage
    usage_mode="per_request",
    terminal_event="agent_end",
    build=build,
    decode=decode,
    classify=classify,
    final_text=_pi_events.final_text,
)
