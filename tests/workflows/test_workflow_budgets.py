"""A workflow stopped by its budget ends in a partial result, never in an exception with
nothing: deep research lists the claims it verified and the rest
as "not verified (budget)"; DeepRefine keeps the trace so far and applies nothing; both exit
with the distinct "partial" code 3. The budget comes from the library (`budget=`), the
command line (`--budget`) or the configuration (`[budget]`); `--plan` shows the worst case
against it; bad budgets are one-line errors naming the flag or the config field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import agentport.factory
from _deep_research_util import PASS, angle_of, url_of
from _deeprefine_util import write_tiny
from agentport.cli import app
from agentport.cli._deeprefine import main as deeprefine_main
from agentport.core import Message
from agentport.policies import (
    Budget,
    BudgetAdapter,
    format_budget,
    merge_budgets,
    parse_budget,
    parse_duration,
)
from agentport.testing import Call, ScriptedAdapter
from agentport.workflows.deep_research import (
    Angle,
    Claim,
    Extract,
    Report,
    ResearchConfig,
    Scope,
    Search,
    SearchResult,
    plan_research,
    run_research,
    to_markdown,
)
from agentport.workflows.deeprefine import Layout, load_graph, plan_refine, run_loop, save_loop

runner = CliRunner()

# The seed's typical run, call for call: 5 angles x 3 sources x 2 claims; the top 25 claims
# get 3 votes each: 1 + 5 + 15 + 75 + 1 = 97 calls = plan_research().typical_calls.
PLANNED = plan_research(ResearchConfig()).typical_calls
HALF = PLANNED // 2


def _research_model(backend: str = "scripted") -> ScriptedAdapter:
    def search(call: Call) -> Search:
        a = angle_of(call)
        return Search(
            results=[
                SearchResult(url=f"http://{a}.example/{i}", title="t", relevance="high")
                for i in range(3)
            ]
        )

    def extract(call: Call) -> Extract:
        url = url_of(call)
        return Extract.model_validate(
            {
                "sourceQuality": "primary",
                "claims": [
                    Claim(claim=f"C{i}-{url}", quote=f"q{i}", importance="central")
                    for i in range(2)
                ],
            }
        )

    llm = ScriptedAdapter(backend=backend)
    angles = [Angle(label=f"a{i}", query=f"q{i}") for i in range(5)]
    llm.add(Scope(question="Q", summary="s", angles=angles), label="scope")
    llm.add(search, label="search")
    llm.add(extract, label="extract")
    llm.add(PASS, label="verify")
    llm.add(
        Report.model_validate(
            {
                "summary": "the sources agree on C0",
                "findings": [
                    {
                        "claim": "C0-http://a0.example/0",
                        "confidence": "high",
                        "sources": ["http://a0.example/0"],
                        "evidence": "q0",
                    }
                ],
                "caveats": "none",
                "openQuestions": [],
            }
        ),
        label="synthesis",
    )
    return llm


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config = tmp_path / "agentport-config.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("AGENTPORT_CONFIG_FILE", str(config))
    monkeypatch.chdir(tmp_path)
    return config


def _use(monkeypatch: pytest.MonkeyPatch, llm: ScriptedAdapter) -> None:
    # the fake stands in for a backend with web tools (codex): the CLI checks the catalog
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *a, **k: llm)


def _check_partial_report(data: dict[str, Any], calls: int) -> None:
    assert data["budgetReached"] == f"calls {calls}/{calls}"
    assert data["stats"]["agentCallsMade"] == calls
    assert data["stats"]["callsRefusedBudget"] > 0
    verified = data["claims"]
    assert verified, "the claims verified before the ceiling are in the report"
    assert all(c["validVotes"] >= 2 for c in verified)  # each settled by its own votes
    assert data["notVerified"], "the rest is listed as not verified (budget)"
    assert data["stats"]["notVerifiedBudget"] == len(data["notVerified"])
    # every extracted claim once: verified, or not verified (budget or MAX_VERIFY_CLAIMS)
    assert len(verified) + len(data["notVerified"]) == data["stats"]["claimsExtracted"]
    assert data["confirmed"] == [
        {
            "claim": c["claim"],
            "source": c["source"],
            "quote": c["quote"],
            "vote": c["vote"],
            "grounded": None,
        }
        for c in verified
    ]
    assert data["stats"]["synthesis"] == "skipped (budget reached)"
    assert data["summary"].startswith(f"Budget reached (calls {calls}/{calls}): partial report")


# ── deep research ────────────────────────────────────────────────────────────────────────


def test_research_cli_with_half_the_planned_calls_ends_partial_with_exit_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = _research_model(backend="codex")
    _use(monkeypatch, llm)
    result = runner.invoke(
        app, ["research", "Q?", "--backend", "codex", "--budget", f"calls={HALF}", "-q"]
    )
    assert result.exit_code == 3, result.output
    assert len(llm.calls) == HALF  # no call after the ceiling
    assert "synthesis" not in {c.label for c in llm.calls}
    markdown = result.stdout
    assert f"**Budget reached (calls {HALF}/{HALF}):** partial report" in markdown
    assert "## Verified claims" in markdown
    assert "## Not verified (budget)" in markdown
    assert "not verified (budget)" in markdown  # the status line
    assert result.stderr.strip().splitlines()[-1] == (
        f"agentport: budget reached (calls {HALF}/{HALF}): the report is partial"
    )


def test_research_cli_json_report_holds_everything_finished(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use(monkeypatch, _research_model(backend="codex"))
    out = tmp_path / "report.json"
    result = runner.invoke(
        app,
        ["research", "Q?", "-b", "codex", "--budget", f"calls={HALF}", "--json", "-o", str(out)],
    )
    assert result.exit_code == 3, result.output
    _check_partial_report(json.loads(out.read_text(encoding="utf-8")), HALF)


def test_a_partial_run_resumed_with_more_budget_replays_its_finished_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use(monkeypatch, _research_model(backend="codex"))
    first = runner.invoke(app, ["research", "Q?", "-b", "codex", "--budget", f"calls={HALF}"])
    assert first.exit_code == 3, first.output
    llm = _research_model(backend="codex")
    _use(monkeypatch, llm)
    second = runner.invoke(app, ["research", "Q?", "-b", "codex", "--resume", "--json"])
    assert second.exit_code == 0, second.output
    assert len(llm.calls) == PLANNED - HALF  # the finished calls replay free
    assert json.loads(second.stdout)["budgetReached"] is None


def test_research_without_a_budget_is_not_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = _research_model(backend="codex")
    _use(monkeypatch, llm)
    result = runner.invoke(app, ["research", "Q?", "-b", "codex", "--json", "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["budgetReached"] is None
    assert len(llm.calls) == PLANNED  # the scripted run is the plan's typical run


def test_research_library_budget_returns_a_partial_report() -> None:
    llm = _research_model()
    config = ResearchConfig(assume_web_tools=True)
    report_ = anyio.run(lambda: run_research("Q?", llm, config=config, budget=Budget(calls=HALF)))
    assert report_.partial
    assert report_.ok
    assert len(llm.calls) == HALF
    _check_partial_report(report_.model_dump(mode="json", by_alias=True), HALF)
    assert "## Not verified (budget)" in to_markdown(report_)


def test_research_library_accepts_a_budget_adapter_shared_by_runs() -> None:
    llm = _research_model()
    shared = BudgetAdapter(llm, Budget(calls=PLANNED + HALF))
    config = ResearchConfig(assume_web_tools=True)
    first = anyio.run(lambda: run_research("Q?", shared, config=config))
    second = anyio.run(lambda: run_research("Q?", shared, config=config))
    assert not first.partial
    assert second.partial
    assert second.budget_reached == f"calls {PLANNED + HALF}/{PLANNED + HALF}"
    assert len(llm.calls) == PLANNED + HALF


def test_research_budget_refusing_the_first_call_is_still_a_report() -> None:
    # an output-token ceiling reached by the scope call alone: nothing else is called
    llm = _research_model()
    config = ResearchConfig(assume_web_tools=True)
    out = anyio.run(lambda: run_research("Q?", llm, config=config, budget=Budget(output_tokens=1)))
    assert out.partial
    assert out.error is None
    assert [c.label for c in llm.calls] == ["scope"]
    assert "Budget reached (output_tokens" in to_markdown(out)


def test_research_wall_clock_ceiling_cancels_calls_in_flight() -> None:
    # every vote hangs far beyond the deadline: the run still ends, at the deadline, with the
    # sources and claims it finished (no timing asserted: the run simply has to end)
    llm = _research_model()
    llm.rules = [r for r in llm.rules if r.label != "verify"]
    llm.add(PASS, label="verify", delay_s=3600)
    config = ResearchConfig(assume_web_tools=True)
    out = anyio.run(lambda: run_research("Q?", llm, config=config, budget=Budget(deadline_s=1.5)))
    assert out.partial
    assert out.budget_reached is not None
    assert out.budget_reached.startswith("deadline_s")
    assert out.sources  # what was found before the deadline is kept
    assert out.claims == []
    assert out.not_verified
    assert len(out.not_verified) == out.stats["claimsExtracted"]


def test_research_budget_from_the_configuration(
    monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    isolated.write_text(f"[budget]\ncalls = {HALF}\n", encoding="utf-8")
    llm = _research_model(backend="codex")
    _use(monkeypatch, llm)
    result = runner.invoke(app, ["research", "Q?", "-b", "codex", "-q"])
    assert result.exit_code == 3, result.output
    assert len(llm.calls) == HALF
    # --budget wins key by key; `none` drops the configured budget for one run
    llm2 = _research_model(backend="codex")
    _use(monkeypatch, llm2)
    result = runner.invoke(app, ["research", "Q?", "-b", "codex", "-q", "--budget", "none"])
    assert result.exit_code == 0, result.output
    assert len(llm2.calls) == PLANNED


def test_an_untrusted_project_file_may_set_a_budget(tmp_path: Path) -> None:
    # a budget only lowers what a run spends: agentport.toml sets it without trust
    (tmp_path / "agentport.toml").write_text("[budget]\ncalls = 5\n", encoding="utf-8")
    result = runner.invoke(app, ["research", "Q", "--plan", "-b", "codex"])
    assert result.exit_code == 0, result.output
    assert "budget: calls=5" in result.stdout.splitlines()


def test_research_plan_shows_the_worst_case_against_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []
    monkeypatch.setattr(agentport.factory, "create_llm_adapter", lambda *a, **k: made.append(1))
    result = runner.invoke(
        app, ["research", "Q", "--plan", "-b", "codex", "--budget", f"calls={HALF},wall=10m"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"budget: calls={HALF},wall=10m" in lines
    assert (
        f"  calls: worst case 120 vs ceiling {HALF}: may stop early (typical 97: stops early)"
        in lines
    )
    assert "  wall: checked during the run" in lines
    assert lines[-1].startswith("plan may exceed the budget")
    fits = runner.invoke(app, ["research", "Q", "--plan", "-b", "codex", "--budget", "calls=200"])
    assert fits.stdout.splitlines()[-1] == "plan fits the budget"
    assert made == []  # no adapter, no call


# ── DeepRefine ───────────────────────────────────────────────────────────────────────────

TINY_Q = "How does run() call helper()?"


def _scripted_backend(config: Path, extra: str = "") -> None:
    config.write_text(
        f'[llm]\nbackend = "scripted"\n[llm.scripted]\ndefault = "<judge>No</judge>"\n{extra}',
        encoding="utf-8",
    )


def test_refine_cli_budget_keeps_the_trace_and_never_applies(
    tmp_path: Path, isolated: Path
) -> None:
    _scripted_backend(isolated)
    graph = write_tiny(tmp_path)
    before = graph.read_bytes()
    result = runner.invoke(
        app, ["refine", TINY_Q, "--graph", str(graph), "--budget", "calls=2", "--apply", "--yes"]
    )
    assert result.exit_code == 3, result.output
    assert graph.read_bytes() == before  # byte for byte
    state = graph.parent / ".deeprefine"
    partial = list(state.glob("loop_trace_*.partial.json"))
    assert len(partial) == 1
    assert not list(state.glob("refinement_actions_*"))
    assert not list(state.glob("*.bak"))
    trace = json.loads(partial[0].read_text(encoding="utf-8"))
    assert trace["budget_reached"] == "calls 2/2"
    assert [s["answerable"] for s in trace["interaction_history"]] == [False, False]
    assert "Budget reached: no action file, graph.json was not modified." in result.stdout
    assert "budget reached (calls 2/2)" in result.stderr


def test_refine_budget_from_config_on_the_deeprefine_script(
    tmp_path: Path, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _scripted_backend(isolated, "[budget]\ncalls = 3\n")
    graph = write_tiny(tmp_path)
    before = graph.read_bytes()
    code = deeprefine_main(
        ["refine", "--query", TINY_Q, "--apply", "--project-root", str(tmp_path)]
    )
    assert code == 3
    assert graph.read_bytes() == before
    trace = next((graph.parent / ".deeprefine").glob("loop_trace_*.partial.json"))
    assert len(json.loads(trace.read_text(encoding="utf-8"))["interaction_history"]) == 3
    assert "budget reached (calls 3/3)" in capsys.readouterr().err


def test_refine_library_budget_returns_the_trace_so_far(tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    llm = ScriptedAdapter(default="<judge>No</judge>")
    result = anyio.run(lambda: run_loop(llm, graph, TINY_Q, budget=Budget(calls=1))).unwrap()
    assert result.budget_reached == "calls 1/1"
    assert len(result.trace["interaction_history"]) == 1
    assert result.refinement is None
    assert not result.early_exit
    assert len(llm.calls) == 1
    # whoever saves it (the MCP tool, a script) gets the partial trace and no action file
    trace_path, actions = save_loop(Layout.for_graph(graph.path), result)
    assert actions is None
    assert trace_path.name.endswith(".partial.json")
    assert not list(trace_path.parent.glob("refinement_actions_*"))


def test_refine_wall_clock_ceiling_cancels_the_call_in_flight(tmp_path: Path) -> None:
    graph = load_graph(write_tiny(tmp_path))
    llm = ScriptedAdapter().add("<judge>No</judge>", label="judge", delay_s=3600)
    result = anyio.run(lambda: run_loop(llm, graph, TINY_Q, budget=Budget(deadline_s=0.5)))
    loop = result.unwrap()
    assert loop.budget_reached is not None
    assert loop.budget_reached.startswith("deadline_s")
    assert loop.trace["interaction_history"] == []


def test_refine_plan_shows_the_worst_case_against_the_budget() -> None:
    worst = plan_refine()
    result = runner.invoke(app, ["refine", TINY_Q, "--plan", "--budget", "calls=6"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"model calls: at most {worst.upper_bound_calls} (typical 6) per question" in lines
    assert lines[lines.index("budget: calls=6") + 1].startswith(
        f"  calls: worst case {worst.upper_bound_calls} vs ceiling 6: may stop early"
    )
    ok = runner.invoke(
        app, ["refine", TINY_Q, "--plan", "--budget", "calls=100,output_tokens=99999"]
    )
    assert ok.stdout.splitlines()[-1] == "plan fits the budget"


# ── bad input: one line naming the flag or the config field ──────────────────────────────


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("calls=0", "--budget: calls: must be > 0 (got '0')"),
        ("usd=-1", "--budget: usd: must be > 0 (got '-1')"),
        ("wall=0s", "--budget: wall: must be > 0 (got '0s')"),
        ("callz=3", "--budget: unknown budget key 'callz'; did you mean 'calls'?"),
        ("calls", "--budget: malformed 'calls'; expected key=value"),
        ("calls=1.5", "--budget: calls: must be a whole number (got '1.5')"),
        ("calls=2,calls=3", "--budget: calls: given twice"),
        ("wall=soon", "--budget: wall: not a duration: 'soon'"),
    ],
)
@pytest.mark.parametrize("command", ["research", "refine"])
def test_bad_budget_spec_is_one_line_exit_2(command: str, spec: str, message: str) -> None:
    result = runner.invoke(app, [command, "Q", "--plan", "--budget", spec])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Traceback" not in result.output
    assert lines[0].startswith(f"agentport: {message}")


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ("calls = 0", "budget.calls"),
        ("usd = -0.5", "budget.usd"),
        ('wall = "never"', "budget.wall"),
        ("cals = 3", "unknown budget key 'cals'; did you mean 'calls'?"),
    ],
)
def test_bad_budget_table_is_one_line_naming_file_and_field(
    isolated: Path, table: str, field: str
) -> None:
    isolated.write_text(f"[budget]\n{table}\n", encoding="utf-8")
    result = runner.invoke(app, ["research", "Q", "--plan"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(isolated) in lines[0]
    assert field in lines[0]


def test_deeprefine_script_bad_budget_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert deeprefine_main(["refine", "--query", "Q", "--budget", "calls=-2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["deeprefine: --budget: calls: must be > 0 (got '-2')"]


def test_help_documents_the_partial_exit_code() -> None:
    for command in ("research", "refine"):
        text = " ".join(runner.invoke(app, [command, "--help"]).stdout.split())
        assert "3 partial" in text
        assert "--budget" in text
        assert "[budget]" in text


# ── the pure arithmetic ──────────────────────────────────────────────────────────────────

_counts = st.none() | st.integers(min_value=1, max_value=10**9)
_amounts = st.none() | st.floats(min_value=1e-6, max_value=1e6, allow_nan=False)
_budgets = st.builds(
    Budget,
    calls=_counts,
    input_tokens=_counts,
    output_tokens=_counts,
    cost_usd=_amounts,
    deadline_s=_amounts,
)


@given(_budgets)
def test_a_budget_spec_reads_back_exactly(budget: Budget) -> None:
    spec = format_budget(budget)
    back = parse_budget(spec)
    if all(v is None for v in (budget.calls, budget.input_tokens, budget.output_tokens,
                               budget.cost_usd, budget.deadline_s)):  # fmt: skip
        assert spec == "none"
        assert back is None
    else:
        assert back == budget


@given(_budgets, _budgets)
def test_merging_takes_each_ceiling_from_the_override_first(base: Budget, over: Budget) -> None:
    merged = merge_budgets(base, over)
    assert merged is not None
    for name in ("calls", "input_tokens", "output_tokens", "cost_usd", "deadline_s"):
        want = getattr(over, name) if getattr(over, name) is not None else getattr(base, name)
        assert getattr(merged, name) == want


@given(st.integers(0, 3), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_durations_add_their_parts(d: int, h: int, m: int, s: int) -> None:
    total = d * 86400 + h * 3600 + m * 60 + s
    text = "".join(f"{v}{u}" for v, u in ((d, "d"), (h, "h"), (m, "m"), (s, "s")) if v)
    if total == 0:
        with pytest.raises(ValueError, match="must be > 0"):
            parse_duration(text or "0")
    else:
        assert parse_duration(text) == total
        assert math.isclose(parse_duration(str(total)), total)


def test_a_call_still_running_at_the_deadline_is_cancelled_and_typed() -> None:
    # an adapter that ignores its total_timeout_s: the budget cancels it at the deadline
    llm = ScriptedAdapter().add("late", delay_s=3600)
    budgeted = BudgetAdapter(llm, Budget(deadline_s=0.2))
    result = anyio.run(lambda: budgeted.complete([Message.user("hi")]))
    error = result.failure()
    assert error.kind.value == "budget_exhausted"
    assert error.details["cut"] is True
    assert not error.retryable


@given(st.lists(st.sampled_from([0, 1, 2, 3, 4]), max_size=6))
def test_a_partial_run_never_hides_a_failure(codes: list[int]) -> None:
    from agentport.cli._budget import PARTIAL_EXIT, combined_exit

    code = combined_exit(codes)
    failures = [c for c in codes if c not in (0, PARTIAL_EXIT)]
    if failures:
        assert code == max(failures)
    elif PARTIAL_EXIT in codes:
        assert code == PARTIAL_EXIT
    else:
        assert code == 0
