"""Images and text files in a message: the typed parts, `agentport.attach`, what every
backend in the catalog does with them (NATIVE images sent, IGNORED ones warned or failed
under `on_ignored`, never dropped in silence; files inlined everywhere), and the two HTTP
backends' requests to FakeModelServer. The real CLIs: test_images_contract.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from returns.result import Failure, Success
from test_images_contract import png

from agentport import Message, attach, create_llm_adapter
from agentport.catalog import all_backends
from agentport.core import (
    CompletionConfig,
    ErrorKind,
    FilePart,
    ImagePart,
    Param,
    ParamSupport,
    ToolPolicy,
    check_params,
    messages_for,
    prepare_messages,
)
from agentport.testing import FakeModelServer

RED = png((255, 0, 0))
GIF = b"GIF89a" + b"\x01\x00\x01\x00" + b"\x00" * 20
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 20
# a CLI that cannot enforce agentport's default tool policy refuses every call (safety fails
# closed): these checks are about parts, so they accept each CLI's own tool defaults
CLI_DEFAULTS = CompletionConfig(tools=ToolPolicy.cli_defaults())
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20


@pytest.mark.parametrize(
    ("data", "media_type"),
    [(RED, "image/png"), (GIF, "image/gif"), (JPEG, "image/jpeg"), (WEBP, "image/webp")],
)
def test_the_media_type_is_read_from_the_bytes(data: bytes, media_type: str) -> None:
    image = ImagePart.from_bytes(data)
    assert image.media_type == media_type
    assert image.data_url.startswith(f"data:{media_type};base64,")
    with pytest.raises(ValidationError, match="but the bytes are"):
        ImagePart(data=data, media_type="image/bmp" if media_type != "image/bmp" else "x/y")


def test_bytes_that_are_no_image_are_refused() -> None:
    with pytest.raises(ValidationError, match="not a PNG, JPEG, GIF or WebP"):
        ImagePart.from_bytes(b"%PDF-1.7 not an image")


@given(st.binary(max_size=200), st.sampled_from([RED, GIF, JPEG, WEBP]))
def test_a_message_with_parts_round_trips_through_json(tail: bytes, head: bytes) -> None:
    """Temporal payloads, cassettes and MCP arguments carry messages as JSON."""
    message = Message.user("look", ImagePart.from_bytes(head + tail), FilePart.from_text("a", "x"))
    assert Message.model_validate_json(message.model_dump_json()) == message
    assert "base64" not in repr(message.parts[0])  # the bytes stay out of reprs and logs


@given(st.text(max_size=300))
def test_a_file_is_inlined_in_a_fence_it_cannot_close(text: str) -> None:
    (message,) = messages_for(
        _capability("claude"), [Message.user("Summarise", FilePart.from_text("n.md", text))]
    )
    head, _, body = message.content.partition("File n.md:\n")
    assert head == "Summarise\n\n"
    fence = body.split("\n", 1)[0]
    assert set(fence) == {"`"}
    assert len(fence) >= 3
    assert fence not in text  # no run of backticks in the file is as long as the fence
    assert body == f"{fence}\n{text if text.endswith(chr(10)) else text + chr(10)}{fence}"
    assert message.parts == ()  # the file went into the text: nothing left beside it


def _capability(name: str) -> Any:
    return next(c for c in all_backends() if c.name == name)


@pytest.mark.parametrize("capability", all_backends(), ids=lambda c: c.name)
def test_an_image_is_never_dropped_in_silence(capability: Any) -> None:
    """On every backend: NATIVE keeps the image for the backend; IGNORED warns (and removes
    it from what the backend is given) or fails under on_ignored='fail'."""
    messages = [Message.user("What is it?", ImagePart.from_bytes(RED))]
    warn = check_params(capability, messages, CLI_DEFAULTS)
    fail = check_params(
        capability, messages, CLI_DEFAULTS.model_copy(update={"on_ignored": "fail"})
    )
    given_to_backend = messages_for(capability, messages)
    # what every adapter calls: the same check and the same messages, in one Result
    assert prepare_messages(capability, messages, CLI_DEFAULTS) == Success(
        (given_to_backend, warn.unwrap())
    )
    failed = prepare_messages(
        capability, messages, CLI_DEFAULTS.model_copy(update={"on_ignored": "fail"})
    )
    assert isinstance(failed, Failure) is isinstance(fail, Failure)
    if capability.support(Param.images) is ParamSupport.NATIVE:
        assert warn == Success(())
        assert given_to_backend[0].images == messages[0].images
    else:
        assert any("ignores images" in w for w in warn.unwrap())
        assert isinstance(fail, Failure)
        assert fail.failure().kind is ErrorKind.unsupported
        assert "images" in fail.failure().details["params"]
        assert given_to_backend[0].images == ()


@pytest.mark.parametrize("capability", all_backends(), ids=lambda c: c.name)
def test_files_are_translated_on_every_backend(capability: Any) -> None:
    assert capability.support(Param.files) is ParamSupport.TRANSLATED
    messages = [Message.user("Read it", FilePart.from_text("a.txt", "the secret is 42"))]
    strict = CLI_DEFAULTS.model_copy(update={"on_ignored": "fail"})
    assert check_params(capability, messages, strict) == Success(())
    assert "the secret is 42" in messages_for(capability, messages)[0].content


def test_an_image_alone_is_something_to_answer_where_the_backend_takes_images() -> None:
    alone = [Message.user("", ImagePart.from_bytes(RED))]
    assert check_params(_capability("claude"), alone, CompletionConfig()) == Success(())
    # where images are IGNORED nothing would be left to send: refused, not an empty prompt
    dropped = check_params(_capability("echo"), alone, CompletionConfig())
    assert dropped.failure().kind is ErrorKind.invalid_request
    with_file = [Message.user("", FilePart.from_text("a.txt", "x"))]
    assert check_params(_capability("echo"), with_file, CompletionConfig()) == Success(())
    empty = check_params(_capability("claude"), [Message.user("  ")], CompletionConfig())
    assert empty.failure().kind is ErrorKind.invalid_request


def test_attach_reads_images_and_text_and_names_the_file_it_refuses(tmp_path: Path) -> None:
    (tmp_path / "red.png").write_bytes(RED)
    (tmp_path / "notes.md").write_text("# Notes\nsee `x`\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\x00\xff\xfe binary")
    image = attach(tmp_path / "red.png")
    assert isinstance(image, ImagePart)
    assert (image.name, image.data) == ("red.png", RED)
    text = attach(str(tmp_path / "notes.md"))
    assert isinstance(text, FilePart)
    assert text.text.startswith("# Notes")
    for bad, said in (("blob.bin", "neither a PNG"), ("missing.png", "cannot read")):
        with pytest.raises(ValueError, match=said) as caught:
            attach(tmp_path / bad)
        assert str(tmp_path / bad) in str(caught.value)
        assert "\n" not in str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["openai_compat", "litellm"])
async def test_http_backends_send_the_image_as_a_data_url(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "litellm":
        pytest.importorskip("litellm", exc_type=ImportError)
    monkeypatch.setenv("AGENTPORT_ALLOW_REAL_BACKENDS", "1")
    with FakeModelServer(default="a red square") as server:
        if name == "litellm":
            options = {"api_base": server.openai_base_url, "api_key": "k", "model": "openai/m"}
            llm = create_llm_adapter(name, cwd=tmp_path, retry=False, litellm=options)
        else:
            options = {"base_url": server.openai_base_url, "api_key": "k"}
            llm = create_llm_adapter(name, cwd=tmp_path, model="m", retry=False, **{name: options})
        message = Message.user("Which colour?", ImagePart.from_bytes(RED))
        result = await llm.complete([message])
        assert result.unwrap().content == "a red square"
        (request,) = server.model_requests
    assert request.images == (("image/png", RED),)
    assert request.user_text == "Which colour?"
    (user,) = [m for m in request.body["messages"] if m["role"] == "user"]
    assert [p["type"] for p in user["content"]] == ["text", "image_url"]


@pytest.mark.anyio
async def test_the_echo_backend_warns_and_answers_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = create_llm_adapter("echo", retry=False)
    result = await llm.complete([Message.user("hello", ImagePart.from_bytes(RED))])
    response = result.unwrap()
    assert "hello" in response.content
    assert any("ignores images" in w for w in response.warnings)
    refused = await llm.complete(
        [Message.user("hello", ImagePart.from_bytes(RED))], CompletionConfig(on_ignored="fail")
    )
    assert refused.failure().kind is ErrorKind.unsupported


def test_at_prompt_escape_blanks_in_the_run_folder(tmp_path: Path) -> None:
    """gemini and qwen end an `@path` at a blank: a run folder under a home with a space
    (checked against gemini 0.61: unescaped, the image never reached the request)."""
    from agentport.backends._spec import CliCall, at_prompt

    run_dir = tmp_path / "my runs"
    run_dir.mkdir()
    call = CliCall(
        executable="gemini", prompt="Which colour?", system_prompt=None,
        config=CompletionConfig(), schema=None, options={}, run_dir=run_dir, cwd=run_dir,
        images=(ImagePart.from_bytes(RED),),
    )  # fmt: skip
    prompt, flags = at_prompt(call)
    image = run_dir / "images" / "image-1.png"
    assert image.read_bytes() == RED
    assert prompt == "Which colour?\n\n@" + str(image).replace(" ", "\\ ")
    assert flags == [f"--include-directories={image.parent}"]
    assert at_prompt(
        CliCall("gemini", "plain", None, CompletionConfig(), None, {}, run_dir, run_dir)
    ) == ("plain", [])


def test_parts_travel_through_a_temporal_activity_input() -> None:
    """A workflow's `complete` activity gets messages as JSON data: the parts must survive
    it (they were dropped: `Message.to_dict` is text only)."""
    data_module = pytest.importorskip("agentport.temporal._data", exc_type=ImportError)
    message = Message.user("Which colour?", ImagePart.from_bytes(RED), FilePart.from_text("a", "b"))
    (data,) = json.loads(json.dumps(data_module.messages_to_dicts([message])))
    assert Message.model_validate(data) == message
    assert data_module.messages_to_dicts([Message.user("x")]) == [{"role": "user", "content": "x"}]


def test_every_at_sign_is_escaped_for_the_gemini_family_under_restricted_tools(
    tmp_path: Path,
) -> None:
    from agentport.backends._spec import CliCall, at_prompt

    text = "see @a.txt, mail x@b.c, keep \\@d"
    restricted = CliCall("gemini", text, None, CompletionConfig(), None, {}, tmp_path, tmp_path)
    assert at_prompt(restricted) == ("see \\@a.txt, mail x\\@b.c, keep \\@d", [])
    own = CompletionConfig(tools=ToolPolicy.cli_defaults())
    assert at_prompt(CliCall("gemini", text, None, own, None, {}, tmp_path, tmp_path)) == (
        text,
        [],
    )
