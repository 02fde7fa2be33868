"""gajae-code (`gjc -p --mode json`), as one `BackendSpec`.

Not run here: no registry this project installs from carries gajae-code (its README installs it
with `bun install -g gajae-code`), so `verified_against = None`; the spec was checked against
its source (`checked_against_source` in the catalog). gjc is built on pi's agent core, and its
print mode is pi's, so the shared part is exercised against a real binary of it:
pi-coding-agent 0.73.1 driven through this spec (tests/contract/test_gjc_contract.py).

Facts from the source: `--mode` takes `text`, `json` or `acp`; `--mode rpc` (the protocol
earlier drivers used) was removed, and asking for it is a usage error (exit 2, "--mode rpc was
removed; external control now uses the Gajae-Code SDK"). `-p --mode json` is the one-shot
headless mode: it prints a `session` header line, then every agent-session event as one flat
JSON object a line (pi's shapes: `agent_*`, `turn_*`, `message_*` with `text_delta` updates,
`tool_execution_*`, `auto_retry_*`), and reads the whole prompt from stdin when stdin is not a
terminal. Flags used: `--no-session`, `--provider P`, `--model M`, `--append-system-prompt` /
`--system-prompt` (text or a file's path), `--tools a,b` (built-in tool names; an unknown name
is dropped with a warning) and `--no-tools`. Its source also has `--thinking LEVEL` and
`@path` images; they are not sent until a contract test runs them on a real gjc (a NATIVE
claim is checked against the real program).
An API error is the assistant message's `stopReason: "error"` (pi's table, `_pi_events`).

Options (`[llm.gjc]`): `provider` (the provider of a bare `model`; else `model` may be
`provider/model`), `system_prompt_mode` (`append` (default) or `replace`), `extra_args`, plus
the generic `executable`, `env`, `grace_s`, `max_line_bytes`.
"""

from __future__ import annotations

from ._pi_events import classify, decode, final_text, provider_keys
from ._policy import not_a_flag
from ._spec import BackendSpec, CliCall, Invocation

__all__ = ["SPEC", "build", "classify", "decode", "final_text"]


def _provider_and_model(call: CliCall) -> tuple[str | None, str | None]:
    provider = str(call.options["provider"]) if call.options.get("provider") else None
    model = call.config.model
    if model and "/" in model and provider is None:
        provider, model = model.split("/", 1)
    return provider, model


def build(call: CliCall) -> Invocation:
    """argv: `gjc -p --mode json --no-session [--provider P] [--model M]
    [--append-system-prompt FILE] [--tools L | --no-tools] [extra_args]`; the
    prompt goes through stdin, the system prompt through a file in the run directory (gjc
    reads an existing path's contents, so the text never goes in argv)."""
    config = call.config
    argv = [call.executable, "-p", "--mode", "json", "--no-session"]
    provider, model = _provider_and_model(call)
    # gjc's parser refuses a value that starts with "-" (a usage error, exit 2): such a value
    # is refused here with its field's name instead
    if provider:
        argv += ["--provider", not_a_flag("provider", provider)]
    if model:
        argv += ["--model", not_a_flag("model", model)]
    if call.system_prompt:
        path = call.run_dir / "system-prompt.md"
        path.write_text(call.system_prompt, encoding="utf-8")
        replace = call.options.get("system_prompt_mode") == "replace"
        argv += ["--system-prompt" if replace else "--append-system-prompt", str(path)]
    allowed = config.tools.allowed_tools
    if allowed is not None:
        tools = not_a_flag("allowed_tools", ",".join(allowed)) if allowed else None
        argv += ["--tools", tools] if tools else ["--no-tools"]
    argv += [str(a) for a in call.options.get("extra_args", ())]
    return Invocation(tuple(argv), {}, call.prompt.encode("utf-8"), provider_keys(provider))


SPEC = BackendSpec(
    name="gjc",
    # pi's events: each assistant `message_end` is one model request's usage
    usage_mode="per_request",
    terminal_event="agent_end",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
    # gjc's own auto-retry (on by default) announces itself within a few ms of the error, as
    # pi's does: 1 s of silence after an error means none follows
    error_grace_s=1.0,
)
