"""pi coding agent (`pi -p --mode json`; warm: `pi --mode rpc`), as one `BackendSpec`.

Measured on pi-coding-agent 0.73.1: the prompt comes on stdin; custom
endpoints are providers in `models.json` of the agent folder (`PI_CODING_AGENT_DIR`, default
`~/.pi/agent`) with `api` = `openai-completions` | `openai-responses` | `anthropic-messages` |
`google-generative-ai`; the JSONL stream has `session`, `agent_*`, `turn_*`, `message_*`
(each `message_update` repeats the whole partial message), `tool_execution_*` and
`auto_retry_*`, and no final result line. Surprise: in `--mode json` pi **exits 0 on API
errors**; the failure is only the assistant message's `stopReason: "error"` + `errorMessage`
(`"500 …"`, `"401 …"`, `"Connection error."`, `"terminated"`), followed by `auto_retry_*`
events (401 is not retried). Retries are `retry.maxRetries` (agent level) and
`retry.provider.maxRetries` (SDK) in the agent folder's `settings.json`.

With `base_url`, agentport runs pi with a private agent folder (in the run directory) holding
a `models.json` provider `agentport` and a `settings.json` with short retries; without it,
your own agent folder and providers are used.

Options (`[llm.pi]`): `base_url`, `api_key`, `api` (default `openai-completions`),
`provider` (provider id; required without `base_url` unless `model` is `provider/model`),
`max_retries` (agent-level retries, default 0), `provider_max_retries` (SDK retries, default
0), `context_window` (default 128000), `max_output_tokens` (the model's `maxTokens`, default
8192), `system_prompt_mode` (`append` (default) or
`replace`), `extra_args`, plus the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ._node import blocking_stdio_env
from ._pi_events import classify, decode, final_text, provider_keys
from ._policy import endpoint_passthrough
from ._spec import BackendSpec, CliCall, Invocation, WarmTurns, image_files, json_line
from ._turn_control import CURRENT_TURN, TurnControl

__all__ = ["SPEC", "build", "classify", "decode", "final_text", "provider_keys"]

_KEY_ENV = "AGENTPORT_PI_API_KEY"
_HEADLESS_ENV = {"PI_OFFLINE": "1", "PI_TELEMETRY": "0"}


def _provider_and_model(call: CliCall) -> tuple[str | None, str | None]:
    opts, model = call.options, call.config.model
    provider = str(opts["provider"]) if opts.get("provider") else None
    if opts.get("base_url"):
        provider = provider or "agentport"
    if model and "/" in model and provider is None:
        provider, model = model.split("/", 1)
    return provider, model


def build(call: CliCall) -> Invocation:
    """`_json_build`; a runtime's turn (without images) runs `pi --mode rpc` instead
    (`_rpc_turn`), so the runtime can steer and interrupt it."""
    control = CURRENT_TURN.get()
    if control is None or call.images:
        return _json_build(call)
    return _rpc_turn(call, control)


def _json_build(call: CliCall) -> Invocation:
    """argv: `pi -p --mode json --no-session [--provider P] [--model M] [--thinking E]
    [--append-system-prompt FILE] [--tools L | --no-tools --no-extensions]`; the prompt goes
    through stdin, the system prompt through a file in the run directory; with
    `base_url`, `PI_CODING_AGENT_DIR` names a private folder with models.json + settings.json."""
    opts, config = call.options, call.config
    argv = [call.executable, "-p", "--mode", "json", "--no-session"]
    provider, model = _provider_and_model(call)
    env: dict[str, str] = {}
    if opts.get("base_url"):
        assert provider is not None
        agent_dir = call.run_dir / "pi-agent"
        agent_dir.mkdir(exist_ok=True)
        entry: dict[str, Any] = {
            "baseUrl": str(opts["base_url"]).rstrip("/"),
            "api": str(opts.get("api", "openai-completions")),
            # an env variable NAME: pi resolves it, so the key is in no file
            "apiKey": _KEY_ENV,
            "models": [
                {
                    "id": model or "default",
                    "contextWindow": int(opts.get("context_window", 128000)),
                    "maxTokens": int(opts.get("max_output_tokens", 8192)),
                    # pi sends `--thinking` to a models.json model only when it is marked a
                    # reasoning model (pi-ai openai-completions: `model.reasoning`)
                    **({"reasoning": True} if config.reasoning_effort else {}),
                    # and sends images only to a model whose `input` lists them (else it
                    # writes "(image omitted: model does not support images)")
                    **({"input": ["text", "image"]} if call.images else {}),
                }
            ],
        }
        env[_KEY_ENV] = str(opts.get("api_key", "none"))
        models = {"providers": {provider: entry}}
        (agent_dir / "models.json").write_text(json.dumps(models), encoding="utf-8")
        settings = {
            "retry": {
                "maxRetries": int(opts.get("max_retries", 0)),  # agentport owns retries
                "provider": {"maxRetries": int(opts.get("provider_max_retries", 0))},
            }
        }
        (agent_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
        model = model or "default"
    # pi's parser takes the argument after a value flag as the value whatever it looks like
    # (`args[++i]`) and knows no `--flag=value` form: separate values are safe here.
    if provider:
        argv += ["--provider", provider]
    if model:
        argv += ["--model", model]
    if config.reasoning_effort:
        argv += ["--thinking", config.reasoning_effort]
    if call.system_prompt:
        # a file: pi reads an existing path's contents, so the text itself never goes in argv
        # (a system prompt that names a file would pull that file in)
        path = call.run_dir / "system-prompt.md"
        path.write_text(call.system_prompt, encoding="utf-8")
        replace = opts.get("system_prompt_mode") == "replace"
        argv += ["--system-prompt" if replace else "--append-system-prompt", str(path)]
    allowed = config.tools.allowed_tools
    if allowed is not None:
        # no tools: no built-ins and no extension that could register one
        argv += ["--tools", ",".join(allowed)] if allowed else ["--no-tools", "--no-extensions"]
    argv += [str(a) for a in opts.get("extra_args", ())]
    argv += [f"@{path}" for path in image_files(call)]  # `pi [options] [@files...]`
    env.update(blocking_stdio_env(call.run_dir, opts.get("env")))
    keys = ("PI_CODING_AGENT_DIR", *provider_keys(provider))
    return Invocation(
        tuple(argv), env, call.prompt.encode("utf-8"), endpoint_passthrough(opts, keys)
    )


def warm_build(call: CliCall) -> Invocation:
    """`build` for a process that serves call after call (warm processes): `pi --mode rpc`
    with the same flags and files, the call's prompt as one `prompt` command on stdin. pi's
    rpc mode prints the same agent events as `--mode json`, plus a `response` line per
    command. Calls with images run cold (`@file` arguments are per call)."""
    cold = _json_build(call)
    argv = [a for a in cold.argv if a != "-p"]
    argv[argv.index("json")] = "rpc"
    turn = json_line({"id": "agentport", "type": "prompt", "message": call.prompt})
    return Invocation(tuple(argv), cold.env, turn, cold.passthrough)


def _rpc_turn(call: CliCall, control: TurnControl) -> Invocation:
    """A runtime's turn on `pi --mode rpc` (`warm_build`'s process, for this turn only), its
    stdin open while the turn runs: `steer()` is pi's `steer` command, `interrupt()` its
    `abort` (pi docs/rpc.md: a steer is delivered after the running assistant turn's tool
    calls, before the next model call)."""
    rpc = warm_build(call)
    running = [True]

    def replies(obj: dict[str, Any]) -> None:
        if obj.get("type") == "agent_end":
            running[0] = False

    def steer(text: str) -> bytes | None:
        return json_line({"type": "steer", "message": text}) if running[0] else None

    def interrupt() -> bytes | None:
        return json_line({"type": "abort"}) if running[0] else None

    control.steer, control.interrupt = steer, interrupt
    # rpc mode prints no `session` line: ask for the state first, so the turn reports its
    # session id as `--mode json` did (`_pi_events.decode` reads get_state's answer)
    state = json_line({"id": "agentport-state", "type": "get_state"})
    return replace(rpc, stdin=state + (rpc.stdin or b""), replies=replies)


def _reset_answer(obj: Any) -> bool:
    return bool(obj.get("type") == "response" and obj.get("command") == "new_session")


# `new_session` starts an empty conversation on the running process and answers with a
# `response` line: measured on pi 0.73.1 (`--mode rpc --no-session`) against FakeModelServer,
# whose next model request then carries nothing of the conversation before it
# (tests/contract/test_pi_warm_contract.py).
WARM = WarmTurns(
    build=warm_build,
    reset=json_line({"id": "agentport-reset", "type": "new_session"}),
    reset_end=_reset_answer,
    reset_done=lambda obj: _reset_answer(obj) and obj.get("success") is True,
    fits=lambda call: not call.images,
)


SPEC = BackendSpec(
    name="pi",
    # each assistant `message_end` carries that model request's usage (a tool step: two)
    usage_mode="per_request",
    terminal_event="agent_end",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
    extra_env=_HEADLESS_ENV,
    warm=WARM,
    # after an error `agent_end`, pi's own retry notice (`auto_retry_start`, or its final
    # `auto_retry_end`) came 0-1 ms later on each of 3 retries (pi 0.73.1 --mode rpc against
    # a server answering 500): 1 s of silence means no retry follows. Matters for a warm
    # (rpc) process, which does not exit after a failed turn.
    error_grace_s=1.0,
)
