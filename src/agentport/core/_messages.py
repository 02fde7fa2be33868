"""The unified message format every backend accepts."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._parts import FilePart, ImagePart, fenced, utf8_text

__all__ = ["Message", "MessageRole", "Part", "as_messages", "inline_files", "split_system"]

Part = Annotated[ImagePart | FilePart, Field(discriminator="kind")]
"""An attachment of a message: `ImagePart` or `FilePart` (`agentport.core._parts`)."""


class MessageRole(enum.StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"


class Message(BaseModel):
    """One chat message: `role`, text `content`, and `parts` (images and text files attached
    to it; `agentport.core._parts` says what each backend does with them). Immutable. A
    surrogate code point in `content` is made UTF-8-safe at construction (`utf8_text`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: MessageRole
    content: str
    parts: tuple[Part, ...] = ()

    @field_validator("content")
    @classmethod
    def _utf8(cls, value: str) -> str:  # surrogates: see `utf8_text`
        return utf8_text(value)

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role=MessageRole.system, content=content)

    @classmethod
    def user(cls, content: str, *parts: ImagePart | FilePart) -> Message:
        """A user message; *parts* are attachments: `Message.user("What is in it?",
        agentport.attach("photo.png"))`."""
        return cls(role=MessageRole.user, content=content, parts=parts)

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls(role=MessageRole.assistant, content=content)

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ImagePart))

    @property
    def files(self) -> tuple[FilePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, FilePart))

    def to_dict(self) -> dict[str, str]:
        """OpenAI-style `{"role", "content"}` (text only: parts are each backend's matter)."""
        return {"role": self.role.value, "content": self.content}


def as_messages(prompt: str | Sequence[Message]) -> list[Message]:
    """A bare string becomes one user message; a sequence is copied."""
    if isinstance(prompt, str):
        return [Message.user(prompt)]
    return list(prompt)


def inline_files(messages: Sequence[Message], *, drop_images: bool = False) -> list[Message]:
    """*messages* with every text file inlined into its message's text (files are
    TRANSLATED on every backend: a `File <name>:` fence after the text), and with images
    removed when *drop_images* (a backend that IGNOREs them, after `check_params` warned).
    Messages without parts are returned as they are."""
    out: list[Message] = []
    for m in messages:
        if not m.parts:
            out.append(m)
            continue
        files = [fenced(p) for p in m.files]
        text = "\n\n".join([m.content, *files]) if m.content else "\n\n".join(files)
        kept = () if drop_images else m.images
        out.append(m.model_copy(update={"content": text, "parts": kept}))
    return out


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """Join all system messages (blank-line separated) and return the rest in order."""
    system = [m.content for m in messages if m.role is MessageRole.system]
    rest = [m for m in messages if m.role is not MessageRole.system]
    return ("\n\n".join(system) if system else None), rest
