"""The capabilities catalog: the single source of truth for every backend.

Each entry owns the backend's canonical name, aliases, kind, executable, install hint,
`verified_against` and a `ParamSupport` for every `Param`. Nothing else declares names or
aliases; backend modules look their entry up here. Only implemented backends are registered.
Pure data: importing this module imports no backend.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from .core import (
    BackendCapability,
    BackendKind,
    ErrorKind,
    Param,
    ParamSupport,
    ProviderError,
    normalize_name,
)

__all__ = ["CATALOG", "all_backends", "get_capability", "resolve_backend"]

N, T, I = ParamSupport.NATIVE, ParamSupport.TRANSLATED, ParamSupport.IGNORED  # noqa: E741


def _params(**support: ParamSupport) -> dict[Param, ParamSupport]:
    return {Param(name): value for name, value in support.items()}


_ENTRIES: tuple[BackendCapability, ...] = (
    BackendCapability(
        name="scripted",
        aliases=("script", "fake"),
        kind=BackendKind.test,
        summary="Test double: replies from rules you script (agentport.testing.ScriptedAdapter).",
        module="agentport.testing._backend",
        params=_params(
            system_prompt=N, output_schema=N, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
        ),
        notes={Param.output_schema: "replies are validated against the schema"},
    ),
    BackendCapability(
        name="echo",
        aliases=("test",),
        kind=BackendKind.test,
        summary="Test double: answers with the last user message; also an AgentRuntime.",
        module="agentport.testing._backend",
        supports_runtime=True,
        params=_params(
            system_prompt=I, output_schema=T, temperature=I, max_tokens=I, model=I,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=N, session_resume=N,
            cwd=I, web_search=I,
        ),
        notes={Param.output_schema: "the echoed text is validated against the schema"},
    ),
    BackendCapability(
        name="openai_compat",
        aliases=("openai", "openai_compatible", "vllm", "ollama", "lmstudio", "llama_server"),
        kind=BackendKind.http,
        summary="Any OpenAI-compatible Chat Completions server (vLLM, llama-server, Ollama, ...).",
        module="agentport.backends.openai_compat",
        install_hint="built in; point [llm.openai_compat] base_url or AGENTPORT_OPENAI_BASE_URL "
        "at a server",
        params=_params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
        ),
        notes={
            Param.system_prompt: "sent as a system message",
            Param.output_schema: "response_format json_schema, then validated; TRANSLATED "
            "(schema in the prompt) with structured_output = \"prompt\"; choices are TRANSLATED",
            Param.model: "[llm.openai_compat] model or llm.model; left out when unset",
            Param.tool_restriction: "completion only: the model gets no tools",
            Param.sandbox: "completion only: nothing runs",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: the HTTP stream is read internally (for the "
            "idle timeout); callers get one answer",
            Param.session_resume: "stateless API: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "no web tools",
        },
    ),
    BackendCapability(
        name="litellm",
        kind=BackendKind.http,
        summary="LiteLLM: 100+ providers by model string (optional extra agentport[litellm]).",
        module="agentport.backends.litellm",
        install_hint="pip install 'agentport[litellm]'",
        requires_modules=("litellm",),
        extra="litellm",
        params=_params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
        ),
        notes={
            Param.system_prompt: "sent as a system message (LiteLLM adapts it per provider)",
            Param.output_schema: "response_format json_schema, then validated; TRANSLATED "
            "(schema in the prompt) with structured_output = \"prompt\"; choices are TRANSLATED",
            Param.model: "a LiteLLM model string, e.g. openai/gpt-4o-mini; required",
            Param.tool_restriction: "completion only: the model gets no tools",
            Param.sandbox: "completion only: nothing runs",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: the stream is read internally (for the idle "
            "timeout); callers get one answer",
            Param.session_resume: "stateless API: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "not requested (provider web tools are not wired)",
        },
    ),
    BackendCapability(
        name="local",
        aliases=("llama_cpp", "llamacpp", "gguf"),
        kind=BackendKind.local,
        summary="In-process llama.cpp on a GGUF file; default Gemma 3 270M, no account needed.",
        module="agentport.backends.local",
        install_hint="pip install 'agentport[local]'",
        auto_priority=90,
        requires_modules=("llama_cpp",),
        extra="local",
        params=_params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
        ),
        notes={
            Param.system_prompt: "through the chat template, or leading the Question/Answer "
            "prompt of a model without one (the packaged Gemma)",
            Param.output_schema: "grammar-constrained decoding from the JSON schema, then "
            "validated; choices are constrained by a grammar too",
            Param.model: "a path to a GGUF file ([llm.local] model_path or llm.model); default: "
            "the packaged Gemma 3 270M Q4_K_M",
            Param.tool_restriction: "completion only: the model gets no tools",
            Param.sandbox: "completion only: nothing runs",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: tokens are read internally (for cancellation "
            "and timeouts); callers get one answer",
            Param.session_resume: "stateless: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "no web access",
        },
    ),
    BackendCapability(
        name="claude",
        aliases=("claude_code",),
        kind=BackendKind.cli,
        summary="Claude Code CLI (claude -p --output-format stream-json), completion and runtime.",
        module="agentport.backends.claude",
        executable="claude",
        install_hint="npm install -g @anthropic-ai/claude-code",
        verified_against="2.1.197",
        supports_runtime=True,
        auto_priority=10,
        params=_params(
            system_prompt=N, output_schema=N, temperature=I, max_tokens=I, model=N,
            tool_restriction=N, sandbox=T, max_turns=N, streaming=N, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "--append-system-prompt ([llm.claude] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "--json-schema (a StructuredOutput tool); when the answer "
            "comes without structured_output its text is validated and re-prompted; choices "
            "are TRANSLATED",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "--tools=<list> and --allowedTools=<list>",
            Param.sandbox: "no OS sandbox: read_only -> --permission-mode plan, "
            "workspace_write -> acceptEdits, full -> bypassPermissions (refused as root)",
            Param.max_turns: "--max-turns",
            Param.streaming: "stream-json events (init, text, tool_call, tool_result, usage)",
            Param.session_resume: "--resume <session_id> (same working directory)",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport; the CLI's WebSearch tool follows "
            "tool_restriction",
        },
    ),
    BackendCapability(
        name="codex",
        aliases=("codex_cli", "openai_codex"),
        kind=BackendKind.cli,
        summary="OpenAI Codex CLI (codex exec --json), completion and runtime.",
        module="agentport.backends.codex",
        executable="codex",
        install_hint="npm install -g @openai/codex",
        verified_against="0.171.0",
        supports_runtime=True,
        auto_priority=20,
        params=_params(
            system_prompt=T, output_schema=N, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=N, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "--output-schema FILE with the strict subset (every property "
            "required, optional ones nullable), restored and validated afterwards; choices "
            "are TRANSLATED",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m",
            Param.tool_restriction: "codex has no tool allow-list; use sandbox",
            Param.sandbox: "--sandbox read-only|workspace-write|danger-full-access "
            "(default read-only)",
            Param.max_turns: "codex exec has no turn budget",
            Param.streaming: "--json events (init, text, reasoning, tool_call, tool_result, usage)",
            Param.session_resume: "codex exec resume <thread_id>",
            Param.cwd: "-C and the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="gemini",
        aliases=("gemini_cli",),
        kind=BackendKind.cli,
        summary="Google Gemini CLI (gemini --output-format stream-json), completion and runtime.",
        module="agentport.backends.gemini",
        executable="gemini",
        install_hint="npm install -g @google/gemini-cli",
        verified_against="0.61.0",
        supports_runtime=True,
        auto_priority=30,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=T, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m (without it the CLI routes between models with an extra request)",
            Param.tool_restriction: "not mapped (tools are set in the CLI's settings.json)",
            Param.sandbox: "approval modes: read_only -> default (mutating tools are not "
            "offered headless), workspace_write -> auto_edit, full -> yolo",
            Param.max_turns: "not mapped (model.maxSessionTurns in settings.json)",
            Param.streaming: "stream-json events (init, text deltas, tool_call, tool_result, "
            "usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory (trusted with --skip-trust)",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="opencode",
        aliases=("open_code", "sst_opencode"),
        kind=BackendKind.cli,
        summary="OpenCode CLI (opencode run --format json), completion and runtime.",
        module="agentport.backends.opencode",
        executable="opencode",
        install_hint="npm install -g opencode-ai",
        verified_against="1.18.33",
        supports_runtime=True,
        auto_priority=40,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=I, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(opencode run has no system-prompt flag)",
            Param.output_schema: "no schema flag on run: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "not mapped (agent temperature lives in the opencode config)",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m provider/model; a bare model name gets the configured provider",
            Param.tool_restriction: "not mapped (tools and permissions live in the opencode "
            "config)",
            Param.sandbox: "no OS sandbox; permissions live in the opencode config",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--format json events (step_start, whole text parts, tool_use, "
            "step_finish with usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="qwen",
        aliases=("qwen_code",),
        kind=BackendKind.cli,
        summary="Qwen Code CLI (qwen --output-format stream-json), completion and runtime.",
        module="agentport.backends.qwen",
        executable="qwen",
        install_hint="npm install -g @qwen-code/qwen-code",
        verified_against="0.15.10",
        supports_runtime=True,
        auto_priority=50,
        params=_params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N, model=N,
            tool_restriction=N, sandbox=T, max_turns=N, streaming=N, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "--append-system-prompt ([llm.qwen] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "--json-schema @FILE (a structured_output tool); the value "
            "comes back in result.structured_result and is validated",
            Param.temperature: "model.generationConfig.samplingParams.temperature in a per-run "
            "settings-defaults file (sent in the request)",
            Param.max_tokens: "model.generationConfig.samplingParams.max_tokens, same file",
            Param.model: "-m",
            Param.tool_restriction: "--core-tools <list> (only these built-in tools offered) "
            "and --allowed-tools <list> (no confirmation); the meta tools agent, skill, "
            "tool_search, send_message and task_stop stay offered",
            Param.sandbox: "approval modes: read_only -> default (mutating tools are not "
            "offered headless), workspace_write -> auto-edit, full -> yolo",
            Param.max_turns: "--max-session-turns",
            Param.streaming: "stream-json events (init, text, tool_call, tool_result, usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="pi",
        aliases=("pi_coding_agent", "pi_agent"),
        kind=BackendKind.cli,
        summary="pi coding agent (pi -p --mode json), completion and runtime.",
        module="agentport.backends.pi",
        executable="pi",
        install_hint="npm install -g @mariozechner/pi-coding-agent",
        verified_against="0.73.1",
        supports_runtime=True,
        auto_priority=60,
        params=_params(
            system_prompt=N, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=N, sandbox=I, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "--append-system-prompt ([llm.pi] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "no per-call flag ([llm.pi] max_output_tokens sets the model's "
            "maxTokens in the generated models.json)",
            Param.model: "--provider P --model M (provider/model, or [llm.pi] provider)",
            Param.tool_restriction: "--tools <list>; an empty list -> --no-tools",
            Param.sandbox: "no sandbox or permission modes in print mode",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--mode json events (init, text deltas, tool_call, tool_result, "
            "usage)",
            Param.session_resume: "runs with --no-session (ephemeral)",
            Param.cwd: "the process working directory",
            Param.web_search: "pi has no web tool",
        },
    ),
    BackendCapability(
        name="copilot",
        aliases=("copilot_cli", "github_copilot"),
        kind=BackendKind.cli,
        summary="GitHub Copilot CLI (copilot --output-format json), BYOK endpoints; completion "
        "and runtime.",
        module="agentport.backends.copilot",
        executable="copilot",
        install_hint="npm install -g @github/copilot",
        verified_against="1.0.102",
        supports_runtime=True,
        auto_priority=70,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=N, sandbox=I, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model (and COPILOT_MODEL for a BYOK endpoint)",
            Param.tool_restriction: "--available-tools=<list>",
            Param.sandbox: "no sandbox; --allow-all-tools is required headless",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--output-format json events (text deltas, tool_call, "
            "tool_result); no token counts",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="hermes",
        aliases=("hermes_agent",),
        kind=BackendKind.cli,
        summary="Hermes Agent (hermes -z, plain text + usage report), completion and runtime.",
        module="agentport.backends.hermes",
        executable="hermes",
        install_hint="pipx install hermes-agent (or pip install hermes-agent in its own venv)",
        verified_against="0.19.0",
        supports_runtime=True,
        auto_priority=83,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=N, sandbox=I, max_turns=N, streaming=I, session_resume=I,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(the prompt is an argument: about 100 kB at most)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m (and model.default in the generated config.yaml)",
            Param.tool_restriction: "-t <toolsets>: the names are hermes toolsets (file, "
            "terminal, web, ...), not single tools",
            Param.sandbox: "-z auto-approves every tool; limit toolsets with tool_restriction",
            Param.max_turns: "agent.max_turns in the generated config.yaml (needs [llm.hermes] "
            "base_url)",
            Param.streaming: "one-shot: only the final reply, then the usage report",
            Param.session_resume: "0.19.0's -z ignores --resume (checked): each call is a new "
            "session; the session id is still reported",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport (the web toolset follows "
            "tool_restriction)",
        },
    ),
    BackendCapability(
        name="goose",
        aliases=("goose_cli",),
        kind=BackendKind.cli,
        summary="Goose (goose run --output-format stream-json), completion and runtime; built "
        "from the docs, not run here.",
        module="agentport.backends.goose",
        executable="goose",
        install_hint="install the goose CLI (release binary from github.com/aaif-goose/goose; "
        "stream-json needs a build from 2025-12 or later)",
        verified_against=None,
        supports_runtime=True,
        auto_priority=80,
        params=_params(
            system_prompt=N, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=T, max_turns=N, streaming=N, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "--system (extra system instructions)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model (with --provider openai when [llm.goose] base_url is set)",
            Param.tool_restriction: "goose has no tool allow-list flag; extensions are chosen "
            "in its config",
            Param.sandbox: "no OS sandbox: GOOSE_MODE read_only -> chat (no tools at all), "
            "workspace_write and full -> auto (default auto: approval modes abort headless runs)",
            Param.max_turns: "--max-turns",
            Param.streaming: "stream-json events (text, reasoning, tool_call, tool_result, usage)",
            Param.session_resume: "--name <session_id> --resume; stream-json prints no session "
            "id, so a runtime does not resume by itself",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="kiro",
        aliases=("kiro_cli",),
        kind=BackendKind.cli,
        summary="Kiro CLI (kiro-cli chat --no-interactive, plain text), completion and runtime; "
        "built from the docs, not run here.",
        module="agentport.backends.kiro",
        executable="kiro-cli",
        install_hint="curl -fsSL https://cli.kiro.dev/install | bash; headless needs "
        "KIRO_API_KEY",
        verified_against=None,
        supports_runtime=True,
        auto_priority=81,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=N, sandbox=T, max_turns=I, streaming=T, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "--trust-tools=<list> (an untrusted tool cannot be "
            "approved headless)",
            Param.sandbox: "no OS sandbox: read_only -> --trust-tools=read,grep, "
            "workspace_write -> read,grep,write, full -> --trust-all-tools",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "plain text only: each stdout line becomes a text event; no tool "
            "or usage events",
            Param.session_resume: "--resume-id <id>; headless prints no session id, so pass "
            "one you know",
            Param.cwd: "the process working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="agy",
        aliases=("antigravity", "antigravity_cli"),
        kind=BackendKind.cli,
        summary="Google Antigravity CLI (agy -p --output-format stream-json), completion and "
        "runtime; built from the docs, not run here.",
        module="agentport.backends.agy",
        executable="agy",
        install_hint="install the Antigravity CLI from https://antigravity.google "
        "(stream-json needs agy >= 1.1.8; sign in once interactively)",
        verified_against=None,
        supports_runtime=True,
        auto_priority=82,
        params=_params(
            system_prompt=T, output_schema=N, temperature=I, max_tokens=I, model=N,
            tool_restriction=I, sandbox=T, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(the prompt travels as the value of -p: about 100 kB at most)",
            Param.output_schema: "--json-schema FILE (structured_output in the result); an "
            "answer without it is validated and re-prompted",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "not mapped (permissions.allow/deny in agy's settings.json)",
            Param.sandbox: "read_only -> no flag (tools needing approval are denied in print "
            "mode), workspace_write -> --sandbox --dangerously-skip-permissions, full -> "
            "--dangerously-skip-permissions",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "stream-json events (init, text and thinking deltas, tool_call, "
            "tool_result, usage)",
            Param.session_resume: "--conversation <conversation_id> (from init/result)",
            Param.cwd: "the process working directory and --add-dir",
            Param.web_search: "not toggled by agentport",
        },
    ),
    BackendCapability(
        name="acp",
        aliases=("agent_client_protocol",),
        kind=BackendKind.cli,
        summary="Any Agent Client Protocol agent over stdio ([llm.acp] command), completion "
        "and runtime (one live session).",
        module="agentport.backends.acp",
        install_hint="set [llm.acp] command to an ACP agent's command line, e.g. "
        "[\"gemini\", \"--acp\"], [\"qwen\", \"--acp\"], [\"opencode\", \"acp\"], "
        "[\"goose\", \"acp\"], [\"kiro-cli\", \"acp\"]",
        verified_against="gemini-cli 0.61.0 (gemini --acp)",
        supports_runtime=True,
        auto_priority=None,
        params=_params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=I,
        ),
        notes={
            Param.system_prompt: "ACP has no system role: folded into the prompt as a "
            "'System instructions' block",
            Param.output_schema: "schema in the prompt, JSON extracted, validated, re-prompted "
            "with the errors",
            Param.temperature: "ACP has no sampling parameters",
            Param.max_tokens: "ACP has no output-token parameter",
            Param.model: "session/set_model when the agent lists models in its session/new "
            "answer; otherwise the call fails (unsupported): put the model in the command",
            Param.tool_restriction: "answers the agent's session/request_permission from "
            "allowed_tools (ACP kind, tool id prefix or title); tools the agent runs without "
            "asking are not restricted",
            Param.sandbox: "permission answers, no OS sandbox: read_only allows read/search/"
            "think, workspace_write also edits inside cwd, full everything; default: reads only",
            Param.max_turns: "ACP has no turn budget",
            Param.streaming: "session/update notifications (text and thought chunks, tool_call, "
            "tool_result)",
            Param.session_resume: "session/load when the agent's initialize answer has "
            "loadSession (else unsupported); a runtime keeps one live session",
            Param.cwd: "session/new cwd and the agent's working directory",
            Param.web_search: "not toggled by agentport",
        },
    ),
)  # fmt: skip


def _index(entries: tuple[BackendCapability, ...]) -> dict[str, BackendCapability]:
    index: dict[str, BackendCapability] = {}
    for entry in entries:
        for name in entry.names:
            key = normalize_name(name)
            if key in index:
                raise RuntimeError(f"catalog: name {key!r} is declared twice")
            index[key] = entry
    return index


CATALOG: Mapping[str, BackendCapability] = {e.name: e for e in _ENTRIES}
_BY_NAME = _index(_ENTRIES)


def all_backends() -> tuple[BackendCapability, ...]:
    """Every registered backend, in catalog order."""
    return _ENTRIES


def resolve_backend(name: str) -> str:
    """Canonical name for *name* or one of its aliases (case-, space- and dash-insensitive).

    Raises `ProviderError(ErrorKind.config)` listing the known names and the closest match.
    `auto` is not resolved here (see `agentport.factory`).
    """
    key = normalize_name(name)
    entry = _BY_NAME.get(key)
    if entry is not None:
        return entry.name
    close = difflib.get_close_matches(key, list(_BY_NAME), n=1, cutoff=0.6)
    hint = f" did you mean {_BY_NAME[close[0]].name!r}?" if close else ""
    known = ", ".join(sorted(CATALOG))
    raise ProviderError(
        ErrorKind.config, f"unknown backend {name!r};{hint} known backends: {known}, auto"
    )


def get_capability(name: str) -> BackendCapability:
    """The catalog entry for a backend name or alias."""
    return CATALOG[resolve_backend(name)]
