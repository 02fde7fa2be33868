"""Test doubles, HTTP endpoints and the in-process model: catalog entries.

Part of `agentport.catalog` (the single source of truth); import from there.
"""

from __future__ import annotations

from ..core import BackendCapability, BackendKind, Billing, Param
from ._support import FILES_INLINED, MCP_COMPLETION, I, N, T, params

ENTRIES: tuple[BackendCapability, ...] = (
    BackendCapability(
        name="scripted",
        aliases=("script", "fake"),
        kind=BackendKind.test,
        billing=(Billing.none,),
        billing_note="a test double: no account",
        summary="Test double: replies from rules you script (agentport.testing.ScriptedAdapter).",
        module="agentport.testing._backend",
        params=params(
            system_prompt=N, output_schema=N, temperature=I, max_tokens=I,
            reasoning_effort=I, model=N,
            tool_restriction=N, sandbox=N, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=I, interrupt=I, fork=I, handoff=I,
        ),
        notes={
            Param.mcp_servers: MCP_COMPLETION,
            Param.functions: MCP_COMPLETION,
            Param.images: "scripted replies: images are not looked at",
            Param.files: FILES_INLINED,
            Param.output_schema: "replies are validated against the schema",
            Param.reasoning_effort: "scripted replies: nothing thinks",
            Param.approvals: "no tools run: nothing to approve",
        },
    ),
    BackendCapability(
        name="echo",
        aliases=("test",),
        kind=BackendKind.test,
        billing=(Billing.none,),
        billing_note="a test double: no account",
        summary="Test double: answers with the last user message; also an AgentRuntime.",
        module="agentport.testing._backend",
        supports_runtime=True,
        params=params(
            system_prompt=I, output_schema=T, temperature=I, max_tokens=I,
            reasoning_effort=I, model=I,
            tool_restriction=N, sandbox=N, max_turns=I, streaming=N, session_resume=N,
            cwd=I, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=I, interrupt=I, fork=I, handoff=T,
        ),
        notes={
            Param.mcp_servers: MCP_COMPLETION,
            Param.functions: MCP_COMPLETION,
            Param.images: "echoes the text only",
            Param.files: FILES_INLINED,
            Param.output_schema: "the echoed text is validated against the schema",
            Param.reasoning_effort: "echoes the prompt: nothing thinks",
            Param.approvals: "no tools run: nothing to approve",
        },
    ),
    BackendCapability(
        name="openai_compat",
        aliases=("openai", "openai_compatible", "vllm", "ollama", "lmstudio", "llama_server"),
        kind=BackendKind.http,
        billing=(Billing.api_key, Billing.local),
        billing_note="the server's API key, or nothing for your own local server",
        summary="Any OpenAI-compatible Chat Completions server (vLLM, llama-server, Ollama, ...).",
        module="agentport.backends.openai_compat",
        install_hint="built in; point [llm.openai_compat] base_url or AGENTPORT_OPENAI_BASE_URL "
        "at a server",
        params=params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=N, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
            images=N, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=I, interrupt=I, fork=I, handoff=I,
        ),
        notes={
            Param.mcp_servers: MCP_COMPLETION,
            Param.functions: MCP_COMPLETION,
            Param.images: "image_url parts with base64 data URLs (the Chat Completions vision "
            "input)",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "reasoning_effort in the request body (reasoning models; "
            "servers without it may reject the field)",
            Param.system_prompt: "sent as a system message",
            Param.output_schema: "response_format json_schema, then validated; TRANSLATED "
            "(schema in the prompt) with structured_output = \"prompt\"; choices are TRANSLATED",
            Param.model: "[llm.openai_compat] model or llm.model; left out when unset",
            Param.tool_restriction: "completion only: the model gets no tools, so any list holds",
            Param.sandbox: "completion only: nothing runs, so any sandbox holds",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: the HTTP stream is read internally (for the "
            "idle timeout); callers get one answer",
            Param.session_resume: "stateless API: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "no web tools",
            Param.approvals: "a completion API runs no tools: nothing to approve",
        },
    ),
    BackendCapability(
        name="litellm",
        kind=BackendKind.http,
        billing=(Billing.api_key, Billing.cloud),
        billing_note="the provider key or cloud account of the model string",
        summary="LiteLLM: 100+ providers by model string (optional extra agentport[litellm]).",
        module="agentport.backends.litellm",
        install_hint="pip install 'agentport[litellm]'",
        requires_modules=("litellm",),
        extra="litellm",
        params=params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N,
            reasoning_effort=N, model=N,
            tool_restriction=N, sandbox=N, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
            images=N, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=I, interrupt=I, fork=I, handoff=I,
        ),
        notes={
            Param.mcp_servers: MCP_COMPLETION,
            Param.functions: MCP_COMPLETION,
            Param.images: "image_url parts with base64 data URLs; LiteLLM converts them per "
            "provider",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "reasoning_effort passed to litellm.acompletion, which maps "
            "it per provider",
            Param.system_prompt: "sent as a system message (LiteLLM adapts it per provider)",
            Param.output_schema: "response_format json_schema, then validated; TRANSLATED "
            "(schema in the prompt) with structured_output = \"prompt\"; choices are TRANSLATED",
            Param.model: "a LiteLLM model string, e.g. openai/gpt-4o-mini; required",
            Param.tool_restriction: "completion only: the model gets no tools, so any list holds",
            Param.sandbox: "completion only: nothing runs, so any sandbox holds",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: the stream is read internally (for the idle "
            "timeout); callers get one answer",
            Param.session_resume: "stateless API: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "not requested (provider web tools are not wired)",
            Param.approvals: "a completion API runs no tools: nothing to approve",
        },
    ),
    BackendCapability(
        name="local",
        aliases=("llama_cpp", "llamacpp", "gguf"),
        kind=BackendKind.local,
        billing=(Billing.local,),
        billing_note="runs on your machine: no account",
        summary="Embedded llama.cpp (a worker process) on a GGUF file; default Gemma 3 270M.",
        module="agentport.backends.local",
        install_hint="pip install 'agentport[local]'",
        auto_priority=90,
        requires_modules=("llama_cpp",),
        extra="local",
        params=params(
            system_prompt=N, output_schema=N, temperature=N, max_tokens=N,
            reasoning_effort=I, model=N,
            tool_restriction=N, sandbox=N, max_turns=I, streaming=I, session_resume=I,
            cwd=I, web_search=I,
            images=I, files=T,
            mcp_servers=I, functions=I,
            approvals=I,
            steer=I, interrupt=I, fork=I, handoff=I,
        ),
        notes={
            Param.mcp_servers: MCP_COMPLETION,
            Param.functions: MCP_COMPLETION,
            Param.images: "the embedded model has no vision projector",
            Param.files: FILES_INLINED,
            Param.reasoning_effort: "llama.cpp has no reasoning setting",
            Param.system_prompt: "through the chat template, or leading the Question/Answer "
            "prompt of a model without one (the packaged Gemma)",
            Param.output_schema: "grammar-constrained decoding from the JSON schema, then "
            "validated; choices are constrained by a grammar too",
            Param.model: "a path to a GGUF file ([llm.local] model_path or llm.model); default: "
            "the packaged Gemma 3 270M Q4_K_M",
            Param.tool_restriction: "completion only: the model gets no tools, so any list holds",
            Param.sandbox: "completion only: nothing runs, so any sandbox holds",
            Param.max_turns: "completion only: one turn",
            Param.streaming: "completion only: tokens are read internally (for cancellation "
            "and timeouts); callers get one answer",
            Param.session_resume: "stateless: send the history as messages",
            Param.cwd: "no working directory: nothing runs",
            Param.web_search: "no web access",
            Param.approvals: "an embedded model runs no tools: nothing to approve",
        },
    ),
)  # fmt: skip
