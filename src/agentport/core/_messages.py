"""The unified message format every backend accepts."""

from __future__ import annotations

import enum
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["Message", "MessageRole", "as_messages", "split_system"]


class MessageRole(enum.StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"


class Message(BaseModel):
    """One chat message: `role` and text `content`. Immutable."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: MessageRole
    content: str

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role=MessageRole.system, content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role=MessageRole.user, content=content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls(role=MessageRole.assistant, content=content)

    def to_dict(self) -> dict[str, str]:
        """OpenAI-style `{"role", "content"}`."""
        return {"role": self.role.value, "content": self.content}


def as_messages(prompt: str | Sequence[Message]) -> list[Message]:
    """A bare string becomes one user message; a sequence is copied."""
    if isinstance(prompt, str):
        return [Message.user(prompt)]
    return list(prompt)


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """Join all system messages (blank-line separated) and return the rest in order."""
    system = [m.content for m in messages if m.role is MessageRole.system]
    rest = [m for m in messages if m.role is not MessageRole.system]
    return ("\n\n".join(system) if system else None), rest
