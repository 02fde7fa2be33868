"""Vendor agent CLIs (claude, codex, gemini, opencode, qwen, pi, copilot): catalog entries.

Part of `agentport.catalog` (the single source of truth); import from there.
"""

from __future__ import annotations

from ..core import BackendCapability, BackendKind, Billing, Param
from ._support import (
    FILES_INLINED,
    FUNCTIONS_NO_MCP,
    FUNCTIONS_SERVED,
    OWN_WEB,
    I,
    N,
    T,
    params,
)

ENTRIES: tuple[BackendCapability, ...] = (
    BackendCapability(
        name="claude",
        retries=(
            "off per run: CLAUDE_CODE_MAX_RETRIES=0 in the run's environment (option "
            "max_retries); agentport's retry policy retries"
        ),
        aliases=("claude_code",),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key, Billing.cloud),
        billing_note=(
            "a Claude Pro/Max login spends its 5-hour and weekly windows; ANTHROPIC_API_KEY "
            "is metered; Bedrock/Vertex bill the cloud account"
        ),
        summary="Claude Code CLI (claude -p --output-format stream-json), completion and runtime.",
        module="agentport.backends.claude",
        executable="claude",
        env_namespace=("ANTHROPIC_*", "CLAUDE_*"),
        install_hint="npm install -g @anthropic-ai/claude-code",
        verified_against="2.1.332",
        supports_runtime=True,
        auto_priority=10,
        params=params(
            system_prompt=N, output_schema=N, temperature=I, max_tokens=I,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=T, max_turns=N, streaming=N, session_resume=N,
            cwd=N, web_search=N,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=N,
            steer=N, interrupt=T, fork=N, handoff=T,
        ),
        notes={
            Param.mcp_servers: "--mcp-config FILE (in the run's folder) and --strict-mcp-config; "
            "the servers' tools added to --allowedTools (mcp__<server>)",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "base64 image blocks in a stream-json user message "
            "(--input-format=stream-json)",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "--effort low|medium|high",
            Param.system_prompt: "--append-system-prompt ([llm.claude] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "--json-schema (a StructuredOutput tool); when the answer "
            "comes without structured_output its text is validated and re-prompted; choices "
            "are TRANSLATED",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model",
            Param.tool_restriction: "--tools=<list> and --allowedTools=<list>; no tools -> "
            "--tools= (the --json-schema tool stays) --strict-mcp-config "
            "--setting-sources=user; a shell "
            "tool under read_only or workspace_write, a write tool under read_only: refused",
            Param.sandbox: "no OS sandbox: read_only -> --permission-mode=plan, "
            "workspace_write -> acceptEdits, full -> bypassPermissions (refused as root); with "
            "no tools nothing runs",
            Param.max_turns: "--max-turns",
            Param.streaming: "stream-json events (init, text, tool_call, tool_result, usage)",
            Param.fork: "--resume <session_id> --fork-session (same working directory)",
            Param.steer: "a runtime's turn reads stream-json input (--replay-user-messages): "
            "a steer while a tool runs is one more user message, taken at the tool boundary "
            "(applied_now); while no tool runs it leads the next turn (queued_next_turn)",
            Param.interrupt: "the turn's process is stopped; the session resumes",
            Param.session_resume: "--resume <session_id> (same working directory)",
            Param.cwd: "the process working directory",
            Param.web_search: "WebSearch and WebFetch added to --tools/--allowedTools, and no "
            "other tool, only when the call asks: WebSearch is Anthropic's server-side search "
            "(a second request with the web_search_20250305 tool), WebFetch fetches the page "
            "itself (http upgraded to https; a claude.ai domain check first unless the user's "
            "settings say skipWebFetchPreflight) and summarises it with a second request; "
            "searches and fetches are tool events with metadata web=search|fetch",
            Param.approvals: "--permission-prompt-tool=mcp__agentport_approvals__approve: "
            "an MCP server agentport serves for the call on 127.0.0.1 with a per-call token "
            "(the mcp extra) asks the hook; --allowedTools is left out so listed tools are "
            "asked about, and full runs in the default permission mode instead of "
            "bypassPermissions",
        },
    ),
    BackendCapability(
        name="codex",
        retries=(
            "off per run: request_max_retries = 0 and stream_max_retries = 0 on its "
            "provider entry (with base_url; options of the same names); agentport's retry "
            "policy retries"
        ),
        aliases=("codex_cli", "openai_codex"),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key),
        billing_note=(
            "a ChatGPT plan login spends its 5-hour and weekly windows; an OpenAI API key "
            "is metered"
        ),
        summary="OpenAI Codex CLI (codex exec --json), completion and runtime.",
        module="agentport.backends.codex",
        executable="codex",
        env_namespace=("CODEX_*",),
        install_hint="npm install -g @openai/codex",
        verified_against="0.171.0",
        supports_runtime=True,
        auto_priority=20,
        params=params(
            system_prompt=T, output_schema=N, temperature=I, max_tokens=I,
            reasoning_effort=N, model=N,
            tool_restriction=T, sandbox=N, max_turns=I, streaming=N, session_resume=N,
            cwd=N, web_search=N,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=N,
            steer=N, interrupt=N, fork=N, handoff=T,
        ),
        notes={
            Param.mcp_servers: "-c mcp_servers={...}: the whole table, so no server of the user's "
            "config.toml is loaded",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "--image=<file> per image (written to the run's folder): input_image "
            "parts",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "-c model_reasoning_effort=\"low|medium|high\": the "
            "Responses request's reasoning.effort",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "--output-schema FILE with the strict subset (every property "
            "required, optional ones nullable), restored and validated afterwards; choices "
            "are TRANSLATED",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m",
            Param.tool_restriction: "no allow-list: no tools -> shell tool, web search "
            "(unless web_search is asked), sub-agents, apps and goals off "
            "(-c features.shell_tool=false, web_search=\"disabled\", "
            "features.multi_agent/apps/goals=false; view_image and request_user_input stay); "
            "for catalog models (the default gpt-6.2-sol included: code mode, tools in an "
            "additional_tools input item that no flag turns off) a rewritten copy of "
            "`codex debug models` is passed with -c model_catalog_json (tool_mode, "
            "multi_agent_version, apply_patch_tool_type null; use_responses_lite false), so "
            "exec, apply_patch and spawn_agent are gone for every model; no catalog or "
            "unknown tool metadata -> unsupported naming the model; a non-empty list is "
            "refused (unsupported)",
            Param.sandbox: "--sandbox=read-only|workspace-write|danger-full-access "
            "(default read-only); commands see only the core environment unless full",
            Param.max_turns: "codex exec has no turn budget",
            Param.streaming: "--json events (init, text, reasoning, tool_call, tool_result, usage)",
            Param.session_resume: "codex exec resume <thread_id>",
            Param.cwd: "-C and the process working directory",
            Param.web_search: "-c web_search=\"live\": the provider's Responses web_search "
            "tool (search and open_page run server-side; codex fetches nothing itself), "
            "with no shell or other tool, for the default model too (its catalog entry gets "
            "use_responses_lite false: 'lite' requests never offer web_search); "
            "off (web_search=\"disabled\") unless the call asks; "
            "searches and opened pages are tool events with metadata web=search|fetch",
            Param.steer: "a runtime's turns run on `codex app-server`: turn/steer adds the "
            "text to the running turn (its next model request carries it); before codex "
            "named the turn, or when codex refuses, the text leads the next turn",
            Param.interrupt: "turn/interrupt: codex ends the turn (status interrupted), the "
            "thread stays resumable; the process is stopped if it has not ended in 5 s",
            Param.fork: "thread/fork of the session on `codex app-server` (exec has no fork): "
            "a new thread id with the history",
            Param.approvals: "a call with a hook runs on `codex app-server` with "
            "approval_policy on-request: codex asks (item/commandExecution/requestApproval, "
            "item/fileChange/requestApproval) before a command or patch leaves its sandbox, "
            "answered accept/decline by the hook (a sandbox the ToolPolicy names holds: "
            "declined without asking); what runs inside the sandbox is not asked",
        },
    ),
    BackendCapability(
        name="gemini",
        retries=(
            "no per-run setting (general.maxAttempts lives in your settings.json): the run "
            "ends at the first stderr 'Attempt N failed ... Retrying with backoff' and that "
            "failure is classified (status, else network)"
        ),
        aliases=("gemini_cli",),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key, Billing.cloud),
        billing_note=(
            "a Google account login (free tier or Code Assist, daily quotas); GEMINI_API_KEY "
            "is metered; Vertex AI bills the cloud account"
        ),
        summary="Google Gemini CLI (gemini --output-format stream-json), completion and runtime.",
        module="agentport.backends.gemini",
        executable="gemini",
        env_namespace=("GEMINI_*", "GOOGLE_GEMINI_*"),
        install_hint="npm install -g @google/gemini-cli",
        verified_against="0.61.0",
        supports_runtime=True,
        auto_priority=30,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=N,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: "mcpServers in a per-run system settings file "
            "(GEMINI_CLI_SYSTEM_SETTINGS_PATH), --allowed-mcp-server-names=<those>, and "
            "their tools allowed in the per-run policy",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "@<file> references in the prompt, their folder added with "
            "--include-directories: inline data parts",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "thinking is set per model in settings.json modelConfigs, "
            "which agentport does not write over the user's",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m (without it the CLI routes between models with an extra request)",
            Param.tool_restriction: "a per-run policy file (--policy=FILE, the user tier): every "
            "tool denied, each listed one allowed; no MCP server (--allowed-mcp-server-names); "
            "the shell tool under read_only or workspace_write is refused",
            Param.sandbox: "approval modes: read_only -> default (mutating tools are not "
            "offered headless), workspace_write -> auto_edit, full -> yolo",
            Param.max_turns: "not mapped (model.maxSessionTurns in settings.json)",
            Param.streaming: "stream-json events (init, text deltas, tool_call, tool_result, "
            "usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory (trusted with --skip-trust)",
            Param.web_search: "google_web_search and web_fetch allowed in the per-run policy "
            "file, and no other tool, only when the call asks: google_web_search is a "
            "grounded request (googleSearch tool, groundingMetadata sources); web_fetch asks "
            "the provider to read the urls (urlContext tool) and fetches them itself only as "
            "a fallback; it refuses private and loopback hosts; searches and fetches are "
            "tool events with metadata web=search|fetch",
            Param.approvals: "headless `gemini -p` never asks: the static ToolPolicy "
            "decides; the acp backend with `gemini --acp` asks (NATIVE "
            "there)",
        },
    ),
    BackendCapability(
        name="opencode",
        retries=(
            "no retry setting: run with --print-logs --log-level INFO, the run ends at the "
            "first 'stream error' log line (classified from its text) or at a model request "
            "sent again with no new step (a stream cut after it began: network)"
        ),
        aliases=("open_code", "sst_opencode"),
        kind=BackendKind.cli,
        billing=(Billing.api_key, Billing.subscription),
        billing_note="the configured provider's key, or a provider login",
        summary="OpenCode CLI (opencode run --format json), completion and runtime.",
        module="agentport.backends.opencode",
        executable="opencode",
        env_namespace=("OPENCODE_*",),
        install_hint="npm install -g opencode-ai",
        verified_against="1.18.33",
        supports_runtime=True,
        auto_priority=40,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=T, sandbox=T, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: "mcp in the run's OPENCODE_CONFIG_CONTENT, every server of the "
            "user's and the folder's config turned off (enabled: false); their tools "
            "(<server>_*) allowed in the run's permission rules",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "--file=<file> per image; with base_url the run's model entry takes "
            "images (modalities)",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "--variant names a provider-specific model variant, not a "
            "level every provider has",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block "
            "(opencode run has no system-prompt flag)",
            Param.output_schema: "no schema flag on run: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "not mapped (agent temperature lives in the opencode config)",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "-m provider/model; a bare model name gets the configured provider",
            Param.tool_restriction: "permission rules in a per-run config "
            "(OPENCODE_CONFIG_CONTENT, OPENCODE_PERMISSION; also for the built-in agents): "
            "every tool deny, each listed "
            "one allow",
            Param.sandbox: "no OS sandbox: permission rules; read_only denies edit, write, bash, "
            "task and external_directory, workspace_write denies bash, task and "
            "external_directory; bash in the list (or a write tool under read_only) is refused",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--format json events (step_start, whole text parts, tool_use, "
            "step_finish with usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: 1.18.33 offers webfetch; its websearch tool "
            "appears only on opencode's own providers or with OPENCODE_ENABLE_EXA or "
            "OPENCODE_ENABLE_PARALLEL, and sends the queries to Exa's or Parallel's hosted MCP "
            "service (URLs fixed in the binary): not self-hostable, not testable offline"
            + OWN_WEB,
            Param.approvals: "`opencode run` never asks: the static ToolPolicy decides; "
            "the acp backend with `opencode acp` asks (NATIVE there)",
        },
    ),
    BackendCapability(
        name="qwen",
        retries=(
            "model.generationConfig.maxRetries = 0 in the per-run settings layer; its "
            "429/5xx backoff loop has no setting: the run ends at the first '[RETRY] Attempt "
            "N failed' line of its debug log (a private QWEN_RUNTIME_DIR per run)"
        ),
        aliases=("qwen_code",),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key),
        billing_note="a Qwen OAuth login (daily quota), or an OpenAI-compatible API key",
        summary="Qwen Code CLI (qwen --output-format stream-json), completion and runtime.",
        module="agentport.backends.qwen",
        executable="qwen",
        env_namespace=("QWEN_*", "DASHSCOPE_*"),
        install_hint="npm install -g @qwen-code/qwen-code",
        verified_against="0.24.4",
        supports_runtime=True,
        auto_priority=50,
        params=params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=T, max_turns=N, streaming=N, session_resume=I,
            cwd=N, web_search=I,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: "mcpServers in a per-run system settings file "
            "(QWEN_CODE_SYSTEM_SETTINGS_PATH) and --allowed-mcp-server-names=<those>",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "@<file> references (as gemini); with base_url the run's model is "
            "marked image-capable (generationConfig.modalities)",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "model.generationConfig.samplingParams.reasoning_effort in "
            "the run's settings file: the request's reasoning_effort",
            Param.system_prompt: "--append-system-prompt ([llm.qwen] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "--json-schema @FILE (a structured_output tool); the value "
            "comes back in result.structured_result and is validated",
            Param.temperature: "model.generationConfig.samplingParams.temperature in a per-run "
            "settings-defaults file (sent in the request)",
            Param.max_tokens: "model.generationConfig.samplingParams.max_tokens, same file",
            Param.model: "-m",
            Param.tool_restriction: "--core-tools=<list> (only these built-in tools offered), "
            "--allowed-tools=<list> (no confirmation), --exclude-tools=<every other built-in "
            "and meta tool> (agent, skill, tool_search, tool_call, ... are offered beside any "
            "core list otherwise), no MCP server; exactly the listed tools are offered (0.15 "
            "and 0.24)",
            Param.sandbox: "approval modes: read_only -> default (mutating tools are not "
            "offered headless), workspace_write -> auto-edit, full -> yolo",
            Param.max_turns: "--max-session-turns",
            Param.streaming: "stream-json events (init, text, tool_call, tool_result, usage)",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: qwen-code 0.24.4 has no web search tool (only "
            "web_fetch, deferred behind tool_search, whose page text a second model request "
            "summarises)" + OWN_WEB,
            Param.approvals: "headless `qwen -p` never asks: the static ToolPolicy "
            "decides; the acp backend with `qwen --acp` asks (NATIVE "
            "there)",
        },
    ),
    BackendCapability(
        name="pi",
        retries=(
            "off per run: retry.maxRetries = 0 and retry.provider.maxRetries = 0 in the "
            "private agent folder (with base_url); with your own folder the run ends at "
            "pi's first auto_retry_start event"
        ),
        aliases=("pi_coding_agent", "pi_agent"),
        kind=BackendKind.cli,
        billing=(Billing.api_key, Billing.subscription),
        billing_note="the configured provider's key, or a provider login (/login)",
        summary="pi coding agent (pi -p --mode json), completion and runtime.",
        module="agentport.backends.pi",
        executable="pi",
        env_namespace=("PI_*",),
        install_hint="npm install -g @mariozechner/pi-coding-agent",
        verified_against="0.73.1",
        supports_runtime=True,
        auto_priority=60,
        params=params(
            system_prompt=N, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=I, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
            images=N, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=N, interrupt=N, fork=I, handoff=T,
        ),
        notes={
            Param.steer: "a runtime's turn runs `pi --mode rpc`: steer() is its `steer` "
            "command, delivered after the running assistant turn's tool calls, before the "
            "next model call (applied_now; with only text streaming too)",
            Param.interrupt: "pi's rpc `abort`: the turn ends (interrupted)",
            Param.mcp_servers: "pi has no MCP client",
            Param.functions: FUNCTIONS_NO_MCP,
            Param.images: "@<file> arguments; with base_url the models.json model lists image "
            "input",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "--thinking low|medium|high (with base_url the models.json "
            "model is marked reasoning, which pi needs to send it)",
            Param.system_prompt: "--append-system-prompt ([llm.pi] system_prompt_mode = "
            "\"replace\" uses --system-prompt)",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "no per-call flag ([llm.pi] max_output_tokens sets the model's "
            "maxTokens in the generated models.json)",
            Param.model: "--provider P --model M (provider/model, or [llm.pi] provider)",
            Param.tool_restriction: "--tools <list>; no tools -> --no-tools --no-extensions",
            Param.sandbox: "no sandbox or permission modes in print mode: holds only with no "
            "tools (the default); otherwise refused (unsupported)",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--mode json events (init, text deltas, tool_call, tool_result, "
            "usage)",
            Param.session_resume: "runs with --no-session (ephemeral)",
            Param.cwd: "the process working directory",
            Param.web_search: "pi 0.73.1 has no web tool (bash, read, edit, write)" + OWN_WEB,
            Param.approvals: "pi has no permission prompts (its tools run or are not "
            "offered): the static ToolPolicy decides",
        },
    ),
    BackendCapability(
        name="copilot",
        retries=(
            "no setting: the run ends at the first model.call_failure event (its "
            "statusCode, or network for a transport failure)"
        ),
        aliases=("copilot_cli", "github_copilot"),
        kind=BackendKind.cli,
        billing=(Billing.subscription, Billing.api_key),
        billing_note=(
            "a GitHub Copilot plan (premium requests), or your own provider key (BYOK)"
        ),
        summary="GitHub Copilot CLI (copilot --output-format json), BYOK endpoints; completion "
        "and runtime.",
        module="agentport.backends.copilot",
        executable="copilot",
        env_namespace=("COPILOT_*",),
        install_hint="npm install -g @github/copilot",
        verified_against="1.0.102",
        supports_runtime=True,
        auto_priority=70,
        params=params(
            system_prompt=T, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=T, max_turns=I, streaming=N, session_resume=I,
            cwd=N, web_search=I,
            images=N, files=T,
            mcp_servers=N, functions=T,
            approvals=I,
            steer=T, interrupt=T, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: "--additional-mcp-config=@FILE (in the run's folder), "
            "--disable-builtin-mcps and --disable-mcp-server=<each of ~/.copilot/"
            "mcp-config.json>; the servers named in --available-tools and --allow-tool",
            Param.functions: FUNCTIONS_SERVED,
            Param.images: "--attachment=<file> per image",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "--reasoning-effort low|medium|high",
            Param.system_prompt: "folded into the prompt as a 'System instructions' block",
            Param.output_schema: "no schema flag: schema in the prompt, JSON extracted, "
            "validated, re-prompted with the errors",
            Param.temperature: "the CLI has no sampling flags",
            Param.max_tokens: "the CLI has no output-token flag",
            Param.model: "--model (and COPILOT_MODEL for a BYOK endpoint)",
            Param.tool_restriction: "--available-tools=<list>; no tools -> a name no tool has, "
            "plus --deny-tool=shell, write and url",
            Param.sandbox: "no OS sandbox: read_only -> --deny-tool=shell, url, write; "
            "workspace_write -> --allow-tool=write (paths limited to the working directory); "
            "full -> --allow-all-tools; a shell tool under a narrower sandbox is refused",
            Param.max_turns: "the CLI has no turn budget",
            Param.streaming: "--output-format json events (text deltas, tool_call, "
            "tool_result); no token counts",
            Param.session_resume: "not verified headless; each call is a new session",
            Param.cwd: "the process working directory",
            Param.web_search: "not turned on: 1.0.102 with a BYOK endpoint offers web_fetch but "
            "no web search tool" + OWN_WEB,
            Param.approvals: "`copilot -p` never asks (tools are allowed or denied by "
            "flags): the static ToolPolicy decides; the acp backend with "
            "`copilot --acp` asks (NATIVE there)",
        },
    ),
)  # fmt: skip
