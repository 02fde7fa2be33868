"""After the votes: the report's claim lists, the summaries when nothing survives, and
synthesis with its honesty checks (seed path: degenerate answers retried once, then
replaced by the confirmed claims; small-model path: `_small.run_synthesis`).

If synthesis fails, the confirmed claims are returned unmerged with their quotes and votes;
if nothing survives, one of the three summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _prompts as prompts
from ._core import build_synth_blocks, build_unverified_block, norm_url, vote_str
from ._honesty import synthesis_problem
from ._report import (
    ClaimEntry,
    ConfirmedEntry,
    RefutedEntry,
    SetAsideEntry,
    UnverifiedEntry,
)
from ._run import Record, Run, cap
from ._schemas import Finding, Report
from ._small_report import run_synthesis
from ._small_votes import unsure

__all__ = [
    "budget_block",
    "claim_entry",
    "claim_lists",
    "nothing_confirmed_summary",
    "salvage",
    "set_aside",
    "synthesize",
]


def claim_entry(c: Record) -> ClaimEntry:
    return ClaimEntry.model_validate(
        {
            "claim": c["claim"],
            "quote": c["quote"],
            "source": c["sourceUrl"],
            "sourceQuality": c["sourceQuality"],
            "importance": c["importance"],
            "outcome": c["outcome"],
            "vote": vote_str(c),
            "validVotes": len(c["valid"]),
            "refutedVotes": c["refutedVotes"],
            "abstained": c["abstained"],
            "skipped": c["skipped"],
            "grounded": c.get("grounded"),
            "evidence": [v["evidence"] for v in c["valid"]],
        }
    )


def set_aside(claims: Sequence[Record]) -> list[SetAsideEntry]:
    return [
        SetAsideEntry(claim=c["claim"], quote=c["quote"], source=c["sourceUrl"]) for c in claims
    ]


def claim_lists(voted: Sequence[Record]) -> dict[str, Any]:
    """`claims`, `refuted` and `unverified` of the report."""
    return {
        "claims": [claim_entry(c) for c in voted],
        "refuted": [
            RefutedEntry(claim=c["claim"], vote=vote_str(c), source=c["sourceUrl"])
            for c in voted
            if c["outcome"] == "refuted"
        ],
        "unverified": [
            UnverifiedEntry.model_validate(
                {
                    "claim": c["claim"],
                    "erroredVotes": c["abstained"],
                    "validVotes": len(c["valid"]),
                    "source": c["sourceUrl"],
                }
            )
            for c in voted
            if c["outcome"] == "unverified"
        ],
    }


def nothing_confirmed_summary(voted: Sequence[Record]) -> str:
    killed = sum(1 for c in voted if c["outcome"] == "refuted")
    unverified = sum(1 for c in voted if c["outcome"] == "unverified")
    if not killed:
        return (
            f"All {len(voted)} verifier panels failed to reach a quorum of valid votes — "
            "an infrastructure failure, not a finding; the claims are unverified, "
            "not refuted."
        )
    if unverified:
        return (
            f"No claim survived: {killed} refuted and {unverified} unverified "
            "(too few valid votes). Research inconclusive."
        )
    return f"All {len(voted)} claims refuted by adversarial verification. Research inconclusive."


def budget_block(cut: Sequence[Record], max_field_chars: int | None) -> str:
    """Tells synthesis which claims the verification budget cut (they are not findings)."""
    if not cut:
        return ""
    lines = [f'- "{cap(c["claim"], max_field_chars)}" ({c["sourceUrl"]})' for c in cut]
    return (
        "\n## Not verified (budget) — never voted on; do not present them as findings\n"
        + "\n".join(lines)
    )


def model_unsure(run: Run, claim: Record) -> bool:
    """True when small-model mode states *claim* although the model could not verify it:
    the votes were scored and the model was unsure (`_small_votes.unsure`)."""
    return run.config.small_model and run.scored_votes > 0 and unsure(claim)


def salvage(confirmed: Sequence[Record]) -> list[ConfirmedEntry]:
    return [
        ConfirmedEntry(
            claim=c["claim"],
            source=c["sourceUrl"],
            quote=c["quote"],
            vote=vote_str(c),
            grounded=c.get("grounded"),
        )
        for c in confirmed
    ]


def _bind(run: Run, report: Report, fetched: dict[str, str]) -> tuple[list[Finding], int]:
    # Citations are bound to fetched sources: a URL the synthesis made up is dropped
    # (open_deep_research#186, gpt-researcher#1276: corrupted or invented references).
    findings = []
    unbound = 0
    for finding in report.findings:
        bound = [fetched[norm_url(u)] for u in finding.sources if norm_url(u) in fetched]
        unbound += len(finding.sources) - len(bound)
        findings.append(finding.model_copy(update={"sources": list(dict.fromkeys(bound))}))
    if unbound:
        run.warn(f"synthesis cited {unbound} source(s) that were never fetched; dropped them")
    return findings, unbound


async def synthesize(
    q: str,
    run: Run,
    voted: Sequence[Record],
    cut: Sequence[Record],
    fetched_urls: Sequence[str],
) -> dict[str, Any]:
    """Report fields from synthesis (summary, findings, caveats, openQuestions or the
    salvaged `confirmed`) plus `stats` additions (`afterSynthesis`, `unboundCitations`,
    `synthesis` = the status)."""
    cfg = run.config
    confirmed = [c for c in voted if c["outcome"] == "confirmed"]
    killed = [c for c in voted if c["outcome"] == "refuted"]
    unverified = [c for c in voted if c["outcome"] == "unverified"]
    run.emit("phase", "synthesis", message=f"{len(confirmed)} confirmed claims")
    if cfg.small_model:
        stated = [c for c in voted if c["outcome"] == "confirmed" or model_unsure(run, c)]
        report, status = await run_synthesis(q, run, stated, read=len(fetched_urls))
        return {
            "summary": report.summary,
            "findings": report.findings,
            "caveats": report.caveats,
            "stats": {"afterSynthesis": len(report.findings), "synthesis": status},
        }
    block, killed_block = build_synth_blocks(confirmed, killed, max_field_chars=cfg.max_field_chars)
    killed_block += build_unverified_block(unverified, max_field_chars=cfg.max_field_chars)
    killed_block += budget_block(cut, cfg.max_field_chars)
    prompt = prompts.synth_prompt(q, block, killed_block, len(confirmed), cfg.VOTES_PER_CLAIM)
    fetched = {norm_url(u): u for u in fetched_urls}
    problem = ""
    for attempt in range(2):
        asked = prompt
        if attempt:
            asked += (
                f"\n\nYour previous answer was rejected: {problem}. Summarise the confirmed "
                "claims above and cite only their source URLs."
            )
        answer = await run.agent("synthesis", asked, Report, attempt=attempt)
        if answer is None:
            break  # a failed call is salvaged (the seed), not retried
        report = answer
        found = synthesis_problem(report, q, confirmed, fetched_urls)
        if found is None:
            findings, unbound = _bind(run, report, fetched)
            return {
                "summary": report.summary,
                "findings": findings,
                "caveats": report.caveats,
                "open_questions": list(report.open_questions or []),
                "stats": {
                    "afterSynthesis": len(report.findings),
                    "unboundCitations": unbound,
                    "synthesis": "model" + (" (retried)" if attempt else ""),
                },
            }
        problem = found
        run.warn(f"synthesis answer {attempt + 1} was degenerate: {found}")
    if not problem:
        summary = (
            "Synthesis step was skipped or failed — returning "
            f"{len(confirmed)} verified claims unmerged."
        )
        status = "failed"
    else:
        summary = (
            f"Synthesis was degenerate twice ({problem}) — returning "
            f"{len(confirmed)} verified claims unmerged."
        )
        status = "replaced by the confirmed claims"
    return {
        "summary": summary,
        "confirmed": salvage(confirmed),
        "stats": {"afterSynthesis": 0, "synthesis": status},
    }
