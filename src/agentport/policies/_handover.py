"""Session handover in a failover chain (opt-in: `FailoverAdapter(handover_on=...)`,
`[llm] handover_on`).

A chain call that resumes a session (`CompletionConfig.session_id`) can only be answered by
the backend that holds it; when that backend fails with a kind in `handover_on` (typically
`quota_exhausted`, `rate_limited`), the next member continues the conversation from a
briefing instead (`core.brief`: the session's turns as this chain saw them, bounded and
redacted, the call's question as the open one) and starts a session of its own. The answer
says so in `warnings` (which backend, why, what the briefing left out), and its
`raw.session_id` is the new session; the old id keeps working through the chain, which
remembers where each session it served lives.

Without `handover_on`, or for a session the chain never served, nothing changes: a member
asked to resume a session it does not hold fails honestly (`session_not_found` /
`unsupported`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core import (
    DEFAULT_BRIEFING_TOKENS,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    Message,
    MessageRole,
    ProviderError,
    Transcript,
    Turn,
    TurnKind,
    brief,
)

__all__ = ["DEFAULT_HANDOVER_ON", "SessionHandover"]

#: the kinds `[llm] handover_on = true`-style callers usually mean: the backend is out of
#: quota, not broken
DEFAULT_HANDOVER_ON = frozenset({ErrorKind.quota_exhausted, ErrorKind.rate_limited})


@dataclass(frozen=True, slots=True)
class _Session:
    owner: str  # the member that holds it
    native: str | None  # its id there (None: the owner keeps no session: history travels)
    transcript: Transcript


class SessionHandover:
    """What a chain remembers of the sessions it served (the newest *keep*), and how a call
    on one is shaped for each member (module docstring)."""

    def __init__(
        self,
        on: frozenset[ErrorKind] = DEFAULT_HANDOVER_ON,
        *,
        max_tokens: int = DEFAULT_BRIEFING_TOKENS,
        keep: int = 256,
    ) -> None:
        brief(Transcript(), max_tokens=max_tokens)  # a bad bound fails at construction
        self.on = on
        self.max_tokens = max_tokens
        self.keep = keep
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def owner(self, config: CompletionConfig) -> str | None:
        """The member that holds the call's session, when the chain served it."""
        known = self._sessions.get(config.session_id or "")
        return None if known is None else known.owner

    def shape(
        self,
        member: str,
        messages: Sequence[Message],
        config: CompletionConfig,
        failed: Sequence[ProviderError],
    ) -> tuple[Sequence[Message], CompletionConfig] | ProviderError:
        """The call as *member* gets it, given the errors of the members tried before it
        (*failed*): the owner resumes its own id; another member after the owner failed with
        a handover kind gets the briefing and no session id; a member before the owner is
        passed over (`unsupported`: the session is not there)."""
        known = self._sessions.get(config.session_id or "")
        if known is None:
            return messages, config
        if member == known.owner and known.native is not None:
            return messages, config.model_copy(update={"session_id": known.native})
        if member == known.owner:  # it keeps no session: the history travels every time
            return self._briefed(known, messages, config)
        if not any(e.backend == known.owner for e in failed):
            return ProviderError(
                ErrorKind.unsupported,
                f"session {config.session_id!r} lives on {known.owner}; passed over",
                backend=member,
                retryable=False,
            )
        if not any(e.backend == known.owner and e.kind in self.on for e in failed):
            return messages, config  # no handover for this failure: resume fails honestly
        return self._briefed(known, messages, config)

    def _briefed(
        self, known: _Session, messages: Sequence[Message], config: CompletionConfig
    ) -> tuple[Sequence[Message], CompletionConfig]:
        briefing = brief(self._open(known, messages), max_tokens=self.max_tokens)
        system = [m for m in messages if m.role is MessageRole.system]
        return [*system, Message.user(briefing.text)], config.model_copy(
            update={"session_id": None}
        )

    def record(
        self, asked: str | None, messages: Sequence[Message], response: CompletionResponse
    ) -> CompletionResponse:
        """Remember the turn the chain just answered, and say in *response*'s warnings when
        it was handed over. Returns the response to give the caller."""
        known = self._sessions.get(asked or "")
        if known is None and response.raw.session_id is None:
            return response  # no session to continue: the caller sends the history
        member = response.backend
        notes: tuple[str, ...] = ()
        if known is not None and member != known.owner:
            briefing = brief(self._open(known, messages), max_tokens=self.max_tokens)
            notes = (
                f"session {asked!r} was handed over from {known.owner} to {member} "
                f"(a briefing of {briefing.kept} turn(s), ~{briefing.tokens} tokens); "
                f"{member}'s session is {response.raw.session_id!r}",
                *briefing.warnings,
            )
        transcript = known.transcript if known is not None else Transcript(backend=member)
        transcript = replace(
            transcript,
            turns=(
                *transcript.turns,
                Turn(TurnKind.user, _user_text(messages)),
                Turn(TurnKind.assistant, response.content),
            ),
            open_question=None,
        )
        session = _Session(member, response.raw.session_id, transcript)
        for key in {asked, response.raw.session_id} - {None}:
            assert key is not None
            self._sessions[key] = session
            self._sessions.move_to_end(key)
        while len(self._sessions) > self.keep:
            self._sessions.popitem(last=False)
        if not notes:
            return response
        return response.model_copy(update={"warnings": (*notes, *response.warnings)})

    @staticmethod
    def _open(known: _Session, messages: Sequence[Message]) -> Transcript:
        return replace(known.transcript, open_question=_user_text(messages))


def _user_text(messages: Sequence[Message]) -> str:
    return "\n\n".join(m.content for m in messages if m.role is MessageRole.user)
