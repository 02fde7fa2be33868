"""history.jsonl and graphify memory import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentport.cli._deeprefine import main
from agentport.workflows.deeprefine import (
    Layout,
    memory_question,
    pending,
    query_id,
    read_history,
    sync_memory,
)


def test_yaml_escapes_of_graphify_front_matter_give_the_real_question() -> None:  # F04
    text = '---\ntype: "query"\nquestion: "say \\"hi\\"\\L next\\nline \\x41"\n---\n# Q: other\n'
    assert memory_question(text) == 'say "hi"\u2028 next\nline A'
    assert memory_question("no front matter\n# Q: fallback?\n") == "fallback?"
    assert memory_question("---\r\nquestion: 'it''s'\r\n---\r\n") == "it's"


def test_sync_memory_adds_unknown_ids_with_relative_paths(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.memory.mkdir(parents=True)
    for i, q in enumerate(["Why A?", "Why B?", "Why A?"]):
        (layout.memory / f"query_{i}.md").write_text(f'---\nquestion: "{q}"\n---\n', "utf-8")
    added, known, problems = sync_memory(layout)
    assert (added, known, problems) == (2, 2, [])
    rows = read_history(layout.history).rows
    assert [r["id"] for r in rows] == [query_id("Why A?"), query_id("Why B?")]
    assert rows[0]["memory_file"] == "graphify-out/memory/query_0.md"
    assert sync_memory(layout)[0] == 0


def test_one_corrupt_history_line_is_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # F03
    layout = Layout(tmp_path)
    layout.state.mkdir(parents=True)
    good = [{"id": "a" * 16, "query": "q1", "refined": False},
            {"id": "b" * 16, "query": "q2", "refined": True},
            {"id": "a" * 16, "query": "q1", "refined": False},
            {"id": "c" * 16, "query": "q3"}]  # fmt: skip
    lines = [json.dumps(good[0]), "{broken", *map(json.dumps, good[1:])]
    layout.history.write_text("\n".join(lines) + "\n", encoding="utf-8")
    history = read_history(layout.history)
    assert history.problems == [f"{layout.history}:2: not valid JSON (Expecting property name "
                                "enclosed in double quotes); line skipped"]  # fmt: skip
    assert [r["query"] for r in pending(history)] == ["q1", "q3"]
    code = main(["history", "list", "--pending", "--project-root", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.splitlines() == [f"[pending] {'a' * 16}: q1", f"[pending] {'c' * 16}: q3"]
    assert f"{layout.history}:2" in captured.err
