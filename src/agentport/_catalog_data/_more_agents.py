"""Other agents (hermes, goose, kiro, agy, grok, gjc, zcode, acp): catalog entries.

Part of `agentport.catalog` (the single source of truth); import from there.
"""

from __future__ import annotations

from ..core import BackendCapability, BackendKind, Billing, Param
from ._support import (
    FILES_INLINED,
    FUNCTIONS_NO_MCP,
    FUNCTIONS_SERVED,
    IMAGES_UNVERIFIED,
    MCP_NOT_WIRED,
    OWN_WEB,
    I,
    N,
    T,
    params,
)

ENTRIES: tuple[BackendCapability, ...] = (
    BackendCapability(
        name="hermes",
        retries=(
            "off per run: agent.api_max_retries = 0 in its private home (option "
            "max_retries)"
        ),
        aliases=("hermes_agent",),
        kind=BackendKind.cli,
        billing=(Billing.api_key, Billing.local),
        billing_note="the configured provider's key, or a local model server",
        summary="Hermes Agent (hermes -z, plain text + usage report), completion and runtime.",
        module="agentport.backends.hermes",
        executable="hermes",
        env_namespace=("HERMES_*",),
        install_hint="pipx install hermes-agent (or pip install hermes-agent in its own venv)",
        verified_against="0.19.0",
        supports_runtime=True,
        auto_priority=83,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=N, sandbox=I, max_turns=N, streaming=I, session_resume=I,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "the CLI has no reasoning flag",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(the prompt is an argument: about 100 kB at most)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m (and model.default in the generated config.yaml)",
            Param.tool_restriction: "--toolsets=<toolsets>: the names are hermes toolsets (file, "
            "terminal, web, ...), not single tools; no tools -> --toolsets=context_engine (a "
            "toolset that declares none) plus --ignore-rules",
            Param.sandbox: "-z auto-approves every tool: holds only with no tools (the "
            "default); otherwise refused (unsupported)",
            Param.max_turns: "agent.max_turns in the generated config.yaml (needs [llm.hermes] "
            "base_url)",
            Param.streaming: "one-shot: only the final reply, then the usage report",
            Param.session_resume: "0.19.0's -z ignores --resume (checked): each call is a new "
            "session; the session id is still reported",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on (a `web` toolset listed in tool_restriction "
            "loads it): web_search needs a configured provider (SearxNG works, self-hosted) but "
            "web_extract needs Firecrawl, Tavily, Exa or Parallel, private and loopback URLs are "
            "refused, and -z prints only the final reply, so agentport cannot see or count the "
            "searches (hermes-agent 0.19.0)" + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="goose",
        aliases=("goose_cli",),
        kind=BackendKind.cli,
        billing=(Billing.api_key, Billing.local),
        billing_note="the configured provider's key, or a local model (Ollama)",
        summary="Goose (goose run --output-format stream-json), completion and runtime; built "
        "from the docs, not run here.",
        module="agentport.backends.goose",
        executable="goose",
        env_namespace=("GOOSE_*",),
        install_hint="install the goose CLI (release binary from github.com/aaif-goose/goose; "
        "stream-json needs a build from 2025-12 or later)",
        verified_against=None,
        supports_runtime=True,
        auto_priority=80,
        params=params(
            system_prompt=N, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=N, streaming=N, session_resume=N,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "not run here (no binary); no reasoning flag is documented",
            Param.system_prompt: "--system (extra system instructions)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model (with --provider openai when [llm.goose] base_url is set)",
            Param.tool_restriction: "no allow-list flag: no tools -> GOOSE_MODE=chat (no tools at "
            "all); a non-empty list is refused (unsupported)",
            Param.sandbox: "no OS sandbox: read_only -> GOOSE_MODE=chat (no tools at all), full "
            "-> auto, workspace_write is refused (auto would let a shell write anywhere)",
            Param.max_turns: "--max-turns",
            Param.streaming: "stream-json events (text, reasoning, tool_call, tool_result, usage)",
            Param.session_resume: "--name <session_id> --resume; stream-json prints no session "
            "id, so a runtime does not resume by itself",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: not run here (no binary); goose has no built-in "
            "web search (the computercontroller extension only scrapes a URL; search comes from "
            "an MCP extension, e.g. Firecrawl's hosted server, which needs a key)" + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="kiro",
        aliases=("kiro_cli",),
        kind=BackendKind.cli,
        billing=(Billing.subscription,),
        billing_note="a Kiro login (AWS Builder ID or IAM Identity Center), plan credits",
        summary="Kiro CLI (kiro-cli chat --no-interactive, plain text), completion and runtime; "
        "built from the docs, not run here.",
        module="agentport.backends.kiro",
        executable="kiro-cli",
        env_namespace=("KIRO_*",),
        install_hint="curl -fsSL https://cli.kiro.dev/install | bash; headless needs "
        "KIRO_API_KEY",
        verified_against=None,
        supports_runtime=True,
        auto_priority=81,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=N, sandbox=T, max_turns=I, streaming=T, session_resume=N,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "not run here (no binary); no reasoning flag is documented",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "--trust-tools=<list> (an untrusted tool cannot be "
            "approved headless; no tools -> --trust-tools= trusts none)",
            Param.sandbox: "no OS sandbox: read_only -> --trust-tools=read,grep, "
            "workspace_write -> read,grep,write, full -> --trust-all-tools",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "plain text only: each stdout line becomes a text event; no tool "
            "or usage events",
            Param.session_resume: "--resume-id <id>; headless prints no session id, so pass "
            "one you know",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: kiro-cli documents built-in web_search and "
            "web_fetch tools, but it was not run here (no binary; headless needs KIRO_API_KEY) "
            "and its plain-text output shows no tool events to count" + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="agy",
        aliases=("antigravity", "antigravity_cli"),
        kind=BackendKind.cli,
        billing=(Billing.subscription,),
        billing_note="a Google account login",
        summary="Google Antigravity CLI (agy -p --output-format stream-json), completion and "
        "runtime; built from the docs, not run here.",
        module="agentport.backends.agy",
        executable="agy",
        install_hint="install the Antigravity CLI from https://antigravity.google "
        "(stream-json needs agy >= 1.1.8; sign in once interactively)",
        verified_against=None,
        supports_runtime=True,
        auto_priority=82,
        params=params(
            system_prompt=T, output_schema=N, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "not run here (no binary); no reasoning flag is documented",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(the prompt travels as the value of -p: about 100 kB at most)",
            Param.output_schema: "--json-schema FILE (structured_output in the result); an "
            "answer without it is validated and re-prompted",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "no allow-list flag: no tools -> print mode denies every tool "
            "that needs approval (shell, writes, URLs; reads inside the working directory "
            "remain); a non-empty list is refused (unsupported)",
            Param.sandbox: "read_only -> no flag (tools needing approval are denied in print "
            "mode), workspace_write -> --sandbox --dangerously-skip-permissions, full -> "
            "--dangerously-skip-permissions",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "stream-json events (init, text and thinking deltas, tool_call, "
            "tool_result, usage)",
            Param.session_resume: "--conversation <conversation_id> (from init/result)",
            Param.cwd: "the process working directory and --add-dir",
            Param.web_search: "not turned on: agy's web tools were not run here (no binary; "
            "it needs a Google login), so turning on only them is unproven" + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="grok",
        retries=(
            "the OpenAI Node SDK inside grok retries 429 and 5xx twice (honouring "
            "Retry-After); nothing turns that off"
        ),
        aliases=("grok_cli",),
        kind=BackendKind.cli,
        billing=(Billing.api_key,),
        billing_note="an xAI API key (GROK_API_KEY), or any OpenAI-compatible endpoint's key",
        summary="Grok CLI (grok --prompt, npm @vibe-kit/grok-cli): runtime and completion "
        "with every one of its tools approved; refuses least-privilege policies.",
        module="agentport.backends.grok",
        executable="grok",
        env_namespace=("GROK_*",),
        install_hint="npm install -g @vibe-kit/grok-cli (set GROK_API_KEY)",
        verified_against="1.0.1",  # what npm @vibe-kit/grok-cli 0.0.34 prints for --version
        supports_runtime=True,
        auto_priority=None,  # the default no-tools policy is refused: never picked by auto
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=T,
            reasoning_effort=I, model=N,
            tool_restriction=I, sandbox=I, max_turns=T, streaming=I, session_resume=I,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "grok-cli 0.0.34 has no reasoning flag",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(grok adds its own system prompt; the prompt is an argument: about 100 kB at most)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "fixed at 0.7 by the CLI",
            Param.max_tokens: "GROK_MAX_TOKENS in the child's environment",
            Param.model: "--model",
            Param.tool_restriction: "no tool flag, and headless mode approves every tool "
            "(bash, file edits): only allowed_tools=None (all of them) is accepted; any "
            "list, or no tools (the default), is refused (unsupported)",
            Param.sandbox: "no sandbox: only sandbox=None or full is accepted; read_only and "
            "workspace_write are refused (unsupported)",
            Param.max_turns: "--max-tool-rounds (option max_tool_rounds; 0 means its default "
            "400, so it cannot turn tools off)",
            Param.streaming: "the conversation is printed once the agent is done, one JSON "
            "message a line",
            Param.session_resume: "headless mode keeps no session",
            Param.cwd: "--directory",
            Param.web_search: "grok-cli 0.0.34 has no web tool" + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="gjc",
        retries=(
            "gjc's own auto-retry is not turned off (no flag for it); the run ends at its "
            "first auto_retry_start event, since agentport owns retries"
        ),
        aliases=("gajae_code",),  # gajae-code too: names are looked up with - as _
        kind=BackendKind.cli,
        billing=(Billing.api_key, Billing.subscription),
        billing_note="the configured provider's key or login (gjc's own settings)",
        summary="gajae-code (gjc -p --mode json, pi's event stream), completion and runtime; "
        "checked against its source, not run here.",
        module="agentport.backends.gjc",
        executable="gjc",
        env_namespace=("GJC_*",),
        install_hint="bun install -g gajae-code (needs Bun; see Yeachan-Heo/gajae-code)",
        verified_against=None,
        checked_against_source="Yeachan-Heo/gajae-code@1331dc3fb743 (cli/args.ts: modes "
        "text, json, acp; rpc removed), print-mode.ts@9f4ef66e8702, main.ts@016dfc61aa0c",
        supports_runtime=True,
        auto_priority=None,  # not verified against a real binary: never picked by auto
        params=params(
            system_prompt=N, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=N, sandbox=I, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: "not sent: gjc's source has @<file> images, but no real gjc has run "
            "them here",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "not sent: gjc's source has --thinking <level>, but no real "
            "gjc has run it here",
            Param.system_prompt: "--append-system-prompt FILE ([llm.gjc] system_prompt_mode "
            '= "replace" uses --system-prompt)',
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--provider P --model M (provider/model, or [llm.gjc] provider; a "
            "bare model is resolved by gjc)",
            Param.tool_restriction: "--tools <list> (built-in names); no tools -> --no-tools",
            Param.sandbox: "no sandbox or permission modes in print mode: holds only with no "
            "tools (the default); otherwise refused (unsupported)",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--mode json events (init, text deltas, tool_call, tool_result, "
            "usage)",
            Param.session_resume: "runs with --no-session (ephemeral)",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: its web tool is not a documented --tools name"
            + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="zcode",
        aliases=("zcode_cli",),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key),
        billing_note="whatever zcode's own settings use (its login or a provider key)",
        summary="Zcode (zcode --json --prompt, one JSON document), completion and runtime "
        "with its own tools; built from ouroboros's driver, not run here.",
        module="agentport.backends.zcode",
        executable="zcode",
        env_namespace=("ZCODE_*",),
        install_hint="install the Zcode app and put its zcode CLI on PATH (or set "
        "[llm.zcode] executable and script); npm's zcode package is not it",
        verified_against=None,
        checked_against_source="no public source (the CLI is a script bundled in the closed "
        "Zcode app); a third-party driver measured on zcode.cjs 0.16.9 agrees on --mode, "
        "--cwd, --resume and no model flag",
        supports_runtime=True,
        auto_priority=None,  # the default no-tools policy is refused: never picked by auto
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=I,
            tool_restriction=I, sandbox=T, max_turns=I, streaming=I, session_resume=N,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_NOT_WIRED,
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: IMAGES_UNVERIFIED,
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "the CLI has no reasoning flag",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(the prompt is an argument: about 100 kB at most)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "no model flag: the model is zcode's own setting",
            Param.tool_restriction: "no tool flag: only allowed_tools=None (its own tools) is "
            "accepted; any list, or no tools (the default), is refused (unsupported)",
            Param.sandbox: "permission modes, no OS sandbox: CLI default -> --mode edit, full "
            "-> --mode yolo; read_only and workspace_write are refused (unsupported)",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "one JSON document once the run is done: no events before it",
            Param.session_resume: "--resume <sessionId> (the document's sessionId)",
            Param.cwd: "--cwd and the process working directory",
            Param.web_search: "not turned on: no web tool is documented for its --json mode"
            + OWN_WEB,
            Param.approvals: "headless runs never ask: the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="acp",
        aliases=("agent_client_protocol",),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key),
        billing_note=(
            "whatever the ACP agent uses (gemini --acp: a Google login or an API key)"
        ),
        summary="Any Agent Client Protocol agent over stdio ([llm.acp] command), completion "
        "and runtime (one live session).",
        module="agentport.backends.acp",
        install_hint="set [llm.acp] command to an ACP agent's command line, e.g. "
        "[\"gemini\", \"--acp\"], [\"qwen\", \"--acp\"], [\"opencode\", \"acp\"], "
        "[\"goose\", \"acp\"], [\"kiro-cli\", \"acp\"]",
        verified_against="gemini-cli 0.61.0 (gemini --acp)",
        supports_runtime=True,
        auto_priority=None,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=I,
            images=I, files=T,
            mcp_servers=N, functions=T,
            approvals=N,
            steer=I, interrupt=N, fork=N, handoff=T,
        ),
        notes={
            Param.fork: "session/fork (an unstable ACP method) where the agent's initialize "
            "answer offers sessionCapabilities.fork, else unsupported: opencode 1.18.33 offers "
            "it; gemini 0.61.0, qwen 0.24.4 and copilot 1.0.102 do not",
            Param.interrupt: "session/cancel: the agent ends the prompt turn with stopReason "
            "cancelled, the session stays open (verified: gemini 0.61.0, qwen 0.24.4, opencode "
            "1.18.33, copilot 1.0.102)",
            Param.mcp_servers: "session/new mcpServers (the call's servers replace the mcp_servers "
            "option); the agent decides what it loads: gemini --acp 0.61 offered none of their "
            "tools (tests/contract/test_caller_tools_contract.py)",
            Param.functions: FUNCTIONS_SERVED + "; a runtime serves its first turn's functions "
            "for the whole session (opencode 1.18.33 and copilot 1.0.102 call them)",
            Param.images: "ACP image content blocks are not sent yet",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "ACP has no reasoning parameter",
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
            Param.web_search: "not turned on: ACP has no switch for an agent's web tools (the "
            "agent decides what it offers)" + OWN_WEB,
            Param.approvals: "session/request_permission: the call's ToolPolicy first, then "
            "the hook; the option is chosen by its kind (allow_once/allow_always, "
            "reject_once/reject_always), none of that kind -> the cancelled outcome",
        },
    ),
)  # fmt: skip
