"""A neutral transcript of an agent session and the bounded briefing another backend
continues it from (pure: no I/O).

`Transcript` is what any backend's conversation reduces to: the turns (user and assistant
text, tool calls and results), the working folder, the open question. `brief` renders it
for a new backend within a token budget: the open question always, then the newest turns
that fit, every text redacted (`core._redact`), tool calls and results in short form; a part
left out is named in `Briefing.warnings`, never dropped in silence.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ._protocols import AgentEvent, EventType
from ._redact import redact

__all__ = [
    "DEFAULT_BRIEFING_TOKENS",
    "MIN_BRIEFING_TOKENS",
    "Briefing",
    "Transcript",
    "Turn",
    "TurnKind",
    "brief",
    "estimate_tokens",
]

#: the default bound of a briefing, in (estimated) tokens: what apps that hand a
#: conversation over by hand settle on, "a few thousand"
DEFAULT_BRIEFING_TOKENS = 3000
#: the smallest bound `brief` accepts: the frame and a cut open question must fit
MIN_BRIEFING_TOKENS = 300
#: characters a tool call's arguments or a tool result keeps in the short form
TOOL_CHARS = 300


def estimate_tokens(text: str) -> int:
    """An upper estimate of *text*'s tokens without a tokenizer: one per 3 bytes of UTF-8
    (BPE vocabularies average about 4 bytes per token on English and code; 3 keeps a bound
    stated in these units conservative). Pass a real tokenizer's count to `brief` instead
    where one is at hand."""
    return math.ceil(len(text.encode("utf-8")) / 3)


class TurnKind(enum.StrEnum):
    user = "user"
    assistant = "assistant"
    tool_call = "tool_call"
    tool_result = "tool_result"


_LABEL = {
    TurnKind.user: "User",
    TurnKind.assistant: "Assistant",
    TurnKind.tool_call: "Tool call",
    TurnKind.tool_result: "Tool result",
}


@dataclass(frozen=True, slots=True)
class Turn:
    """One step of a conversation: `kind`, its `text` (a tool call's arguments as JSON, a
    tool result's output) and, for tools, the tool's `name`."""

    kind: TurnKind
    text: str
    name: str | None = None

    def line(self, tool_chars: int = TOOL_CHARS) -> str:
        """This turn as one briefing line: tools in short form (their first *tool_chars*
        characters, then how many were left out)."""
        text = " ".join(self.text.split()) if self.kind in _TOOLS else self.text.strip()
        if self.kind in _TOOLS and len(text) > tool_chars:
            text = f"{text[:tool_chars]}… [{len(text) - tool_chars} more chars]"
        label = _LABEL[self.kind] + (f" {self.name}" if self.name else "")
        return f"{label}: {text}"


_TOOLS = frozenset({TurnKind.tool_call, TurnKind.tool_result})


@dataclass(frozen=True, slots=True)
class Transcript:
    """A neutral record of one agent session, oldest turn first.

    Attributes:
        turns: the conversation (`Turn`s).
        cwd: the working folder the agent worked in, or None.
        open_question: what is still to be answered (the prompt of the turn that failed, or
            the next question), or None: then the last user turn is taken as the open one.
        backend: the backend the session ran on ("" when unknown).
        session_id: its session id there, or None.
    """

    turns: tuple[Turn, ...] = ()
    cwd: str | None = None
    open_question: str | None = None
    backend: str = ""
    session_id: str | None = None

    def with_turn(self, prompt: str, events: Iterable[AgentEvent]) -> Transcript:
        """This transcript and one more turn: the user's *prompt*, then what the agent's
        *events* said (text and final answers, tool calls and results; an error leaves
        the prompt open as `open_question`)."""
        added = [Turn(TurnKind.user, prompt)]
        answer: list[str] = []
        failed = False
        for event in events:
            if event.type is EventType.text and event.content:
                answer.append(event.content)
            elif event.type in (EventType.tool_call, EventType.tool_result):
                if answer:
                    added.append(Turn(TurnKind.assistant, "".join(answer)))
                    answer = []
                added.append(_tool_turn(event))
            elif event.type is EventType.final and event.content and not answer:
                answer.append(event.content)
            elif event.type is EventType.error:
                failed = True
            if event.metadata.get("session_id"):
                self = replace(self, session_id=str(event.metadata["session_id"]))
        if answer:
            added.append(Turn(TurnKind.assistant, "".join(answer)))
        return replace(
            self,
            turns=self.turns + tuple(added),
            open_question=prompt if failed else None,
        )

    @property
    def question(self) -> str:
        """The open question: `open_question`, else the last user turn, else ""."""
        if self.open_question is not None:
            return self.open_question
        last = next((t for t in reversed(self.turns) if t.kind is TurnKind.user), None)
        return last.text if last is not None else ""


def _tool_turn(event: AgentEvent) -> Turn:
    """A tool event as a turn: a call's content is the tool's name (the decoders'
    convention) and its arguments are `metadata["input"]`; a result's content is its output."""
    if event.type is EventType.tool_call:
        args = event.metadata.get("input")
        text = "" if args is None else json.dumps(args, ensure_ascii=False, default=str)
        return Turn(TurnKind.tool_call, text, event.content or None)
    name = event.metadata.get("tool")
    return Turn(TurnKind.tool_result, event.content, str(name) if name else None)


@dataclass(frozen=True, slots=True)
class Briefing:
    """What a new backend is told to continue a conversation (`brief`).

    Attributes:
        text: the briefing, redacted, at most `max_tokens` by the count it was built with.
        tokens: its count.
        kept: how many of the transcript's turns it carries (the newest ones).
        dropped: how many older turns did not fit.
        warnings: one line per part left out or cut (the older turns, a cut turn, a cut
            open question); empty when everything fit.
    """

    text: str
    tokens: int
    kept: int
    dropped: int
    warnings: tuple[str, ...] = field(default=())


def brief(
    transcript: Transcript,
    *,
    max_tokens: int = DEFAULT_BRIEFING_TOKENS,
    count: Callable[[str], int] = estimate_tokens,
    tool_chars: int = TOOL_CHARS,
) -> Briefing:
    """The bounded briefing of *transcript* for another backend.

    The frame (where the conversation comes from, the working folder) and the open question
    always come first and last; the question is cut to half of *max_tokens* when longer.
    Between them, the newest turns that fit in what is left, oldest of them first: a turn
    that does not fit ends the filling, and everything older is named in a warning; only the
    newest turn, when not even it fits, is cut instead. Every text is redacted before it is
    counted. *count* is the token counter (`estimate_tokens` unless given); *max_tokens* is
    an `int >= MIN_BRIEFING_TOKENS`, else `ValueError`.
    """
    if max_tokens < MIN_BRIEFING_TOKENS:
        raise ValueError(f"max_tokens must be >= {MIN_BRIEFING_TOKENS} (got {max_tokens})")
    warnings: list[str] = []
    head = _head(transcript, max_tokens, count)
    total = len(transcript.turns)
    # room for the worst-case omission line, so adding it cannot break the bound
    frame = head + _omitted(total, total) + "\n## Conversation so far\n" + _tail(_NO_QUESTION)
    question = redact(transcript.question.strip())
    cut_question = _fit(question, min(max_tokens // 2, max_tokens - count(frame)), count)
    if cut_question != question:
        warnings.append(
            f"the open question was cut to its first {len(cut_question)} of "
            f"{len(question)} characters to fit max_tokens={max_tokens}"
        )
    tail = _tail(cut_question or _NO_QUESTION)
    fixed = count(head + _omitted(total, total) + "\n## Conversation so far\n" + tail)
    room = max_tokens - fixed
    lines: list[str] = []
    for turn in reversed(transcript.turns):
        line = redact(turn.line(tool_chars))
        need = count(line + "\n")
        if need <= room:
            lines.append(line)
            room -= need
            continue
        if not lines and room > 0:  # the newest turn alone is too long: cut it, say so
            cut = _fit(line, room, count, suffix="\n")
            if cut:
                lines.append(cut)
                warnings.append(f"the newest turn was cut to {len(cut)} of {len(line)} characters")
        break
    dropped = total - len(lines)
    if dropped:
        warnings.insert(
            0,
            f"{dropped} older turn(s) of {total} did not fit max_tokens={max_tokens} and "
            f"were left out of the briefing (turns 1-{dropped})",
        )
    body = "\n".join(reversed(lines))
    text = (
        head
        + (_omitted(dropped, total) if dropped else "")
        + "\n## Conversation so far\n"
        + (body or "(no earlier turns)")
        + tail
    )
    return Briefing(text, count(text), len(lines), dropped, tuple(warnings))


def _head(transcript: Transcript, max_tokens: int, count: Callable[[str], int]) -> str:
    source = f" on {transcript.backend}" if transcript.backend else ""
    head = (
        f"You are continuing a conversation that began{source} with another agent. Earlier "
        "turns follow in short form (tool calls and results shortened). Continue from them "
        "and answer the open question at the end."
    )
    if transcript.cwd:
        head += f"\nWorking folder: {_fit(redact(transcript.cwd), max_tokens // 8, count)}"
    return head + "\n"


_NO_QUESTION = "(none given: continue the task)"


def _tail(question: str) -> str:
    return f"\n\n## Open question\n{question}\n"


def _omitted(dropped: int, total: int) -> str:
    return f"\n[{dropped} older turn(s) of {total} left out: they did not fit]\n"


def _fit(text: str, limit: int, count: Callable[[str], int], suffix: str = "") -> str:
    """The longest prefix of *text* (whole when it fits) with `count(prefix + suffix) <=
    limit`, by bisection on characters (a counter is monotone in a prefix's length)."""
    if count(text + suffix) <= limit:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if count(text[:mid] + "…" + suffix) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low] + "…" if low else ""


def turns_of(pairs: Sequence[tuple[str, str]]) -> tuple[Turn, ...]:
    """Turns from `(role, text)` pairs, role one of `TurnKind`'s values (a convenience for
    building a transcript by hand)."""
    return tuple(Turn(TurnKind(role), text) for role, text in pairs)
