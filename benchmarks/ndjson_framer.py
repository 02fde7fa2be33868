"""NDJSON framer throughput and memory (agentport.transport.LineFramer + parse_line).

1. a 100 MB stream of codex-like event lines (~600 B each), fed in 256 KiB chunks:
   framing alone, and framing + JSON parsing;
2. one 50 MB line (a JSON object with one big string), fed in 256 KiB chunks, then parsed:
   throughput and peak RSS, measured in a fresh process (`ru_maxrss`) against that process's
   own baseline.

Goals: >= 100 MB/s; peak RSS growth <= 3x the line.

    python benchmarks/ndjson_framer.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

from agentport.transport import LineFramer, parse_line

CHUNK = 256 * 1024
MB = 1_000_000


def _stream(total: int) -> tuple[bytes, int]:
    event = {
        "type": "item.completed",
        "item": {"id": "item_7", "type": "agent_message", "text": "lorem ipsum dolor " * 30},
    }
    line = json.dumps(event).encode() + b"\n"
    block = line * (CHUNK // len(line) + 1)
    return block, total // len(block) + 1


def bench_stream(parse: bool) -> float:
    block, repeats = _stream(100 * MB)
    framer = LineFramer()
    lines = 0
    started = time.perf_counter()
    for _ in range(repeats):
        for line in framer.feed(block):
            lines += 1
            if parse:
                parse_line(line)
    elapsed = time.perf_counter() - started
    return len(block) * repeats / MB / elapsed


def bench_big_line(size: int) -> dict[str, float]:
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    head, tail = b'{"type":"big","text":"', b'"}\n'
    filler = b"x" * CHUNK
    framer = LineFramer()
    started = time.perf_counter()
    frames = framer.feed(head)
    sent = len(head)
    while sent < size:
        piece = filler[: min(CHUNK, size - sent)]
        frames += framer.feed(piece)
        sent += len(piece)
    frames += framer.feed(tail)
    assert len(frames) == 1
    frame = parse_line(frames.pop())
    elapsed = time.perf_counter() - started
    assert frame is not None
    assert len(frame.value["text"]) == size - len(head)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "mb_per_s": size / MB / elapsed,
        "line_mb": size / MB,
        "peak_growth_mb": (peak_kb - baseline_kb) * 1024 / MB,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--big-line":
        print(json.dumps(bench_big_line(int(sys.argv[2]))))
        return
    frame_only = max(bench_stream(False) for _ in range(3))
    with_parse = max(bench_stream(True) for _ in range(3))
    print(f"100 MB stream, framing only:     {frame_only:8.0f} MB/s   (goal >= 100)")
    print(f"100 MB stream, framing + JSON:   {with_parse:8.0f} MB/s   (goal >= 100)")
    out = subprocess.run(
        [sys.executable, __file__, "--big-line", str(50 * MB)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    big = json.loads(out.stdout)
    ratio = big["peak_growth_mb"] / big["line_mb"]
    print(f"one 50 MB line, frame + parse:   {big['mb_per_s']:8.0f} MB/s   (goal >= 100)")
    print(
        f"one 50 MB line, peak RSS growth: {big['peak_growth_mb']:8.0f} MB = {ratio:.2f}x the "
        "line   (goal <= 3x)"
    )


if __name__ == "__main__":
    main()
