"""The pure NDJSON framer: no line is lost, split or merged whatever the chunk seams."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentport.transport import LineFramer, LineTooLongError, parse_line

_LINE = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def _frame_all(chunks: list[bytes], limit: int = 1 << 20) -> list[bytes]:
    framer = LineFramer(limit)
    out: list[bytes] = []
    for chunk in chunks:
        out += [bytes(x) for x in framer.feed(chunk)]
    out += [bytes(x) for x in framer.close()]
    return out


@given(st.lists(_LINE, max_size=30), st.lists(st.integers(min_value=0), max_size=40))
def test_lines_survive_arbitrary_chunk_seams(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    assert _frame_all(_chunked(data, cuts)) == lines


@given(st.lists(_LINE, min_size=1, max_size=10), st.lists(st.integers(min_value=0), max_size=20))
def test_truncated_last_line_is_returned_at_close(lines: list[bytes], cuts: list[int]) -> None:
    # the last line has no newline (the CLI was killed mid-write)
    data = b"\n".join(lines)
    expected = list(lines) if lines[-1] else lines[:-1]
    assert _frame_all(_chunked(data, cuts)) == expected


@given(st.lists(_LINE, max_size=10), st.lists(st.integers(min_value=0), max_size=20))
def test_crlf_line_endings_are_stripped(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\r\n" for line in lines)
    assert _frame_all(_chunked(data, cuts)) == lines


@given(st.integers(min_value=1, max_value=64), st.lists(st.integers(min_value=0), max_size=10))
def test_oversized_line_raises_typed_error_at_any_seam(limit: int, cuts: list[int]) -> None:
    data = b"x" * (limit + 1) + b"\n"
    with pytest.raises(LineTooLongError) as info:
        _frame_all(_chunked(data, cuts), limit)
    assert info.value.limit == limit


def test_line_of_exactly_the_limit_is_accepted() -> None:
    assert _frame_all([b"y" * 10 + b"\n"], 10) == [b"y" * 10]


def test_json_split_at_every_byte_still_parses() -> None:
    event = {"type": "item.completed", "item": {"text": "é \\n {} [ ]"}}
    data = json.dumps(event).encode() + b"\n"
    framer = LineFramer()
    lines = [x for i in range(len(data)) for x in framer.feed(data[i : i + 1])]
    assert len(lines) == 1
    frame = parse_line(lines[0])
    assert frame is not None
    assert frame.is_json
    assert frame.value == event


def test_non_json_lines_are_kept_as_noise_not_parsed() -> None:
    frame = parse_line(b"Reading additional input from stdin...")
    assert frame is not None
    assert not frame.is_json
    assert frame.text == "Reading additional input from stdin..."
    broken = parse_line(b'{"type": "turn.comp')  # truncated JSON is noise, not an error
    assert broken is not None
    assert not broken.is_json


def test_blank_lines_are_skipped() -> None:
    assert parse_line(b"   ") is None


def test_parse_line_releases_a_bytearray_it_was_given() -> None:
    line = bytearray(b'{"a": 1}')
    frame = parse_line(line)
    assert frame is not None
    assert frame.value == {"a": 1}
    assert len(line) == 0
