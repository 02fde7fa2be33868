"""Content parts beside a message's text: images and text files (pure, no I/O).

A `Message` carries its text in `content` and any attachments in `parts`. What a backend does
with them is in the catalog (`Param.images`, `Param.files`):

- images travel as bytes with their media type. NATIVE where the backend hands them to the
  model (an Anthropic `image` block, an OpenAI `image_url` data URL, codex `--image`);
  IGNORED elsewhere, under the call's `on_ignored` policy (a warning, or `unsupported`),
  never dropped without one;
- text files are TRANSLATED on every backend: inlined into the message's text in a fence
  named after the file (`inline_files`). Binary files other than images are refused at
  construction: no backend here takes them.

Reading a file from disk is `agentport.attach(path)` (the factory layer); here only bytes.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

__all__ = [
    "IMAGE_TYPES",
    "MAX_PART_BYTES",
    "FilePart",
    "ImagePart",
    "fenced",
    "sniff_image",
    "utf8_text",
]

# What Anthropic, OpenAI and Gemini all take (their vision docs), by magic bytes.
IMAGE_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_PART_BYTES = 20 * 1024 * 1024  # the smallest request limit of the providers above


def sniff_image(data: bytes) -> str | None:
    """The media type of *data* from its magic bytes (one of `IMAGE_TYPES`), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class ImagePart(BaseModel):
    """An image: `data` (bytes; base64 in JSON), `media_type` (one of `IMAGE_TYPES`, checked
    against the bytes), `name` (for messages and file names; optional).

    Raises `ValueError` (pydantic's `ValidationError`) when the bytes are not a PNG, JPEG,
    GIF or WebP image, disagree with `media_type`, or pass `MAX_PART_BYTES`."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: Literal["image"] = "image"
    data: bytes = Field(repr=False)
    media_type: str = ""
    name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        data = values.get("data", b"")
        if isinstance(data, str):  # JSON: base64
            data = base64.b64decode(data, validate=True)
        if not isinstance(data, bytes | bytearray):
            raise ValueError("image data must be bytes")
        if len(data) > MAX_PART_BYTES:
            raise ValueError(f"image is {len(data)} bytes; at most {MAX_PART_BYTES} are sent")
        found = sniff_image(bytes(data))
        if found is None:
            raise ValueError("not a PNG, JPEG, GIF or WebP image (by its first bytes)")
        said = str(values.get("media_type") or "").lower()
        if said and said != found:
            raise ValueError(f"media_type {said!r} but the bytes are {found}")
        return {**values, "data": bytes(data), "media_type": found}

    @field_serializer("data", when_used="json")
    def _encoded(self, data: bytes) -> str:
        return self.base64

    @classmethod
    def from_bytes(cls, data: bytes, name: str | None = None) -> ImagePart:
        """An image from its bytes (the media type read from them)."""
        return cls(data=data, name=name)

    @property
    def base64(self) -> str:
        """The bytes as base64 text (what every wire format carries)."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """`data:<media type>;base64,<data>` (OpenAI `image_url`, codex)."""
        return f"data:{self.media_type};base64,{self.base64}"

    @property
    def suffix(self) -> str:
        """The file suffix of its type: `.png`, `.jpg`, `.gif`, `.webp`."""
        return {"image/jpeg": ".jpg"}.get(self.media_type, "." + self.media_type.split("/")[1])


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> str:
    """*text* as UTF-8 can carry it: a surrogate pair written as two code points becomes the
    one character it stands for, and a lone surrogate (U+D800-U+DFFF: half of a character,
    e.g. from `json.loads` of a cut `"\\ud83d"` escape) becomes U+FFFD, as a UTF-8 decoder
    replaces invalid input. Every backend sends UTF-8 (a CLI's stdin and argv, an HTTP JSON
    body), where a surrogate raised `UnicodeEncodeError` out of `complete()`."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class FilePart(BaseModel):
    """A text file: `name` (shown to the model) and `text`. Inlined into the message text on
    every backend (`fenced`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: Literal["file"] = "file"
    name: str
    text: str

    @field_validator("name", "text")
    @classmethod
    def _bounded(cls, value: str) -> str:
        value = utf8_text(value)
        if len(value.encode("utf-8")) > MAX_PART_BYTES:
            raise ValueError(f"file text passes {MAX_PART_BYTES} bytes")
        return value

    @classmethod
    def from_text(cls, name: str, text: str) -> FilePart:
        return cls(name=name, text=text)


def fenced(part: FilePart) -> str:
    """*part* as the model reads it: its name, then its text in a code fence longer than
    any run of backticks inside it (so the file cannot close the fence)."""
    longest, run = 0, 0
    for ch in part.text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = part.text if part.text.endswith("\n") else part.text + "\n"
    return f"File {part.name}:\n{fence}\n{body}{fence}"
