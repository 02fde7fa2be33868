"""Images reach the model, checked against the REAL CLIs.

For every agent CLI whose catalog entry declares `images` NATIVE, one call with a PNG runs
the real binary (configured as its own docs tell a user: a custom endpoint and key) against
FakeModelServer, and the recorded model request must carry exactly those bytes with their
media type, in whatever form the wire takes (an Anthropic base64 block, a Responses
`input_image`, a Chat Completions `image_url`, Gemini `inlineData`). A second call in the
same home without an image must carry none (nothing of the first run leaks into the next).
Loopback only: run under `unshare -n` (scripts/test.sh).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from _more_clis_util import (
    MARKER_ENV,
    cli_executable,
    network_isolated,
    new_marker,
    wait_no_live_processes,
)
from agentport import create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    BackendKind,
    CompletionConfig,
    ImagePart,
    Message,
    Param,
    ParamSupport,
)
from agentport.testing import ALLOW_ENV, FakeModelServer, RecordedRequest

pytestmark = [
    pytest.mark.contract,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not network_isolated(), reason="run under `unshare -n` (loopback only) to reach no host"
    ),
]

REAL_CLIS = ("claude", "codex", "gemini", "qwen", "opencode", "pi", "copilot")
# qwen 0.24 re-encodes an image as JPEG (with an "Image overview: 2x2" line) before sending it
RE_ENCODES = frozenset({"qwen"})
PROMPT = "Which colour is this picture"


def png(rgb: tuple[int, int, int]) -> bytes:
    """A real 2x2 RGB PNG of one colour (distinct bytes per colour)."""
    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(default="a red square") as srv:
        yield srv


def test_the_cli_list_is_every_native_cli() -> None:
    native = {
        c.name
        for c in all_backends()
        if c.kind is BackendKind.cli and c.support(Param.images) is ParamSupport.NATIVE
    }
    assert native == set(REAL_CLIS)


def _options(name: str, server: FakeModelServer, home: Path) -> dict[str, Any]:
    if name == "claude":
        return {"base_url": server.anthropic_base_url, "api_key": "test-key", "max_retries": 0}
    if name == "gemini":
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        return {"base_url": server.gemini_base_url, "api_key": "test-key"}
    options: dict[str, Any] = {"base_url": server.openai_base_url, "api_key": "test-key"}
    if name == "codex":
        options |= {"request_max_retries": 0, "stream_max_retries": 0}
    if name == "qwen":
        options["max_retries"] = 0
    return options


async def _call(
    name: str, server: FakeModelServer, home: Path, mp: pytest.MonkeyPatch, message: Message
) -> RecordedRequest:
    exe = cli_executable(name)
    if exe is None:
        pytest.skip(f"{name} not installed (run .ci/steps/20-agent-clis and 21-more-agent-clis)")
    mp.setenv(ALLOW_ENV, "1")
    marker = new_marker()
    options = _options(name, server, home) | {
        "executable": str(exe),
        "env": {"HOME": str(home), MARKER_ENV: marker},
        "grace_s": 1.0,
    }
    adapter = create_llm_adapter(name, retry=False, model="fake-model", **{name: options})
    before = len(server.model_requests)
    result = await adapter.complete(
        [message],
        CompletionConfig(
            model="fake-model", startup_timeout_s=60, idle_timeout_s=30, total_timeout_s=90
        ),
    )
    assert wait_no_live_processes(marker) == [], "processes of the run outlived it"
    assert isinstance(result, Success), result
    assert result.unwrap().content == "a red square"
    assert not any("images" in w for w in result.unwrap().warnings)
    turns = [r for r in server.model_requests[before:] if PROMPT in r.user_text]
    assert turns, "the CLI never sent the prompt to the fake server"
    return turns[-1]


@pytest.mark.parametrize("name", REAL_CLIS)
async def test_the_image_reaches_the_model_request(
    name: str, server: FakeModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    red = png((255, 0, 0))
    image = ImagePart.from_bytes(red, name="red.png")
    asked = await _call(name, server, home, monkeypatch, Message.user(PROMPT + "?", image))
    if name in RE_ENCODES and ("image/png", red) not in asked.images:
        assert [m for m, _ in asked.images] == ["image/jpeg"]
    else:
        assert ("image/png", red) in asked.images, [m for m, _ in asked.images]
    # the next call in the same home carries no image: nothing of the first run is reused
    plain = await _call(name, server, home, monkeypatch, Message.user(PROMPT + " now?"))
    assert plain.images == ()
