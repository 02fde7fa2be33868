"""The public surface: `agentport.__all__`, the public modules' names (a snapshot: a change to
the public API is a change to this file) and a light `import agentport`."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

import agentport
import agentport.core
import agentport.testing
from _helpers import ROOT


def test_top_level_exports() -> None:
    assert sorted(agentport.__all__) == sorted(
        [
            "AgentEvent",
            "Allow",
            "Deny",
            "PermissionKind",
            "PermissionRequest",
            "AgentRuntime",
            "Attempt",
            "BackendCapability",
            "BackendKind",
            "CompletionConfig",
            "CompletionResponse",
            "ErrorKind",
            "EventType",
            "Failure",
            "FilePart",
            "Handoff",
            "ImagePart",
            "LLMAdapter",
            "McpServer",
            "Message",
            "MessageRole",
            "Param",
            "ParamSupport",
            "ProviderError",
            "RawInfo",
            "Result",
            "RetryPolicy",
            "RetryingAdapter",
            "RuntimeHandle",
            "Sandbox",
            "Success",
            "ToolPolicy",
            "Usage",
            "__version__",
            "attach",
            "complete_sync",
            "create_agent_runtime",
            "create_llm_adapter",
            "handoff",
            "resolve_backend",
        ]
    )
    for name in agentport.__all__:
        assert getattr(agentport, name) is not None


# The public modules besides `agentport` (docs/architecture.md "Public API"); every other module
# is internal. Its `__all__` is what the other layers use, not a promise to callers.
PUBLIC: dict[str, list[str]] = {
    "agentport.catalog": [
        "CATALOG", "all_backends", "get_capability", "resolve_backend",
    ],
    "agentport.policies": [
        "BUDGET_KEYS", "Budget", "BudgetAdapter", "BudgetLimit", "BudgetLimitName", "BudgetScope",
        "BudgetSettings", "ChainMember", "ConcurrencyGate", "Cooldown", "CooldownStore",
        "CooldownStoreWarning", "DEADLINE_SLACK_S", "DEFAULT_FAILOVER_ON", "DEFAULT_HANDOVER_ON",
        "FailoverAdapter", "PlanFit", "QuotaStatus", "RetryPolicy", "RetryingAdapter",
        "SessionHandover", "WindowRow", "cooldown_error", "default_store", "failover_kinds",
        "fit_plan", "format_budget", "merge_budgets", "parse_budget", "parse_duration",
        "quota_status", "receipt", "state_dir", "windows", "with_retry", "workflow_span",
    ],
    "agentport.testing": [
        "ALLOW_ENV", "ApiKind", "BLOCK_ENV", "Call", "Cassette", "CassetteRecorder",
        "ConcurrencyLimit", "CutStream", "DEFAULT_PAGES", "DEFAULT_QUESTION", "DEFAULT_SIDE_RULES",
        "DropConnection", "EchoAdapter", "EchoRuntime", "FakeModelServer", "FunctionAdapter",
        "Hang", "HttpFault", "INJECTED_PAGE", "JsonReply", "LargeReply", "LoopbackTls",
        "LoopbackWeb", "RebasedSearch", "RecordedRequest", "ReplyLike", "Rule", "ScriptedAdapter",
        "SearchHit", "ServerReply", "SideRule", "TextReply", "TokenUsage", "ToolCallReply",
        "UnmatchedCallError", "WebCall", "WebPage", "WebSearchReply", "block_real_backends",
        "cassette_calls", "claude_web_rules", "gemini_web_rules",
    ],
    "agentport.workflows.deep_research": [
        "Angle", "CONCURRENCY", "CORPUS_SUFFIXES", "CallCache", "Claim", "ClaimEntry",
        "ConfirmedEntry", "Corpus", "CorpusSource", "Deduper", "EventCallback", "Extract",
        "Finding", "InMemoryCorpus", "MAX_FETCH", "MAX_VERIFY_CLAIMS", "Outcome", "Passage",
        "REFUTATIONS_REQUIRED", "RefutedEntry", "Report", "ResearchConfig", "ResearchEvent",
        "ResearchPlan", "ResearchReport", "Scope", "Search", "SearchResult",
        "SearchedPassages", "SetAsideEntry", "SourceEntry", "UnverifiedEntry",
        "VOTES_PER_CLAIM", "Verdict", "atomic_write_text", "build_stats",
        "build_synth_blocks", "build_unverified_block", "check_web_search", "claim_key",
        "corpus_extract_prompt", "corpus_search_prompt", "corpus_verify_appendix",
        "fetch_prompt", "host_of", "load_corpus", "next_wave_size", "norm_url",
        "outcome_of", "passage_from_row", "passage_row", "plan_research", "quorum_decided",
        "rank_claims", "research_config_for", "run_research", "scope_prompt",
        "search_prompt", "sure_to_rank", "synth_prompt", "tally", "to_json", "to_markdown",
        "uses_own_web", "verify_prompt", "vote_str", "web_mode_refusal",
    ],
    "agentport.workflows.deeprefine": [
        "Action", "ApplyReport", "BASE_TOP_K", "Graph", "GraphSource", "HISTORY_HORIZON",
        "INCREMENT_HOP", "InMemoryGraph", "InputError", "Layout", "LoopResult",
        "LoopSettings", "MAX_ACTIONS", "MAX_HOPS", "MAX_TRIPLE_NUM_BY_STEP", "Parsed",
        "RefinePlan", "Rejected", "Resolution", "Review", "ReviewContext", "ReviewItem",
        "Triple", "add_query", "apply_refinement", "apply_reviewed", "atomic_write",
        "dump_graph", "expand", "find_layout", "finish", "format_history", "load_graph",
        "load_trace", "match_question", "memory_question", "parse_graph", "parse_judge",
        "parse_refinement", "pending", "plan_refine", "query_id", "read_history",
        "render_action", "render_refinement", "render_triples", "review", "run_loop",
        "save_loop", "save_partial", "source_hints", "sync_memory", "trace_template",
        "triple_from_row", "triple_row", "validate_trace",
    ],
}  # fmt: skip


def test_the_public_modules_export_exactly_their_snapshot() -> None:
    for name, names in PUBLIC.items():
        module = importlib.import_module(name)
        assert sorted(module.__all__) == names, name
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, (name, missing)


def test_the_docs_name_the_same_public_modules() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(agentport(?:\.[a-z][a-z_]*)*)`", section))
    assert named == {"agentport", *PUBLIC}, named


def test_every_exported_name_of_subpackages_exists() -> None:
    for module in (agentport.core, agentport.testing):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_import_agentport_loads_no_backend_and_no_heavy_dependency() -> None:
    code = (
        "import sys, agentport; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "{'httpx', 'litellm', 'llama_cpp', 'typer', 'rich', 'pydantic_settings', 'jsonschema'}"
        " or m.startswith('agentport.backends') or m.startswith('agentport.workflows')]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# what `import agentport` loads of its own: the types, errors and protocols a caller
# annotates with. The policy layer, the quota parsers, the factory and every backend load on
# first use (benchmarks/import_time.py measures the time this keeps down).
IMPORT_SET = [
    "agentport",
    "agentport.core",
    "agentport.core._approvals",  # the hook's types (Allow, Deny, PermissionRequest)
    "agentport.core._capabilities",
    "agentport.core._checks",
    "agentport.core._config",
    "agentport.core._cost",  # the billing route and cost state every Usage carries
    "agentport.core._errors",
    "agentport.core._events",
    "agentport.core._mcp_servers",
    "agentport.core._messages",
    "agentport.core._parts",
    "agentport.core._printable",  # the one terminal sanitiser, exported by core
    "agentport.core._protocols",
    "agentport.core._redact",  # ProviderError redacts every field it is built with
    "agentport.core._response",
    "agentport.core._usage",
    "agentport.core._wait",  # ProviderError checks its retry_after with it
]


def test_import_agentport_loads_exactly_its_core() -> None:
    code = "import sys, agentport; print(sorted(m for m in sys.modules if 'agentport' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(IMPORT_SET)


def test_names_loaded_on_first_use_resolve() -> None:
    from agentport import core, policies

    assert agentport.RetryPolicy is policies.RetryPolicy
    assert agentport.RetryingAdapter is policies.RetryingAdapter
    assert core.as_quota.__module__ == "agentport.core._quota"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = core.nope  # type: ignore[attr-defined]


def test_lazy_factory_names_resolve() -> None:
    assert callable(agentport.create_llm_adapter)
    assert agentport.resolve_backend("Echo") == "echo"


def test_deeprefine_script_does_not_load_the_typer_app() -> None:
    # Regression: importing agentport.cli used to load typer, rich and both workflow command
    # modules, adding ~40 MiB to every `deeprefine` run.
    code = (
        "import sys, agentport.cli._deeprefine; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'rich', 'click'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
