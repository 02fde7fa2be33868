"""The research result (`ResearchReport`), progress events, and the renderers.

The JSON shape follows the original workflow's final result:
question, summary, findings, caveats, openQuestions, refuted, unverified, sources, stats,
with camelCase keys; agentport adds `claims` (every verified claim with quote, votes and
outcome), `confirmed` (salvaged claims when synthesis fails), `error` and `warnings`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ...core import redact
from ._schemas import Finding, _Wire

__all__ = [
    "ClaimEntry",
    "ConfirmedEntry",
    "RefutedEntry",
    "ResearchEvent",
    "ResearchReport",
    "SetAsideEntry",
    "SourceEntry",
    "UnverifiedEntry",
    "to_json",
    "to_markdown",
]

Phase = Literal["scope", "search", "extract", "verify", "synthesis"]


@dataclass(frozen=True, slots=True)
class ResearchEvent:
    """One progress event for `on_event` callbacks.

    Attributes:
        kind: `phase` (a phase starts), `call_started`, `call_finished`, or `note`.
        phase: scope / search / extract / verify / synthesis (or "" for notes).
        ok: False when the call failed (the message says why).
        cached: True when the call was replayed from the resume cache.
        message: one human line.
        done: agent calls finished so far (replayed ones included).
        expected: current estimate of the run's total agent calls.
        raw: the model's raw answer on `call_finished` (empty when there was none), for
            `--debug`.
    """

    kind: Literal["phase", "call_started", "call_finished", "note"]
    phase: str
    ok: bool = True
    cached: bool = False
    message: str = ""
    done: int = 0
    expected: int = 0
    raw: str = ""


class SourceEntry(_Wire):
    """A fetched source: url, title, quality, the angle that found it, its claim count, its
    `section` ("document › heading", small-model mode), and the failure when extraction
    failed (so "blocked" differs from "empty")."""

    url: str
    title: str = ""
    quality: str
    angle: str
    claim_count: int = Field(alias="claimCount")
    section: str = ""  # corpus mode: "document › heading", where a reader finds it
    publish_date: str | None = Field(default=None, alias="publishDate")
    error: str | None = None
    mirrors: list[str] = Field(default_factory=list)


class ClaimEntry(_Wire):
    """A verified claim: text, supporting quote, source, votes and three-state outcome.

    `grounded` is True/False when the quote was checked against the source text (corpus
    mode, and web mode on agentport's own web tools) and None when it could not be (web
    mode on the backend's own web tools).
    """

    claim: str
    quote: str
    source: str
    source_quality: str = Field(alias="sourceQuality")
    importance: str
    outcome: Literal["confirmed", "refuted", "unverified"]
    vote: str
    valid_votes: int = Field(alias="validVotes")
    refuted_votes: int = Field(alias="refutedVotes")
    abstained: int
    skipped: int = 0
    grounded: bool | None = None
    evidence: list[str] = Field(default_factory=list)


class RefutedEntry(_Wire):
    claim: str
    vote: str
    source: str


class UnverifiedEntry(_Wire):
    claim: str
    errored_votes: int = Field(alias="erroredVotes")
    valid_votes: int = Field(alias="validVotes")
    source: str


class ConfirmedEntry(_Wire):
    claim: str
    source: str
    quote: str
    vote: str
    grounded: bool | None = None


class SetAsideEntry(_Wire):
    """A claim that was not voted on: cut by the verification budget (`notVerified`), or
    whose quote was not found in its source (`ungrounded`, corpus mode)."""

    claim: str
    quote: str
    source: str


class ResearchReport(_Wire):
    """The result of `run_research`. `error` is set (one line) when the run could not
    produce findings at all (empty question, scope failure, bad corpus, no web tools); the
    other fields then hold whatever was salvaged. `budget_reached` is set when the run's
    budget stopped it: a partial report (verified claims, the rest "not verified (budget)")."""

    question: str
    mode: Literal["web", "corpus"] = "web"
    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    caveats: str = ""
    open_questions: list[str] = Field(default_factory=list, alias="openQuestions")
    claims: list[ClaimEntry] = Field(default_factory=list)
    confirmed: list[ConfirmedEntry] = Field(default_factory=list)
    refuted: list[RefutedEntry] = Field(default_factory=list)
    unverified: list[UnverifiedEntry] = Field(default_factory=list)
    not_verified: list[SetAsideEntry] = Field(default_factory=list, alias="notVerified")
    ungrounded: list[SetAsideEntry] = Field(default_factory=list)
    sources: list[SourceEntry] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    budget_reached: str | None = Field(default=None, alias="budgetReached")

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def partial(self) -> bool:
        """True when the run's budget stopped it (`budget_reached` names the ceiling, e.g.
        "calls 40/40"): the report holds what was finished before."""
        return self.budget_reached is not None


# what the two call counts mean: the seed's formula against `--plan`'s bound
_STATS_NOTE = (
    "`agentCalls` is the original workflow's formula (1 + angles + sources + voted claims x "
    "votes + 1), kept for its readers; `agentCallsMade` counts the calls this run made, and is "
    'what `--plan`\'s "at most" bounds.'
)


def to_json(report: ResearchReport) -> str:
    """The report as indented JSON with camelCase keys."""
    # secrets (a key a provider echoed into a warning or claim) never reach a report
    return redact(json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2))


def _md(text: str) -> str:
    # Model- and web-derived text is untrusted: keep it on its own lines, no raw HTML.
    return text.replace("<", "&lt;").strip()


def _grounding(flags: list[bool | None]) -> str:
    if any(g is False for g in flags):
        return "quote NOT found in source"
    if flags and all(g is True for g in flags):
        return "quote found in source"
    return "quote not checked against the source"


def status_line(report: ResearchReport) -> str:
    """One line for the top of a report: claims per outcome, the grounding of the confirmed
    ones beside their count, and the claims set aside (budget, quote not found)."""
    outcomes = [c.outcome for c in report.claims]
    confirmed = [c.grounded for c in report.claims if c.outcome == "confirmed"]
    parts = [f"{len(confirmed)} confirmed"]
    if confirmed:
        found = sum(1 for g in confirmed if g is True)
        if found == len(confirmed):
            parts[0] += " (every quote found in its source)"
        elif any(g is False for g in confirmed):
            parts[0] += f" ({len(confirmed) - found} quote(s) NOT found in source)"
        else:
            parts[0] += " (quotes not checked against the sources: web mode)"
    parts += [f"{outcomes.count('refuted')} refuted", f"{outcomes.count('unverified')} unverified"]
    if report.not_verified:  # a run budget stopped it, or the seed's cap on verified claims
        why = "budget" if report.budget_reached else "cap: MAX_VERIFY_CLAIMS"
        parts.append(f"{len(report.not_verified)} not verified ({why})")
    if report.ungrounded:
        parts.append(f"{len(report.ungrounded)} set aside (quote not found in source)")
    if synthesis := report.stats.get("synthesis"):
        parts.append(f"synthesis: {synthesis}")
    return " · ".join(parts)


def to_markdown(report: ResearchReport) -> str:
    """A readable report: summary, findings, verified claims with quotes and votes,
    caveats, open questions, refuted and unverified claims, sources, stats.
    The original's markdown report, extended with claims, unverified and sources."""
    lines = ["# Deep Research", "", "**Question:** " + _md(report.question), ""]
    if report.error:
        lines += ["**Error:** " + report.error, ""]
    if report.budget_reached:
        lines += [f"**Budget reached ({report.budget_reached}):** partial report", ""]
    if report.claims or report.not_verified or report.ungrounded:
        lines += ["**Status:** " + status_line(report), ""]
    if report.summary:
        lines += ["## Summary", _md(report.summary), ""]
    # a passage is named by its section, else its page's title: never by its number alone
    named = {s.url: s.section or s.title for s in report.sources if s.section or s.title}
    if report.findings:
        lines.append("## Findings")
        for i, f in enumerate(report.findings, 1):
            vote = f" · vote {f.vote}" if f.vote else ""
            grounding = _grounding([c.grounded for c in report.claims if c.source in f.sources])
            lines += [
                f"### {i}. {_md(f.claim)} _({f.confidence}{vote} · {grounding})_",
                _md(f.evidence),
                "Sources: "
                + ", ".join(f"{_md(named[u])} ({u})" if u in named else u for u in f.sources),
                "",
            ]
    if report.confirmed:
        lines.append("## Confirmed claims (unmerged)")
        for kept in report.confirmed:
            lines.append(
                f"- {_md(kept.claim)} — vote {kept.vote}, {_grounding([kept.grounded])}, "
                f'{kept.source}\n  > "{_md(kept.quote)}"'
            )
        lines.append("")
    if report.caveats:
        lines += ["## Caveats", _md(report.caveats), ""]
    if report.open_questions:
        lines += ["## Open Questions", *(f"- {_md(q)}" for q in report.open_questions), ""]
    if report.claims:
        lines += ["## Verified claims", *_verified(report, named), ""]
    if report.refuted:
        lines.append("## Refuted (transparency)")
        lines += [f'- "{_md(r.claim)}" (vote {r.vote}, {r.source})' for r in report.refuted]
        lines.append("")
    if report.unverified:
        lines.append("## Unverified (too few valid votes — not refuted)")
        lines += [
            f'- "{_md(u.claim)}" ({u.valid_votes} valid, {u.errored_votes} failed, {u.source})'
            for u in report.unverified
        ]
        lines.append("")
    if report.not_verified:
        lines.append("## Not verified (budget) — no vote settled them")
        lines += [f'- "{_md(c.claim)}" ({c.source})' for c in report.not_verified]
        lines.append("")
    if report.ungrounded:
        lines.append("## Quotes not found in their source — set aside, never voted on")
        lines += [
            f'- {_md(c.claim)}\n  > "{_md(c.quote)}"\n  — {c.source}' for c in report.ungrounded
        ]
        lines.append("")
    if report.sources:
        lines.append("## Sources")
        for s in report.sources:
            status = f" — extraction failed: {s.error}" if s.error else ""
            mirrors = f"; also at {', '.join(s.mirrors)}" if s.mirrors else ""
            name = f"{_md(s.section or s.title)}: " if s.section or s.title else ""
            lines.append(
                f"- {name}{s.url} ({s.quality}, {s.claim_count} claim(s), via {_md(s.angle)}"
                f"{mirrors}){status}"
            )
        lines.append("")
    if report.warnings:
        lines += ["## Warnings", *(f"- {_md(w)}" for w in report.warnings), ""]
    lines += ["## Stats", "", _STATS_NOTE, ""]
    lines += ["```json", json.dumps(report.stats, ensure_ascii=False, indent=2), "```"]
    return redact("\n".join(lines) + "\n")


def _verified(report: ResearchReport, named: dict[str, str]) -> list[str]:
    """The "Verified claims" lines: each claim's outcome, vote and quote; a claim the
    findings already state is named, not repeated word for word."""
    out: list[str] = []
    found = {f.claim: i for i, f in enumerate(report.findings, 1)}
    for c in report.claims:
        flag = " · quote NOT found in source" if c.grounded is False else ""
        where = f"{c.source} ({_md(named[c.source])}, " if c.source in named else c.source + " ("
        # a claim the findings already state is named, not repeated word for word
        if c.claim in found:
            quoted = f'\n  > "{_md(c.quote)}"' if c.quote != c.claim else ""
            text = f"Finding {found[c.claim]}{quoted}"
        elif c.claim == c.quote:
            text = f'\n  > "{_md(c.quote)}"'
        else:
            text = f'{_md(c.claim)}\n  > "{_md(c.quote)}"'
        sep = "" if text.startswith("\n") else " "
        out.append(
            f"- **{c.outcome}** (vote {c.vote}, {c.abstained} abstained{flag}):"
            f"{sep}{text}\n  — {where}{c.source_quality})"
        )
    return out
